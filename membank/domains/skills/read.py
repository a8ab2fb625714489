"""Skills (context.md): the project's and the global bank's skills (a project skill overrides a global
one with its id), their `context_rules` checked against the closed set, and Layer 0's identity."""

from __future__ import annotations

import json
from typing import Any

from ...files.conflicts import conflict_line
from ...files.frontmatter import FrontMatterError, decode, split
from ...files.reader import Unreadable, read_regular
from ...files.skillrules import RULES, check_rules
from ...kernel import errors
from ...kernel.errors import MembankError
from ..contract import Bank

IDENTITY_FILE = "identity.md"
IDENTITY_SOURCE = "global:identity.md"
BUILTIN_IDENTITY_SOURCE = "membank:identity"
# The built-in default rule set (seed 003 MS1-R3-S2): what a prompt holds when the index cannot be
# read (`memoryDegraded: true`); the author's voice and facts first.
MEMORY_DEGRADED = "MEMORY_DEGRADED"
DEFAULT_RULES = (
    "Keep the author's voice, tense and point of view.",
    "Do not contradict the text before the selection: names, places and facts stay as the manuscript has them.",
    "Write only what the instruction asks for, without commentary.",
)
DEFAULT_RULES_SOURCE = "membank:default-rules"
# Layer 0 when the global bank has no identity.md: the app's standing rules, for every skill
BUILTIN_IDENTITY = """You are the writing assistant inside a novelist's writing app. The author owns the story: \
follow their preferences, keep to the facts, characters and world they have set down, and never reveal or \
invent what happens later in the story than the passage you are given. The sections below give you the \
author's standing material first, then what was found for this passage; each piece names the file it \
comes from. When two pieces disagree, follow the more specific one. Reply with what the skill asks for \
and nothing else."""


def _problems(skill: dict[str, Any]) -> list[dict[str, Any]]:
    lines = skill.get("ruleLines") or {}
    return [{"field": f"context_rules.{p.key}" if p.key else "context_rules", "message": p.message,
             "line": lines.get(p.key, 1) if p.key else 1}
            for p in check_rules(skill.get("contextRules") or {})[1]]


def effective_rules(skill: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    """Every rule with its value: the skill's own, else the default (`max_tokens` from settings)."""
    rules = check_rules(skill.get("contextRules") or {})[0]
    if rules["max_tokens"] is None:
        rules["max_tokens"] = max_tokens
    return rules


def _view(skill: dict[str, Any], bank_name: str, max_tokens: int, whole: bool) -> dict[str, Any]:
    problems = _problems(skill)
    out = {"id": skill["id"], "name": skill["name"], "description": skill.get("description") or "",
           "source": skill["source"], "bank": bank_name, "contextRules": skill.get("contextRules") or {},
           "rules": effective_rules(skill, max_tokens), "valid": not problems, "problems": problems}
    if whole:
        out["content"] = skill["content"]
    return out


def list_(bank: Bank) -> dict[str, Any]:
    """`skill:list`: every skill, a project skill in place of a global one with its id, by id."""
    max_tokens = bank.settings_files.context()["maxTokens"]
    with bank.index.lock:
        rows = bank.index.db.execute(
            "SELECT bank, record FROM entries WHERE kind = 'skill' AND removed_at IS NULL AND shadowed = 0"
            " ORDER BY id, bank = 'global'").fetchall()
    seen: dict[str, dict[str, Any]] = {}
    for bank_name, record in rows:
        skill = json.loads(record)
        seen.setdefault(skill["id"], _view(skill, bank_name, max_tokens, whole=False))
    return {"items": list(seen.values())}


def find(bank: Bank, skill_id: str) -> tuple[str, dict[str, Any]]:
    """(bank, the skill's record); NOT_FOUND naming the skills there are."""
    with bank.index.lock:
        found = bank.index.find("skill", skill_id)
    if found is None:
        known = ", ".join(s["id"] for s in list_(bank)["items"]) or "none"
        raise MembankError(errors.NOT_FOUND, f"no skill with id `{skill_id}` (the skills are: {known})",
                           {"id": skill_id})
    return found[0], found[1]


def get(bank: Bank, skill_id: str) -> dict[str, Any]:
    """`skill:get`: one skill, whole, with its rules and any problem in them."""
    which, skill = find(bank, skill_id)
    return _view(skill, which, bank.settings_files.context()["maxTokens"], whole=True)


def usable(bank: Bank, skill_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the skill, its effective rules) for an assembly; INVALID_ARGUMENT naming `context_rules.<key>`
    and the skill's source when a rule is wrong."""
    _, skill = find(bank, skill_id)
    problems = check_rules(skill.get("contextRules") or {})[1]
    if problems:
        p = problems[0]
        field = f"context_rules.{p.key}" if p.key else "context_rules"
        more = f" (and {len(problems) - 1} more problem(s); `membank doctor` lists them)" if len(problems) > 1 else ""
        raise MembankError(errors.INVALID_ARGUMENT, f"the skill `{skill['id']}` ({skill['source']}) cannot be used: "
                           f"{p.message}{more}", {"field": field, "source": skill["source"]})
    return skill, effective_rules(skill, bank.settings_files.context()["maxTokens"])


def identity(bank: Bank) -> tuple[str, str]:
    """(Layer 0's text, its source): the global bank's identity.md (its body, when it has front
    matter), else the built-in text. Re-read only when the file's size or mtime moved."""
    path = bank.home / IDENTITY_FILE
    memo = bank.memo.setdefault("skills.identity", {})
    try:
        st = path.stat()
        stamp: Any = (st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None
    if memo.get("stamp") == stamp and "value" in memo:
        return memo["value"]  # type: ignore[no-any-return]
    value = (BUILTIN_IDENTITY, BUILTIN_IDENTITY_SOURCE)
    if stamp is not None:
        try:
            whole = decode(read_regular(path, 256 * 1024)[0])
            text = split(whole).body if conflict_line(whole) is None else ""  # a merge's markers: the built-in
            if text.strip():
                value = (text.strip(), IDENTITY_SOURCE)
        except (OSError, Unreadable, FrontMatterError):
            pass  # unreadable: the built-in text (doctor does not watch this file)
    memo["stamp"], memo["value"] = stamp, value
    return value


RULE_KEYS = tuple(RULES)
