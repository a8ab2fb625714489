"""When the index cannot be read (episodes.md, "Degraded memory"; seed 003 MS1-R3-S2): the prompt is
still made, from the files alone, with the built-in default rules in Layer 3 and
`memoryDegraded: true`, so the skill still runs. No cards, memories, episodes or history: they come
from the index. The skill itself is read from its file."""

from __future__ import annotations

import time
from typing import Any

from ...files.parse import parse_skill
from ...files.reader import Unreadable, read_regular
from ...files.records import Skill
from ...kernel import errors
from ...kernel.errors import MembankError
from ...kernel.paths import document_path
from ..contract import Bank
from ..recall.rank import Reason
from ..skills import read as skills
from ..story.manuscript import read_document
from . import session
from .layers import Piece
from .passage import take

from .assemble import Finish, passage_pieces, finish

MEMORY_DEGRADED = skills.MEMORY_DEGRADED


def skill_from_files(bank: Bank, skill_id: str) -> dict[str, Any]:
    """The skill as its file says (project over global), without the index; NOT_FOUND when none has it."""
    for root in bank.roots:
        folder = root.path / "skills"
        try:
            names = sorted(n for n in folder.iterdir() if n.suffix == ".md")
        except OSError:
            continue
        for path in names:
            rel = f"skills/{path.name}"
            try:
                data, _ = read_regular(path, 1024 * 1024, follow_links=False)
            except (OSError, Unreadable):
                continue
            parsed = parse_skill(data, root.source(rel), rel)
            if isinstance(parsed.record, Skill) and parsed.record.id == skill_id:
                return parsed.record.to_api()
    raise MembankError(errors.NOT_FOUND, f"no skill with id `{skill_id}` (the index cannot be read; the skill files "
                       "were searched)", {"id": skill_id})


def assemble(bank: Bank, req: Any, why: str) -> dict[str, Any]:
    """The prompt from the files alone: identity, the skill, the project, the default rules, the passage."""
    started = time.perf_counter()
    skill = skill_from_files(bank, req.skill_id)
    rules = skills.effective_rules(skill, bank.settings_files.context()["maxTokens"])
    document = document_path(req.document_id) if req.document_id is not None else None
    text = req.document_text if req.document_text is not None else (
        read_document(bank.root, document) if document is not None else None)
    passage = take(text, req.start, req.end, req.selected, req.instruction or "", rules["surrounding"])
    identity, identity_source = skills.identity(bank)
    pieces = [Piece(0, "", "identity", identity, None, identity_source, reason="standing rules"),
              Piece(1, "", "skill", skill["content"], skill["id"], skill["source"], reason="the skill"),
              Piece(2, "project", "project", f"Title: {bank.info.name}", bank.info.id, ".writenow/project.yaml",
                    reason="the project")]
    pieces += [Piece(3, "preferences", "default-rule", f"- {rule}", None, skills.DEFAULT_RULES_SOURCE,
                     reason="built-in default") for rule in skills.DEFAULT_RULES]
    pieces += passage_pieces(passage, document)
    held, problems, unfit = session.pieces(bank, req.session_id, rules["working"]) \
        if bank.settings_files.memory()["injectionEnabled"] else ([], [], [])  # in this process: needs no index
    pieces += held
    reasons = [Reason(MEMORY_DEGRADED, f"the index could not be read ({why}): built-in default rules instead of "
                      "memories, cards and episodes; run `membank index --rebuild`")] + problems
    return finish(bank, req, skill, rules, pieces, reasons,
                  Finish({"progressions": 0, "relations": 0, "memories": 0}, [], [], passage, document, started,
                         memory_degraded=True, unfit=unfit))
