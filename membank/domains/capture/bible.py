"""The bible as `capture` reads it for one chapter: the chapter's text and hash, the cards it mentions,
the fact memories in force, the threads, the facet schemas (I/O; the decisions are in `parts`,
`validate` and `proposals`)."""

from __future__ import annotations

import json
from typing import Any

from ...kernel import errors
from ...kernel.paths import document_path
from ..contract import Bank
from ..story import positions
from ..story.cards import Catalog, catalog
from ..story.manuscript import read_document, unconflicted
from ..story.matching import call_allowance
from ..story.order import StoryOrder
from ..story.scenefiles import load as load_scenes
from ..story.threadfiles import load as load_threads

MAX_CHAPTER_CHARS = 200_000  # a chapter prepared or checked at once (kernel/limits.py MAX_PASSAGE_CHARS)

_FACTS = ("SELECT rowid, record FROM entries WHERE kind = 'memory' AND type = 'fact' AND removed_at IS NULL"
          " AND deleted = 0 AND shadowed = 0 ORDER BY rowid")


def chapter(bank: Bank, document_id: str, text: str | None = None) -> tuple[str, str]:
    """(the document's path, its text): the file's, or the app's unsaved `text`."""
    document = document_path(document_id)
    if "#" in document:  # a position `document#scene`: every position captured here would read as another's
        raise errors.invalid("documentId", f"`{document}` holds `#`, which a story position reads as the start of a "
                             "scene's name; rename the file without `#` to capture it")
    if text is None:
        text = read_document(bank.root, document)
        if text is None:
            raise errors.invalid("documentId", f"there is no file {document}; send its text as `documentText`")
        text = unconflicted(document, text)
    if len(text) > MAX_CHAPTER_CHARS:
        raise errors.invalid("documentId", f"the document {document} is {len(text):,} characters long, more than "
                             f"the {MAX_CHAPTER_CHARS:,} a capture reads; split it into chapter files")
    return document, text


def story(bank: Bank, document: str) -> tuple[Catalog, StoryOrder]:
    order = positions.story_order(bank)
    if not order.knows(document):
        raise errors.invalid("documentId", f"`{document}` is not a position of the story: list it in project.yaml "
                             "`chapters:` (or, without that list, create the file)")
    return catalog(bank.index), order


def mentioned(cat: Catalog, text: str) -> list[str]:
    """The ids of the cards the chapter mentions, in the order they first appear."""
    with call_allowance():
        found, _ = cat.matcher.mentions(text)
    return list(dict.fromkeys(m.id for m in sorted(found, key=lambda m: m.offset)))


def facts(bank: Bank, order: StoryOrder, at: str) -> list[dict[str, Any]]:
    """The fact memories in force at `at` (id, content, source, since, until, revealed), in id order."""
    timed = positions.timed_memories(bank.index)
    out = []
    with bank.index.lock:
        rows = bank.index.db.execute(_FACTS).fetchall()
    for rowid, record in rows:
        since, until = timed.get(rowid, (None, None))
        if not order.holds(since, until, at):
            continue
        memory = json.loads(record)
        revealed = (memory.get("metadata") or {}).get("revealed")
        out.append({"id": memory["id"], "content": memory.get("content") or "", "source": memory.get("source"),
                    "since": since, "until": until, "revealed": revealed if isinstance(revealed, str) else None})
    return out


def threads(bank: Bank) -> tuple[Any, ...]:
    return load_threads(bank)[0]


def facet_schemas(bank: Bank) -> dict[str, Any]:
    found = bank.settings_files.story().get("facets") or {}
    return found if isinstance(found, dict) else {}


def scenes(bank: Bank) -> dict[str, Any]:
    """Each document's scenes, as `.writenow/scenes/` holds them."""
    return load_scenes(bank)[0]
