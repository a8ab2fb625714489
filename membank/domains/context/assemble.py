"""`context:assemble` (context.md): the prompt for a skill, here, now — a byte-stable systemPrompt
(Layers 0-3) and a userContent (Layers 4-5), every piece cited, nothing from later in the story."""

from __future__ import annotations

import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from ...files.frontmatter import MAX_FILE_BYTES
from ...files.reader import Unreadable, read_regular
from ...files.write import new_id
from ...kernel import callmemo, cancel
from ...kernel.limits import MAX_LISTED
from ...kernel.payload import MAX_QUERY_CHARS
from ...kernel.paths import document_path
from ...kernel.text import estimate_tokens
from ..contract import Bank
from ..episodes import flows as episodes
from ..episodes.episode import prompt_line
from ..lifecycle import history
from ..recall.queries import hiding
from ..recall.rank import INJECTION_DISABLED, Reason
from ..skills import read as skills
from ..story import positions
from ..story.cards import Catalog, catalog as story_catalog
from ..story.manuscript import read_document
from ..story.order import StoryOrder
from . import budget, cardtext, memories, narrative, session, trace
from . import manuscript as from_manuscript
from . import meaning
from .activation import activate
from .budget import Dropped
from .layers import Piece, clean, serialise
from .passage import Passage, take

STORY_POSITION_UNKNOWN = "STORY_POSITION_UNKNOWN"
OVER_BUDGET = "OVER_BUDGET"
KEY_SKIPPED = "KEY_SKIPPED"
SELECTION_NOT_FOUND = "SELECTION_NOT_FOUND"
SECTION_RULE = {"characters": "characters", "world": "project-settings"}
LATE = "over the retrieved layer's room: found after it was full"


@dataclass(frozen=True)
class Request:
    skill_id: str
    document_id: str | None = None
    document_text: str | None = None
    start: int | None = None
    end: int | None = None
    selected: str | None = None
    instruction: str | None = None
    query_text: str | None = None
    run_id: str | None = None
    scene_type: str | None = None
    session_id: str | None = None


def _memory_text(memory: dict[str, Any]) -> str:
    body = memory["content"].replace("\n", "\n  ")
    return f"- [{memory['type']}] {body}\n  ({memory['source']})"


def _preference_text(memory: dict[str, Any]) -> str:
    body = memory["content"].replace("\n", "\n  ")
    return f"- {body}\n  ({memory['source']})"


def _memory_piece(layer: int, section: str, found: memories.Found, text: str) -> Piece:
    m = found.memory
    return Piece(layer, section, "preference" if m["type"] == "preference" else "memory", text, m["id"],
                 m["source"], None, found.reason, found.score)


def _preferences(bank: Bank, timed: set[int], cap: int | None) -> tuple[list[Piece], list[dict[str, Any]]]:
    """Layer 3 under its cap, and what the cap left out (as the API lists it): made once per view of
    the index, as a bank may hold hundreds of preferences; Layer 3 gives way to nothing else."""
    memo = bank.index.view_memo("context.preferences.layer")
    key = (frozenset(timed), cap)
    made = memo.get(key) if memo is not None else None
    if made is None:
        pieces = [_memory_piece(3, "preferences", f, _preference_text(f.memory))
                  for f in memories.preferences(bank, timed)]
        kept, dropped = budget.capped(pieces, "preferences", cap)
        made = (kept, [d.to_api() for d in dropped])
        if memo is not None:
            if len(memo) >= 8:
                memo.clear()  # a session moves through a few story positions and caps, not many
            memo[key] = made
    return list(made[0]), made[1]  # the entries shared: `_dropped` copies the few it lists


def passage_pieces(p: Passage, source: str | None) -> list[Piece]:
    return [Piece(5, "instruction", "instruction", p.instruction, reason="the instruction"),
            Piece(5, "before", "before", p.before.text, source=source, reason={"cut": p.before.cut}),
            Piece(5, "selection", "selection", p.selection, source=source, reason="the selection"),
            Piece(5, "after", "after", p.after.text, source=source, reason={"cut": p.after.cut})]


