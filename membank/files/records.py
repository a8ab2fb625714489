"""Frozen records the file layer produces: memories, cards, skills and diagnostics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

ERROR = "error"
WARNING = "warning"

# The deterministic order's ranks (api.md): lower comes first; other types rank 3, then by name.
TYPE_RANK = {"preference": 0, "fact": 1, "note": 2}
SCOPE_RANK = {"document": 0, "project": 1, "global": 2}


@dataclass(frozen=True)
class Diagnostic:
    source: str
    line: int
    severity: str  # "error" | "warning"
    message: str
    code: str | None = None  # a stable code where an app may act on the kind of problem (MERGE_CONFLICT)

    def to_dict(self) -> dict[str, Any]:
        out = {"source": self.source, "line": self.line, "severity": self.severity, "message": self.message}
        if self.code is not None:
            out["code"] = self.code
        return out


@dataclass(frozen=True)
class Memory:
    id: str
    type: str
    scope: str  # project | document | global
    document: str | None
    origin: str
    confidence: float
    tags: tuple[str, ...]
    evidence: tuple[Any, ...]
    metadata: dict[str, Any]
    pinned: bool
    revision: int
    created: str | None
    updated: str  # ISO time, always set (falls back to created, then the file's mtime)
    deleted_at: str | None
    content: str
    source: str
    since: str | None = None  # story positions (story.md): valid from here ...
    until: str | None = None  # ... up to, not including, here

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "scope": self.scope,
            "origin": self.origin,
            "content": self.content,
            "source": self.source,
            "documentId": self.document,
            "tags": list(self.tags),
            "confidence": self.confidence,
            "evidence": list(self.evidence),
            "metadata": self.metadata,
            "pinned": self.pinned,
            "revision": self.revision,
            "createdAt": self.created,
            "updatedAt": self.updated,
            "deletedAt": self.deleted_at,
            "since": self.since,
            "until": self.until,
        }


@dataclass(frozen=True)
class Card:
    """A character card (characters/) or a world entry (world/)."""

    id: str
    section: str  # "characters" | "world"
    kind: str
    name: str
    aliases: tuple[str, ...]
    keys: tuple[str, ...]
    include: str  # always | auto | never
    summary: str
    state: str | None
    state_at: str | None
    relations: tuple[dict[str, Any], ...]
    progressions: tuple[dict[str, Any], ...]
    metadata: dict[str, Any]
    deleted_at: str | None
    updated: str
    content: str
    source: str
    exclude_keys: tuple[str, ...] = ()
    secondary_keys: tuple[str, ...] = ()
    logic: str = "and_any"  # and_any | and_all | not_any | not_all (story.md, Matching)
    introduced: str | None = None
    match: str | None = None  # "words" | "meaning" as written; None: the book's, else words (context.md, Activation)
    min_score: float | None = None  # the least cosine a `match: meaning` activation needs; None: the book's or default
    # where each value is written, so every answer can cite source and line:
    # {"name", "summary", "state", "introduced": line, "relations", "progressions": [line per item]}
    lines: dict[str, Any] = field(default_factory=dict)

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "section": self.section,
            "kind": self.kind,
            "name": self.name,
            "aliases": list(self.aliases),
            "keys": list(self.keys),
            "excludeKeys": list(self.exclude_keys),
            "secondaryKeys": list(self.secondary_keys),
            "logic": self.logic,
            "introduced": self.introduced,
            "match": self.match,
            "minScore": self.min_score,
            "lines": self.lines,
            "include": self.include,
            "summary": self.summary,
            "state": self.state,
            "stateAt": self.state_at,
            "relations": list(self.relations),
            "progressions": list(self.progressions),
            "metadata": self.metadata,
            "content": self.content,
            "source": self.source,
            "updatedAt": self.updated,
            "deletedAt": self.deleted_at,
        }


@dataclass(frozen=True)
class Skill:
    id: str
    name: str
    context_rules: dict[str, Any]  # as written: checked again at assembly (files/skillrules.py)
    content: str
    source: str
    description: str = ""
    rule_lines: dict[str, int] = field(default_factory=dict)  # the file line of each rule

    def to_api(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "contextRules": self.context_rules,
            "ruleLines": self.rule_lines,
            "content": self.content,
            "source": self.source,
        }


Record = Memory | Card | Skill


@dataclass(frozen=True)
class Parsed:
    """What one file gave: a record (None when it could not be used) and its diagnostics."""

    record: Record | None
    diagnostics: tuple[Diagnostic, ...] = field(default=())
    id_line: int = 1  # the file line of its `id:` (1 when the id comes from its path): a clash is reported there
