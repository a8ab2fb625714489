"""An import's answer, bounded (quality.md: at most MAX_LISTED items of a list in full, the total beside
them): a book of 5,000 entries changes 5,001 files and a CHARX may skip 2,000, in each of 100 inputs."""

from __future__ import annotations

from typing import Any

from ...kernel.limits import MAX_LISTED


def bounded(item: dict[str, Any], most: int = MAX_LISTED) -> dict[str, Any]:
    """`item` with at most `most` changes and skipped files listed; past that, `changesTotal` /
    `skippedTotal` give how many there are. The changes listed are those that write or keep something
    first (`new`, `changed`, `kept`), then `same` ones, each in its own order."""
    out = dict(item)
    changes = item["changes"]
    if len(changes) > most:
        moving = [n for n, c in enumerate(changes) if c["change"] != "same"]
        still = [n for n, c in enumerate(changes) if c["change"] == "same"]
        shown = sorted((moving + still)[:most])
        out["changes"] = [changes[n] for n in shown]
        out["changesTotal"] = len(changes)
    if len(item["skipped"]) > most:
        out["skipped"] = item["skipped"][:most]
        out["skippedTotal"] = len(item["skipped"])
    return out
