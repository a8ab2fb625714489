"""The consistency check's narrative flags (story.md): those that read more than the cards — the scenes
(`LOCATION_MISMATCH`), the facts (`MAY_NOT_KNOW`, `BEFORE_REVEAL`, `FACTS_DISAGREE`), the threads
(`THREAD_ABANDONED`). Each adds its flags after the check's own, never reading past the position."""

from __future__ import annotations

from typing import Any

from ..contract import Bank
from . import factfiles, scenefiles, threadfiles
from .cards import Catalog
from .order import StoryOrder


def more_flags(bank: Bank, cat: Catalog, order: StoryOrder, document: str, text: str, from_app: bool,
               data: dict[str, Any]) -> dict[str, Any]:
    """`data` (the check of `text` at a known `document`) with the narrative flags added; `from_app`: the
    passage is the app's (else it is the document's file)."""
    flags = scenefiles.mismatch_flags(bank, cat, order, document)
    hits = factfiles.secret_hits(bank, text)
    flags += factfiles.may_not_know_flags(bank, cat, order, document, text, hits)
    flags += factfiles.reveal_flags(bank, order, document, hits)
    flags += factfiles.disagree_flags(bank, order, document)
    flags += threadfiles.abandoned_flags(bank, order, document, text if from_app else None)
    return threadfiles.add_flags(data, flags)

