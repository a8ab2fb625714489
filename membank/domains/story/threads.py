"""Threads (story.md, Threads): the plot lines, promises and foreshadowing the story still owes the reader,
one file each in `.writenow/threads/`. Pure: a file's text in, a `Thread` out; what is open at a position;
which open thread has gone unmentioned too long. Nothing from after the position is ever answered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

from ...files.conflicts import LEFT_OUT, conflict_line
from ...files.frontmatter import FrontMatterError, decode, split
from .matching import Keyed, Matcher
from .order import StoryOrder

FOLDER = "threads"
THREAD_ABANDONED = "THREAD_ABANDONED"
STATUSES = ("open", "resolved", "dropped")


@dataclass(frozen=True)
class Thread:
    id: str  # "threads/ruby" (the file's path under .writenow/, without .md)
    title: str
    opened: str | None
    resolved: str | None
    dropped: str | None
    keys: tuple[str, ...]
    entities: tuple[str, ...]
    note: str
    source: str
    lines: dict[str, int]  # key -> the file line it is written on
    touched: tuple[str, ...] = ()  # the positions a capture recorded it advanced at (`touched: [{at: …}]`)


def _position(value: Any) -> str | None:
    return value.strip().lstrip("./") if isinstance(value, str) and value.strip() else None


def _words(value: Any) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return tuple(str(v).strip() for v in items if isinstance(v, (str, int, float)) and str(v).strip())


def parse(data: bytes, thread_id: str, source: str) -> tuple[Thread | None, str | None, int]:
    """A thread file: (the thread, None, 0), or (None, what is wrong, its line)."""
    try:
        text = decode(data)
        if (marker := conflict_line(text)) is not None:
            return None, LEFT_OUT, marker
        doc = split(text)
    except FrontMatterError as e:
        return None, e.message, e.line
    meta = doc.meta
    opened = _position(meta.get("opened"))
    if opened is None:
        return None, "a thread needs `opened:` (the position where the story opens it, e.g. chapters/ch02.md)", \
            doc.key_line("opened")
    title = str(meta.get("title") or "").strip() or thread_id.rsplit("/", 1)[-1]
    lines = {k: doc.key_line(k) for k in ("title", "opened", "resolved", "dropped", "keys", "entities")}
    lines["note"] = doc.body_line
    touched = meta.get("touched") if isinstance(meta.get("touched"), list) else []
    at = (_position(t.get("at") if isinstance(t, dict) else t) for t in touched)
    return Thread(thread_id, title, opened, _position(meta.get("resolved")), _position(meta.get("dropped")),
                  _words(meta.get("keys")), _words(meta.get("entities")), doc.body, source, lines,
                  tuple(a for a in at if a)), None, 0


def status(thread: Thread, order: StoryOrder, at: str | None) -> str | None:
    """The thread's status at `at` (None: it does not exist there yet). Without a position: its status
    at the end of the story as written."""
    if at is None:
        return "resolved" if thread.resolved else "dropped" if thread.dropped else "open"
    if thread.opened is None or not order.reached(thread.opened, at):
        return None
    if thread.resolved and order.reached(thread.resolved, at):
        return "resolved"
    if thread.dropped and order.reached(thread.dropped, at):
        return "dropped"
    return "open"


def view(thread: Thread, state: str) -> dict[str, Any]:
    """A thread as `story:threads` answers it at a position where it has `state`: a resolution or a drop
    that lies later is not shown (nor is it in `state`)."""
    out: dict[str, Any] = {"id": thread.id, "title": thread.title, "status": state, "opened": thread.opened,
                           "keys": list(thread.keys), "entities": list(thread.entities), "note": thread.note,
                           "source": thread.source, "line": thread.lines["opened"]}
    if state == "resolved":
        out["resolved"] = thread.resolved
    if state == "dropped":
        out["dropped"] = thread.dropped
    return out


def at_position(threads: Iterable[Thread], order: StoryOrder, at: str | None, wanted: str | None = None
                ) -> list[dict[str, Any]]:
    """The threads that exist at `at`, with their state there, in the order they were opened (then id)."""
    out = []
    for thread in sorted(threads, key=lambda t: (order.document_rank(t.opened or ""), t.id)):
        state = status(thread, order, at)
        if state is not None and (wanted is None or state == wanted):
            out.append(view(thread, state))
    return out


def matcher(threads: Iterable[Thread], names: Callable[[str], tuple[str, ...]]) -> Matcher:
    """One matcher over every thread's words: its title, keys, and the names and aliases of its entities
    (`names` gives them for an entity as written)."""
    keyed = []
    for t in threads:
        words = [*t.keys]
        for entity in t.entities:
            words += names(entity) or (entity,)
        keyed.append(Keyed(t.id, t.title, (), tuple(words)))
    return Matcher.build(keyed)


def abandoned(open_threads: Iterable[Thread], order: StoryOrder, at: str, limit: int,
              mentioned: Callable[[str], frozenset[str]]) -> list[tuple[Thread, str | None, int]]:
    """The threads open at `at` whose words no document has named for `limit` documents up to and
    including `at`: each with the last document that named it (None: none since it was opened) and how
    many documents have passed since. `mentioned(position)` gives the ids of the threads a document
    names; a position the thread's `touched:` list holds counts as naming it. Only `at` and what comes
    before it are read: one walk back from `at`, each document asked once, and only while a thread
    opened before it has not been named since."""
    here = order.document_rank(at)
    old = []  # the threads opened at least `limit` documents ago: (thread, the rank it opened at)
    touched: dict[int, list[str]] = {}  # rank -> the threads a capture recorded advancing there
    for thread in open_threads:
        start = order.document_rank(thread.opened or "")
        if here - start >= limit:
            old.append((thread, start))
            for rank in {order.document_rank(t) for t in thread.touched} if thread.touched else ():
                touched.setdefault(rank, []).append(thread.id)
    last: dict[str, int] = {}  # thread -> the latest rank after its opening that names it
    waiting = {thread.id: start for thread, start in old}  # not named yet, by the rank it opened at
    opening = sorted(old, key=lambda o: o[1])  # the last one opens latest: it stops waiting first
    rank = here
    while waiting:
        while opening and opening[-1][1] >= rank:  # back at its opening: never named since
            waiting.pop(opening.pop()[0].id, None)
        for thread_id in touched.get(rank, ()):
            if thread_id in waiting:
                last[thread_id] = rank
                del waiting[thread_id]
        if waiting:
            for thread_id in mentioned(order.positions[rank]) & waiting.keys():
                last[thread_id] = rank
                del waiting[thread_id]
        rank -= 1
    out = []
    for thread, _ in old:
        named = last.get(thread.id)
        if named is not None and named > here - limit:
            continue  # named within the last `limit` documents
        since = order.positions[named] if named is not None else None
        out.append((thread, since, here - order.document_rank(since or thread.opened or "")))
    return out