def _standing_cards(cards: Catalog, allowed: set[str]) -> list[Piece]:
    """Layer 2's always-on cards of the sections the rules allow: by kind, then name."""
    chosen = [cards.cards[i] for i in cards.always if cards.cards[i].get("section") in allowed]
    return [Piece(2, c["section"], "card", cardtext.standing(c), c["id"], c["source"],
                  (c.get("lines") or {}).get("name"), {"include": "always"}) for c in chosen]


def _card_at(cards: Catalog, card_id: str, order: StoryOrder, position: str | None) -> tuple[str, int, int, int]:
    """`cardtext.at_position` for Layer 4 (its text clean, then its tokens last), made once per card,
    position and generation of the cards."""
    at: dict[str, tuple[str, int, int, int]] = cards.memo("context.cards", order, position)
    made = at.get(card_id)
    if made is None:
        card = cards.cards[card_id]
        body, hid_p, hid_r = cardtext.at_position(card, cards.relations.get(card_id, ()), order, position,
                                                  whole=card.get("include") != "always")
        body = clean(body)
        made = at[card_id] = (body, hid_p, hid_r, estimate_tokens(body))
    return made


def _late_entries(cards: Catalog) -> dict[str, dict[str, Any]]:
    """Each card's entry in `dropped` when it is found after Layer 4 is full (as `Dropped.to_api`), made
    once per generation of the cards: a prompt lists hundreds, each copied in C rather than built."""
    memo = cards.memo("context.late")
    table = memo.get("entries")
    if table is None:  # assigned whole: another thread never sees it half made
        table = memo["entries"] = {i: {"layer": 4, "kind": "card" if c.get("include") != "always" else "state",
                                       "id": i, "source": c["source"],
                                       "tokens": cards.tokens[i], "reason": LATE} for i, c in cards.cards.items()}
    return table  # type: ignore[no-any-return]


def _query(req: Request, passage: Passage) -> str:
    """The query recall looks for: the app's, else the instruction and the selection, cut to what a query
    needs (kernel/payload.py MAX_QUERY_CHARS: a selection of a whole chapter must not cost seconds)."""
    return req.query_text if req.query_text is not None else \
        "\n".join(filter(None, (passage.instruction, passage.selection)))[:MAX_QUERY_CHARS]


TEXTS_KEPT = 2048  # Layer 4 texts of memories a view of the index keeps


def _retrieved_piece(section: str, found: memories.Found, kept: dict[int, tuple[str, int]]) -> Piece:
    """Layer 4's piece of a memory, its clean text and tokens made once per view of the index: a
    session's prompts keep finding the same memories, and mostly drop them over the layer's cap."""
    made = kept.get(found.rowid)
    if made is None:
        text = clean(_memory_text(found.memory))
        made = (text, estimate_tokens(text))
        if len(kept) >= TEXTS_KEPT:
            kept.clear()
        kept[found.rowid] = made
    m = found.memory
    return Piece.cleaned(4, section, "preference" if m["type"] == "preference" else "memory", made[0], made[1],
                         m["id"], m["source"], None, found.reason, found.score)


def _memory_pieces(bank: Bank, req: Request, passage: Passage, rules: dict[str, Any], document: str | None,
                   hidden: set[int], timed: set[int], reasons: list[Reason]) -> list[Piece]:
    """Layer 4's memories: the `memories` most relevant ones, then this document's own."""
    chosen, problems = memories.relevant(bank, _query(req, passage), rules["memories"], document, hidden)
    reasons += problems
    kept = bank.index.view_memo("context.memory_texts")
    kept = {} if kept is None else kept
    return [_retrieved_piece("memories", f, kept) for f in chosen] + \
        _document_pieces(bank, document, hidden, timed, rules["preferences"], rules["memories"] > 0, kept)


def _document_pieces(bank: Bank, document: str | None, hidden: set[int], timed: set[int], preferences: bool,
                     others: bool, kept: dict[int, tuple[str, int]]) -> list[Piece]:
    """Layer 4's pieces of `memories.document_memories`, made once per view of the index and the same
    arguments: they carry no score, so every prompt for the document makes the same ones (a chapter holds
    dozens, and the budget mostly drops them). A piece is frozen: the prompts share it."""
    memo = bank.index.view_memo("context.document_pieces")
    key = (document, frozenset(hidden), frozenset(timed), preferences, others)
    made = memo.get(key) if memo is not None else None
    if made is None:
        made = [_retrieved_piece("document", f, kept)
                for f in memories.document_memories(bank, document, hidden, timed, preferences, others)]
        if memo is not None:
            if len(memo) >= 8:
                memo.clear()  # a session asks for a few documents and story positions
            memo[key] = made
    return list(made)


