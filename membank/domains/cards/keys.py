"""The regular-expression keys an import brings that membank will never compile (kernel/regexcost.py: a key
over the size or nesting bounds, a flag it does not know): said at import, where the writer looks, as well as
by `membank doctor` on the key's line (files/parse.py). Pure."""

from __future__ import annotations

from ...kernel import regexcost
from . import formats
from .clashes import fronts
from .groups import words

FIELDS = ("keys", "secondary_keys", "exclude_keys")


def warnings(writes: list[tuple[str, bytes]]) -> list[str]:
    """One warning per key over the bounds in the Markdown files of one import, in order."""
    out: list[str] = []
    for rel, meta in fronts(writes):
        for field in FIELDS:
            for key in words(meta.get(field)):
                why = regexcost.refusal(key) if key.strip().startswith("/") else None
                if why:
                    out.append(f"the key {formats.short(key)} in `{field}` of .writenow/{rel} is a regular expression "
                               f"membank will not compile: {why}; it is skipped (`membank doctor` lists it)")
    return out
