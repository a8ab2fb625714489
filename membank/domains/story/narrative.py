"""The consistency check's narrative flags (story.md): those that read more than the cards — the scenes
(`LOCATION_MISMATCH`), the threads (`THREAD_ABANDONED`). Each adds its flags after the check's own, never reading past the position."""

from __future__ import annotations

from typing import Any

from ..contract import Bank
from . import scenefiles, threadfiles
from .cards import Catalog
from .order import StoryOrder


def more_flags(bank: Bank, cat: Catalog, order: StoryOrder, document: str, text: str | None,
               data: dict[str, Any]) -> dict[str, Any]:
    """`data` (the check at a known `document`) with the narrative flags added; `text`: the passage the app
    sent (None: the document's file is the passage)."""
    flags = scenefiles.mismatch_flags(bank, cat, order, document)
    flags += threadfiles.abandoned_flags(bank, order, document, text)
    return threadfiles.add_flags(data, flags)
