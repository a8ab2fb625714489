"""The journal's events in the index: learning's own table and its queries.

Journal files are indexed like any other (read on from where they were left when they only grew,
`indexing/journals.py`) into `events`, so signal counts are derived and survive a rebuild. The table is registered with the index's schema
registry: a change to it drops only this table and re-reads only the journal files."""

from __future__ import annotations

import json

from ...files import journal
from ...files.scan import PROJECT_PREFIX
from ...index import Index
from ...index.schema import DomainSchema, register
from ...kernel import clock

register(DomainSchema(
    "learning.events", 2,
    """CREATE TABLE events(              -- journal events that count: feedback, preferences-cleared, learned
    source TEXT NOT NULL, line INTEGER NOT NULL, at TEXT NOT NULL, event TEXT NOT NULL,
    key TEXT, weight REAL, run_id TEXT, evidence TEXT, tags TEXT,
    ekey TEXT NOT NULL                 -- the event's identity: its copies count once (files.md, Git)
);
CREATE INDEX events_key ON events(key, at);""",
    "DROP TABLE IF EXISTS events",
    derived_from=(f"{PROJECT_PREFIX}{journal.FOLDER}/",),
    forget="DELETE FROM events WHERE source = ?"))


def put(index: Index, source: str, found: list[journal.Event], whole: bool) -> None:
    """Store what one journal file contributes: `whole`, everything it holds (replacing what it gave
    before); else only lines appended since it was last read."""
    if whole:
        index.db.execute("DELETE FROM events WHERE source = ?", (source,))
    index.db.executemany(
        "INSERT INTO events(source, line, at, event, key, weight, run_id, evidence, tags, ekey)"
        " VALUES (:source, :line, :at, :event, :key, :weight, :run_id, :evidence, :tags, :ekey)", journal.rows(found))


def last_event(index: Index, event: str, key: str | None = None) -> str | None:
    """When the latest `event` (for `key`, if given) happened, leaving out events dated after now: a clear
    made while the clock was a year ahead must not silence learning for that year (files.md, Time)."""
    sql = "SELECT max(at) FROM events WHERE event = ? AND at <= ?" + (" AND key = ?" if key is not None else "")
    now = clock.now_precise()
    return index.db.execute(sql, (event, now, key) if key is not None else (event, now)).fetchall()[0][0]


ORIGINAL = "*/[0-9][0-9][0-9][0-9]-[0-9][0-9].jsonl"  # a month's own file, not a sync tool's copy of it


def signal(index: Index, key: str, since: str | None) -> tuple[float, list[str], list[str]]:
    """(summed weight, run ids oldest first, tags) of the feedback for `key` after `since`, each event
    once however many copies of it the journal holds (a union merge, a sync tool's copy, a pasted line)."""
    # of an event's copies, the original counts (a month's own file first, then by file and line): an
    # event edited differently on two machines counts the same live and after a rebuild
    rows = index.db.execute(
        "SELECT weight, run_id, tags FROM (SELECT weight, run_id, tags, at, source, line, row_number() OVER"
        " (PARTITION BY ekey ORDER BY source NOT GLOB ?, source, line) AS n FROM events"
        " WHERE event = 'feedback' AND key = ?) WHERE n = 1 AND at > ? ORDER BY at, source, line",
        (ORIGINAL, key, since or "")).fetchall()
    tags: list[str] = []
    for _, _, raw in rows:
        tags.extend(t for t in json.loads(raw or "[]") if t not in tags)
    return sum(w for w, _, _ in rows), [r for w, r, _ in rows if r and w > 0], tags


def signal_phrases(index: Index, polarity: str, since: str | None) -> list[tuple[str, str]]:
    """(key, first evidence) of every signal of one polarity since `since` that has readable evidence."""
    rows = index.db.execute(
        "SELECT key, evidence, min(at) FROM events WHERE event = 'feedback' AND key LIKE ? AND at > ?"
        " AND evidence IS NOT NULL GROUP BY key ORDER BY key", (polarity + ":%", since or "")).fetchall()
    return [(key, evidence) for key, evidence, _ in rows]