def _episode_pieces(bank: Bank, req: Request, passage: Passage, k: int) -> list[Piece]:
    """Layer 4's episodes: the `k` past runs most like this one, each citing its journal line. Listed in
    the run, they count as recalled when the journal is next indexed."""
    scene = req.scene_type.strip().lower() or None if req.scene_type is not None else None
    chosen, _ = episodes.best(bank, scene, _query(req, passage), k)
    return [Piece(4, "episodes", "episode", prompt_line(state), state["id"], state["source"], None,
                  ranked.reason(scene), ranked.score) for state, ranked in chosen]


HISTORY_SECTIONS = 3  # the latest compact sections a prompt gets (this document's, when it has any)


def _history_pieces(bank: Bank, document: str | None) -> list[Piece]:
    """Layer 4's history: the latest sections of `history/YYYY-MM.md`, each citing its heading's line."""
    root = bank.project

    def read(path: Path) -> str | None:
        try:
            data, _ = read_regular(path, MAX_FILE_BYTES, follow_links=False)
            return data.decode("utf-8")
        except (OSError, Unreadable, UnicodeDecodeError):
            return None

    found = history.latest(root.file(history.FOLDER), root.source, document, HISTORY_SECTIONS, read)
    return [Piece(4, "history", "history", s.text, None, s.source, s.line, {"document": s.document, "week": s.week})
            for s in found]


