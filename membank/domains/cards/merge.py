"""Re-import as a three-way merge (ecosystem.md, "Re-import is a merge"). Pure.

For one Markdown file: the *base* is what the last imported original makes of it, *theirs* what the new
version of the card makes of it, *mine* the file as it is now. Field by field (a front-matter key, the
body; inside `card:`/`lore:` key by key): what the card did not change stays as the writer has it; what
only the card changed is taken (`changed`); what both changed, differently, stays the writer's and is
reported with both values (`kept`). Keys only the project has (progressions, state, `revision`, …) are
never touched, and the file is rewritten key by key, so the writer's comments stay. Without a base (a
card imported before originals were kept) the card's values are taken where they differ."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .groups import same

MISSING: Any = object()  # a key the side does not have
NOTE = "imported"  # membank's own note: follows the new version whenever the file is written


def _eq(a: Any, b: Any) -> bool:
    if a is MISSING or b is MISSING:
        return a is b
    return same(a, b)


def _shown(value: Any) -> Any:
    return None if value is MISSING else value


@dataclass
class Merged:
    updates: dict[str, Any] = field(default_factory=dict)  # top-level key -> value (MISSING: remove it)
    body: str | None = None  # the new body, None to keep the writer's
    fields: list[dict[str, Any]] = field(default_factory=list)  # {field, change, mine?, theirs?}

    @property
    def change(self) -> str:
        kinds = {f["change"] for f in self.fields}
        return "kept" if "kept" in kinds else "changed" if "changed" in kinds else "same"


def value(base: Any, theirs: Any, mine: Any, path: str, out: list[dict[str, Any]], legacy: bool = False) -> Any:
    """The merged value of one field (reports appended to `out`)."""
    if _eq(theirs, mine):
        return mine
    if legacy:
        out.append({"field": path, "change": "changed"})
        return theirs
    if _eq(theirs, base):
        return mine  # the card left it alone: the writer's (edited or not)
    if all(isinstance(v, dict) for v in (base, theirs, mine)):  # key by key: reported where it changed
        merged: dict[str, Any] = {}
        for key in [*mine, *(k for k in theirs if k not in mine)]:
            got = value(base.get(key, MISSING), theirs.get(key, MISSING), mine.get(key, MISSING), f"{path}.{key}", out)
            if got is not MISSING:
                merged[key] = got
        return merged
    if _eq(mine, base):
        out.append({"field": path, "change": "changed"})
        return theirs
    out.append({"field": path, "change": "kept", "mine": _shown(mine), "theirs": _shown(theirs)})
    return mine


def merge(base: tuple[dict[str, Any], str] | None, theirs: tuple[dict[str, Any], str],
          mine: tuple[dict[str, Any], str]) -> Merged:
    """The updates that bring `mine` to the merge of the three (see the module's note)."""
    out = Merged()
    b_meta, b_body = base if base is not None else ({}, "")
    t_meta, t_body = theirs
    m_meta, m_body = mine
    legacy = base is None
    for key in [*t_meta, *(k for k in b_meta if k not in t_meta)]:
        if key == NOTE:
            continue
        mine_value = m_meta.get(key, MISSING)
        got = value(b_meta.get(key, MISSING), t_meta.get(key, MISSING), mine_value, key, out.fields,
                    legacy and key in t_meta)
        if not _eq(got, mine_value):
            out.updates[key] = got
    got = value(b_body.strip(), t_body.strip(), m_body.strip(), "body", out.fields, legacy)
    if got != m_body.strip():
        out.body = got
    if (out.updates or out.body is not None) and NOTE in t_meta:
        out.updates[NOTE] = t_meta[NOTE]
    return out
