"""An import's answer, bounded (quality.md: at most MAX_LISTED items of a list in full, the total beside
them): a book of 5,000 entries changes 5,001 files and a CHARX may skip 2,000, in each of 100 inputs."""

from __future__ import annotations

from typing import Any, Callable

from ...kernel.limits import MAX_LISTED


def bounded(item: dict[str, Any], most: int = MAX_LISTED) -> dict[str, Any]:
    """`item` with at most `most` changes and skipped files listed; past that, `changesTotal` /
    `skippedTotal` give how many there are. The changes listed are those that write or keep something
    first (`new`, `changed`, `kept`), then `same` ones, each in its own order; a change's `fields` too
    (`fieldsTotal`), the `kept` ones (both sides changed them) first."""
    out = dict(item)
    changes = item["changes"]
    if len(changes) > most:
        changes = [changes[n] for n in _first(changes, most, lambda c: c["change"] != "same")]
        out["changesTotal"] = len(item["changes"])
    if any(len(c.get("fields", ())) > most for c in changes):  # a card of 10,000 keys, each one changed
        changes = [c if len(c.get("fields", ())) <= most else
                   {**c, "fields": [c["fields"][n] for n in _first(c["fields"], most, lambda f: f["change"] == "kept")],
                    "fieldsTotal": len(c["fields"])} for c in changes]
    out["changes"] = changes
    if len(item["skipped"]) > most:
        out["skipped"] = item["skipped"][:most]
        out["skippedTotal"] = len(item["skipped"])
    return out


def _first(items: list[dict[str, Any]], most: int, wanted: Callable[[dict[str, Any]], bool]) -> list[int]:
    """The places of the `most` items listed: those `wanted` first, then the others, in the list's order."""
    first = [n for n, x in enumerate(items) if wanted(x)]
    rest = [n for n, x in enumerate(items) if not wanted(x)]
    return sorted((first + rest)[:most])