def _usable(bank: Bank, skill_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """`skills.usable`, kept for this view of the index and the settings' `maxTokens` (a session runs a
    few skills; each look-up reads and decodes the skill's row). Read only: shared by the prompts."""
    memo = bank.index.view_memo("context.skills")
    key = (skill_id, bank.settings_files.context()["maxTokens"])
    made = memo.get(key) if memo is not None else None
    if made is None:
        made = skills.usable(bank, skill_id)  # a skill that cannot be used raises: never kept
        if memo is not None and key[1] == bank.settings_files.context()["maxTokens"]:  # settings unmoved meanwhile
            if len(memo) >= 16:
                memo.clear()
            memo[key] = made
    return made  # type: ignore[no-any-return]


def assemble(bank: Bank, req: Request) -> dict[str, Any]:
    """The prompt; the settings and the story order looked at once for it (kernel/callmemo.py)."""
    with callmemo.remembering():
        return _assemble(bank, req, time.perf_counter())


def _assemble(bank: Bank, req: Request, started: float) -> dict[str, Any]:
    skill, rules = _usable(bank, req.skill_id)
    ctx = bank.settings_files.context()
    injection = bank.settings_files.memory()["injectionEnabled"]
    document = document_path(req.document_id) if req.document_id is not None else None
    reasons: list[Reason] = []
    hidden = {"progressions": 0, "relations": 0, "memories": 0}
    late: list[dict[str, Any]] = []  # cards found after Layer 4 was already full: listed, never rendered
    unfit: list[dict[str, Any]] = []  # the session's entries over `working: N`: listed, never rendered
    capped: list[dict[str, Any]] = []  # preferences over Layer 3's cap

    identity, identity_source = skills.identity(bank)
    pieces = [Piece(0, "", "identity", identity, None, identity_source, reason="standing rules"),
              Piece(1, "", "skill", skill["content"], skill["id"], skill["source"], reason="the skill")]

    text = req.document_text if req.document_text is not None else (
        read_document(bank.root, document) if document is not None else None)
    passage = take(text, req.start, req.end, req.selected, req.instruction or "", rules["surrounding"])
    doc_source = document if document is not None else None
    if text is not None and req.start is None and req.selected and not passage.located and rules["surrounding"]:
        reasons.append(Reason(SELECTION_NOT_FOUND, "`selection.text` is not in the document's text: no text "
                              "around it was taken (send `selection.start`/`end`, or the text as the document has it)"))
    pieces += passage_pieces(passage, doc_source)
    if injection:  # the session's working memory, before the instruction (in this process, not the index)
        held, problems, unfit = session.pieces(bank, req.session_id, rules["working"])
        pieces += held
        reasons += problems
    cancel.check()  # checkpoints between the stages: nothing is written or cached half-built before the trace

    with bank.index.lock:
        order = positions.story_order(bank)
        position = document if document is not None and order.knows(document) else None
        if position is not None:  # the scene the selection is in: what happens later in the chapter is not yet true
            at = from_manuscript.selection_at(req.start, passage, text)
            position = from_manuscript.scene_position(bank, position, at, req.document_text)
        if position is None:
            reasons.append(Reason(STORY_POSITION_UNKNOWN, "no story position (no documentId, or one outside the "
                                  "story order): only timeless material is used"))
        timed = positions.timed_memories(bank.index)
        hidden_rows = {r for r, (since, until) in timed.items() if not order.holds(since, until, position)}
        hidden["memories"] = len(hidden_rows)
        cards = story_catalog(bank.index)

        allowed = {section for section, rule in SECTION_RULE.items() if rules[rule]}
        pieces.append(Piece(2, "project", "project", f"Title: {bank.info.name}", bank.info.id,
                            ".writenow/project.yaml", reason="the project"))
        pieces += _standing_cards(cards, allowed)

        if injection and rules["preferences"]:
            kept, capped = _preferences(bank, set(timed), ctx["layerTokens"].get("preferences"))
            pieces += kept

        scanned = {"selection": passage.selection, "instruction": passage.instruction,
                   "before": passage.before.text, "after": passage.after.text}
        found, skipped = activate(cards, scanned, allowed, ctx["recursion"]) if allowed else ([], [])
        meant, by_meaning = meaning.activate(bank, cards, scanned, allowed, found) if cards.meaning else ([], {})
        found += meant  # after every card matched by a word (context.md, Activation)
        roles: dict[str, str] = {}
        if rules["scene"]:  # the scene's line, and its POV and present characters activated like a mention
            scene_pieces, found, roles = narrative.scene(bank, cards, order, position, allowed, found)
            pieces += scene_pieces
        room = min(ctx["layerTokens"]["retrieved"], rules["max_tokens"])
        used = 0
        for i, f in enumerate(found):
            if used > room:  # the budget drops Layer 4 from its end: what follows could never be kept
                late = list(map(_late_entries(cards).__getitem__, [g.id for g in found[i:]]))  # shared: see _dropped
                break
            card = cards.cards[f.id]
            body, hid_p, hid_r, tokens = _card_at(cards, f.id, order, position)
            hidden["progressions"] += hid_p
            hidden["relations"] += hid_r
            why = by_meaning.get(f.id) if f.where == meaning.WHERE else None
            piece = Piece.cleaned(4, "cards", "card" if card.get("include") != "always" else "state", body, tokens,
                                  f.id, card["source"], (card.get("lines") or {}).get("name"),
                                  why or (narrative.card_reason(f, roles) if roles else f.reason()),
                                  why["score"] if why else None)
            used += piece.tokens
            pieces.append(piece)
        if rules["threads"]:
            pieces += narrative.thread_pieces(bank, order, position)
        if skipped:
            more = f"; and {len(skipped) - 5:,} more" if len(skipped) > 5 else ""
            reasons.append(Reason(KEY_SKIPPED, "; ".join(s.message for s in skipped[:5]) + more))
        cancel.check()

        if injection:
            with hiding(hidden_rows):
                pieces += _memory_pieces(bank, req, passage, rules, document, hidden_rows, set(timed), reasons)
                if rules["episodes"]:
                    pieces += _episode_pieces(bank, req, passage, rules["episodes"])
                if rules["history"]:
                    pieces += _history_pieces(bank, document)
            pieces = narrative.mark_unrevealed(bank, order, position, pieces)
        else:
            reasons.append(Reason(INJECTION_DISABLED, "injection is turned off in settings (memory.injectionEnabled): "
                                  "no preferences, memories, episodes, history or working memory"))
        if position is not None and (rules["recap"] or rules["recall"]):
            pieces += from_manuscript.recap(bank, position, rules["recap"])
            # the strong windows only where this assemble's memories' side embeds the query (docs/manuscript.md)
            pieces += from_manuscript.recall(bank, req.start, passage, text, _query(req, passage), rules["recall"],
                                             position, windows=injection and rules["memories"] > 0)

    return finish(bank, req, skill, rules, pieces, reasons, Finish(hidden, capped, late, passage, document, started,
                                                                      unfit=unfit))


@dataclass(frozen=True)
class Finish:
    """What an assembly carries to its end besides the pieces and reasons."""
    hidden: dict[str, int]
    capped: list[dict[str, Any]]
    late: list[dict[str, Any]]
    passage: Passage
    document: str | None
    started: float
    memory_degraded: bool = False
    unfit: list[dict[str, Any]] = field(default_factory=list)  # session entries over the skill's `working: N`


def finish(bank: Bank, req: Request, skill: dict[str, Any], rules: dict[str, Any], pieces: list[Piece],
           reasons: list[Reason], f: Finish) -> dict[str, Any]:
    """The budget fitted, the prompt serialised, the run journaled: the channel's data."""
    ctx = bank.settings_files.context()
    hidden, capped, late, passage, document = f.hidden, f.capped, f.late, f.passage, f.document
    fitted = budget.fit(pieces, ctx["layerTokens"], rules["max_tokens"])
    if fitted.over_budget:
        reasons.append(Reason(OVER_BUDGET, "what is never cut (identity, skill, instruction, selection, or a "
                              "layer over its cap) is over the budget on its own; nothing else was added"))
    out = serialise(fitted.pieces)
    run_id = req.run_id or new_id("r")
    recall_codes = {"EMPTY_QUERY", "VEC_UNAVAILABLE", "MODEL_UNAVAILABLE", "EMBEDDING_DIM_MISMATCH",
                    "QUERY_NOT_EMBEDDABLE"}
    data = {
        "runId": run_id,
        "skillId": skill["id"],
        "systemPrompt": out.system_prompt,
        "userContent": out.user_content,
        "stablePrefixHash": out.prefix_hash,
        "blocks": list(out.blocks),
        "cacheBreakpoints": list(out.breakpoints),
        "items": [p.item() for p in fitted.pieces if p.text],
        "diagnostics": {
            "degraded": any(r.code in recall_codes for r in reasons),
            "reasons": [r.to_api() for r in reasons],
            "dropped": _dropped(fitted.dropped, capped, late, f.unfit),  # `truncated` counts them all
            "hidden": sum(hidden.values()),
            "hiddenDetail": hidden,
            "truncated": len(fitted.dropped) + len(capped) + len(late) + len(f.unfit),
            "prefixTokens": out.prefix_tokens,
            "prefixCacheable": out.prefix_tokens >= 1024,
            "hardCut": [side for side, s in (("before", passage.before), ("after", passage.after)) if s.cut == "hard"],
            "memoryDegraded": f.memory_degraded,
            "tookMs": 0.0,
        },
    }
    cancel.check()  # the last checkpoint: a call stopped here leaves no trace line; once journaled it answers
    trace.journal_run(bank, data, document)
    data["diagnostics"]["tookMs"] = round((time.perf_counter() - f.started) * 1000, 3)
    return data


def _dropped(fitted: list[Dropped], capped: list[dict[str, Any]], late: list[dict[str, Any]],
             unfit: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first MAX_LISTED pieces left out, by layer, in the order each was left out. `capped` and `late`
    are entries shared by the prompts (kept per view and per generation of the cards): a prompt leaves out
    thousands (Layer 3's preferences over its cap, the cards found after Layer 4 was full), so only the
    listed ones are copied for the caller, as only the listed fitted ones are made."""
    by_layer: dict[int, list[Dropped]] = {}
    for d in fitted:
        by_layer.setdefault(d.layer, []).append(d)
    then = {3: (capped, True), 4: (late, True), 5: (unfit, False)}  # after the fitted ones of their layer
    out: list[dict[str, Any]] = []
    for layer in sorted(by_layer.keys() | then.keys()):
        out.extend(d.to_api() for d in by_layer.get(layer, ())[:MAX_LISTED - len(out)])
        more, shared = then.get(layer, ([], False))
        more = more[:MAX_LISTED - len(out)]
        out.extend(map(dict.copy, more) if shared else more)
    return out
