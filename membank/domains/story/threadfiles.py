"""The threads of a project as read from `.writenow/threads/` (story.md, Threads): the files re-read only
when one changed, `story:threads`, and the `THREAD_ABANDONED` flag of the consistency check."""

from __future__ import annotations

import os
from operator import attrgetter
from typing import Any, Callable

from ...files.conflicts import conflict_line
from ...files.reader import Unreadable, read_regular
from ...kernel import errors
from ...kernel.errors import MembankError
from ...kernel.limits import MAX_LISTED
from ..contract import Bank
from . import positions, threads
from .positions import known_position
from .cards import Catalog, catalog
from .check import Flag
from .manuscript import read_document
from .matching import Matcher
from .order import StoryOrder
from .threads import Thread

MAX_THREAD_BYTES = 64 * 1024
_NAME = attrgetter("name")


def _stamp(folder: str) -> tuple[tuple[str, int, int], ...]:
    try:
        with os.scandir(folder) as listing:
            entries = sorted(listing, key=_NAME)
    except OSError:
        return ()
    out = []
    for e in entries:
        if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file(follow_symlinks=False):
            st = e.stat(follow_symlinks=False)
            out.append((e.name, st.st_size, st.st_mtime_ns))
    return tuple(out)


def load(bank: Bank) -> tuple[tuple[Thread, ...], tuple[dict[str, Any], ...]]:
    """Every thread of the project and a problem (source, line, message) per file that is not one;
    re-read only when a file in the folder changed."""
    folder = bank.project.file(threads.FOLDER)
    stamp = _stamp(str(folder))
    memo = bank.memo.setdefault("story.threads", {})
    if memo.get("stamp") == stamp and "threads" in memo:
        return memo["threads"], memo["problems"]  # type: ignore[no-any-return]
    found, problems = [], []
    for name, _, _ in stamp:
        rel = f"{threads.FOLDER}/{name}"
        source = bank.project.source(rel)
        try:
            data, _ = read_regular(folder / name, MAX_THREAD_BYTES + 1)
        except (OSError, Unreadable):
            problems.append({"source": source, "line": 1, "message": "the file cannot be read"})
            continue
        thread, problem, line = threads.parse(data[:MAX_THREAD_BYTES], rel[:-3], source)
        if thread is None:
            problems.append({"source": source, "line": line, "message": problem})
        else:
            found.append(thread)
    memo.update(stamp=stamp, threads=tuple(found), problems=tuple(problems), matcher=None, mentioned={}, at={})
    return memo["threads"], memo["problems"]  # type: ignore[no-any-return]


def open_at(bank: Bank, order: StoryOrder, position: str) -> tuple[dict[str, Any], ...]:
    """The threads open at `position` (`threads.at_position`), kept while the files and the story order
    hold: every prompt with `threads` asks again at the same few positions. Read-only."""
    found, _ = load(bank)
    return _kept(bank, (order, position), lambda: tuple(threads.at_position(found, order, position, "open")))


def _kept(bank: Bank, key: Any, make: Callable[[], Any]) -> Any:
    """`make()`, kept for `key` (a story order and a position) until a thread file changes (`load` empties it)."""
    kept: dict[Any, Any] = bank.memo["story.threads"].setdefault("at", {})
    found = kept.get(key)
    if found is None:
        found = make()
        if len(kept) >= 64:
            kept.clear()
        kept[key] = found
    return found


def list_threads(bank: Bank, at: str | None = None, status: str | None = None) -> dict[str, Any]:
    """`story:threads`: the threads that exist at `at` with their state there (every thread at the end of
    the story without `at`); a thread opened later does not exist, a later resolution is not shown."""
    if status is not None and status not in threads.STATUSES:
        raise errors.invalid("status", f"`status` is one of {', '.join(threads.STATUSES)}")
    order = positions.story_order(bank)
    position = known_position(order, at)
    found, problems = load(bank)
    items = threads.at_position(found, order, position, status)
    return positions.warned({"at": position, "items": items[:MAX_LISTED], "total": len(items),
                             "problems": list(problems)}, order, position)


def _names(cat: Catalog) -> Any:
    def names(entity: str) -> tuple[str, ...]:
        ids = cat.resolve(entity)
        if len(ids) != 1:
            return ()
        card = cat.cards[ids[0]]
        return (card["name"], *(card.get("aliases") or ()))
    return names


def _mentioned(bank: Bank, cat: Catalog, found: tuple[Thread, ...], document: str, text: str | None
               ) -> frozenset[str]:
    """The ids of the threads `document` names (its file, or `text` for the document being checked)."""
    memo = bank.memo["story.threads"]
    if memo.get("catalog") is not cat or memo.get("matcher") is None:
        memo.update(catalog=cat, matcher=threads.matcher(found, _names(cat)), mentioned={})
    matcher: Matcher = memo["matcher"]
    if text is not None:
        return frozenset(m.id for m in matcher.mentions(text)[0])
    try:
        st = os.stat(os.path.join(bank.root, document))  # no Path made: a check looks at ~20 documents
        key = (document, st.st_size, st.st_mtime_ns)
    except OSError:
        return frozenset()
    cached: dict[Any, frozenset[str]] = memo["mentioned"]
    hit = cached.get(key)
    if hit is None:
        try:
            body = read_document(bank.root, document) or ""
        except MembankError:  # a chapter too large to read, or a link out of the project: it names nothing
            body = ""
        if conflict_line(body) is not None:  # both versions of a merge (files.md, Git): it names nothing either
            body = ""
        hit = cached[key] = frozenset(m.id for m in matcher.mentions(body)[0])
    return hit


def abandoned_flags(bank: Bank, order: StoryOrder, document: str, text: str | None) -> list[Flag]:
    """`THREAD_ABANDONED` for the threads open at `document` that no document up to it has named for
    `story.threadWarnChapters` documents (the passage checked stands for its document)."""
    found, _ = load(bank)
    if not found or not order.knows(document):
        return []
    cat = catalog(bank.index)
    limit = int(bank.settings_files.story()["threadWarnChapters"])
    open_now = _kept(bank, (order, document, "threads"),
                     lambda: [t for t in found if threads.status(t, order, document) == "open"])

    seen: dict[str, frozenset[str]] = {}  # each document looked at once per call

    def mentioned(position: str) -> frozenset[str]:
        hit = seen.get(position)
        if hit is None:
            hit = seen[position] = _mentioned(bank, cat, found, position, text if position == document else None)
        return hit

    out = []
    for thread, last, gone in threads.abandoned(open_now, order, document, limit, mentioned):
        since = f"last named in {last}" if last else f"not named since it was opened in {thread.opened}"
        out.append(Flag(threads.THREAD_ABANDONED, thread.id,
                        f"the thread {thread.title} is open but {since}, {gone} documents ago "
                        f"(story.threadWarnChapters: {limit}); resolve it, drop it, or bring it back",
                        ((thread.source, thread.lines["opened"]),)))
    return out


def add_flags(data: dict[str, Any], more: list[Flag]) -> dict[str, Any]:
    """The check's answer with `more` flags after its own (the list bounded as the check bounds it)."""
    if not more:
        return data
    listed = data["flags"] + [f.to_api() for f in more]
    return {**data, "flags": listed[:MAX_LISTED], "flagsTotal": data["flagsTotal"] + len(more)}
