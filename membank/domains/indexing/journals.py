"""Journal files into the index: read again whole only when they changed other than by growing.

The journal is append-only, and a month's file grows with every prompt (a `run` per assembly), so
reading it whole after each append would cost more with every line. A journal file's state in the
index is its length and a hash of its last bytes; when the file is longer now and those bytes are
unchanged (and ended a line), only what follows is read. Anything else (a file rewritten without
label text in privacy mode, edited by hand, shortened) is read whole and replaces what it gave."""

from __future__ import annotations

import os
import re
from typing import Iterable

from ...files import journal
from ...files.reader import content_hash
from ...files.records import WARNING, Diagnostic
from ...files.scan import PROJECT_PREFIX, BankRoot
from ...index import Index
from ...index.schema import DomainSchema, register
from ..episodes import store as episodes, traces
from ..lifecycle import runs as lifecycle
from ..learning import events as learning

def _forget(index: Index, source: str) -> None:
    """A journal file is gone: its events go, and the copies they had are counted again."""
    _keys(index, source, [], True)


register(DomainSchema(
    "indexing.journals", 2,
    """CREATE TABLE journal_events(      -- every journal event's identity and line: copies are found by it
    source TEXT NOT NULL, line INTEGER NOT NULL, ekey TEXT NOT NULL
);
CREATE INDEX journal_events_key ON journal_events(ekey);
CREATE INDEX journal_events_source ON journal_events(source);
CREATE TABLE journal_copies(ekey TEXT PRIMARY KEY) WITHOUT ROWID;  -- the events found more than once""",
    "DROP TABLE IF EXISTS journal_events; DROP TABLE IF EXISTS journal_copies",
    derived_from=(f"{PROJECT_PREFIX}{journal.FOLDER}/",),
    forget=_forget))

TAIL = 4096  # bytes before the old end whose hash must be unchanged for a read to resume there
# what each domain keeps of the journal: put(index, source, events, whole)
CONSUMERS = (learning.put, episodes.put, traces.put, lifecycle.put)  # lifecycle after episodes


def with_traces(root: BankRoot, rels: Iterable[str]) -> list[str]:
    """The files to re-read after a write: each journal month file brings the month's run traces with
    it (a prompt appends its run there without touching the index, and a run that held episodes
    counts as their recall: the index takes them in as soon as anything is journaled)."""
    out = list(rels)
    for rel in out[:]:
        folder, _, name = rel.rpartition("/")
        if root.bank == "project" and folder == journal.FOLDER and name.endswith(".jsonl") \
                and os.path.isfile(root.file(f"{journal.TRACES}/{name}")):
            out.append(f"{journal.TRACES}/{name}")
    return out


def fingerprint(data: bytes, size: int) -> str:
    """The state the index keeps of a journal file read up to `size`: `<size>:<hash of its last bytes>`."""
    return f"{size}:{content_hash(data[max(0, size - TAIL):size])}"


def resume_at(data: bytes, known: str | None) -> int:
    """Where reading may start: the old length when the file only grew since, else 0 (read whole)."""
    size_text, _, tail = (known or "").partition(":")
    if not tail or not size_text.isdigit():
        return 0  # never read, or read before this rule (a whole-file hash)
    size = int(size_text)
    if not 0 < size < len(data) or data[size - 1:size] != b"\n":
        return 0
    return size if fingerprint(data, size) == known else 0


def put(index: Index, source: str, data: bytes, known: str | None) -> None:
    """What one changed journal file gives every domain, and its damaged lines as diagnostics."""
    start = resume_at(data, known)
    found, problems = journal.read(data, source, start, data.count(b"\n", 0, start) + 1)
    whole = start == 0
    _keys(index, source, found, whole)
    for consume in CONSUMERS:
        consume(index, source, found, whole)
    diagnostics(index, source, problems, whole)


def unreadable(index: Index, source: str, problem: Diagnostic) -> None:
    """A journal file that cannot be read gives nothing (and says why)."""
    _keys(index, source, [], True)
    for consume in CONSUMERS:
        consume(index, source, [], True)
    diagnostics(index, source, [problem], True)


WHOLE_RECOUNT = 5000  # identities touched at once above which every copy is counted again in one pass


def _keys(index: Index, source: str, found: list[journal.Event], whole: bool) -> None:
    """Each event's identity and line; the events found more than once kept apart (`journal_copies`),
    worked out again only for the identities this file had or has (doctor and `index:status` then
    read only those: ~17 ms a call at 100,000 events otherwise)."""
    db = index.db
    touched = {e.key for e in found}
    if whole:
        touched.update(k for (k,) in db.execute("SELECT DISTINCT ekey FROM journal_events WHERE source = ?", (source,)))
        db.execute("DELETE FROM journal_events WHERE source = ?", (source,))
    db.executemany("INSERT INTO journal_events(source, line, ekey) VALUES (?, ?, ?)",
                   [(source, e.line, e.key) for e in found])
    keys = list(touched)
    if len(keys) > WHOLE_RECOUNT:  # one pass over the index beats many look-ups
        db.execute("DELETE FROM journal_copies")
        db.execute("INSERT INTO journal_copies(ekey) SELECT ekey FROM journal_events GROUP BY ekey HAVING count(*) > 1")
        return
    for i in range(0, len(keys), 500):
        part = keys[i:i + 500]
        marks = ",".join("?" * len(part))
        copied = [(k,) for (k,) in db.execute(f"SELECT ekey FROM journal_events WHERE ekey IN ({marks})"
                                              " GROUP BY ekey HAVING count(*) > 1", part)]
        db.execute(f"DELETE FROM journal_copies WHERE ekey IN ({marks})", part)
        db.executemany("INSERT INTO journal_copies(ekey) VALUES (?)", copied)


def _original_first(source: str, line: int) -> tuple[bool, str, int]:
    """Which of an event's copies is the original: one in a month's own file (`2026-11.jsonl`) before
    one in any other file (`2026-11 (conflicted copy).jsonl`), then the first by file and line."""
    return not MONTH_FILE.fullmatch(source.rsplit("/", 1)[-1]), source, line


MONTH_FILE = re.compile(r"\d{4}-\d{2}\.jsonl")


def duplicates(index: Index) -> list[Diagnostic]:
    """For doctor: each journal file holding copies of events found elsewhere in the journal (a union
    merge, a sync tool's copy of a month file, a line pasted twice), one warning on its first copy."""
    found: dict[str, list[tuple[str, int]]] = {}
    for key, source, line in index.db.execute(
            "SELECT ekey, source, line FROM journal_events WHERE ekey IN (SELECT ekey FROM journal_copies)").fetchall():
        found.setdefault(key, []).append((source, line))
    copies: dict[str, list[tuple[int, str]]] = {}  # per file: (line, the original's file)
    for places in found.values():
        original, *rest = sorted(places, key=lambda p: _original_first(*p))
        for source, line in rest:
            copies.setdefault(source, []).append((line, original[0]))
    out = []
    for source, lines in sorted(copies.items()):
        lines.sort()
        originals = sorted({o for _, o in lines})
        if originals == [source]:
            what = ("repeat events on this file's earlier lines (a line pasted twice, or a merge); membank counts "
                    "each event once, and the repeated lines may be deleted")
        else:
            what = (f"repeat events already in {', '.join(o for o in originals if o != source)} (a sync tool's copy "
                    "of a month file, or a merge); membank counts each event once. If this file is a copy, it may be "
                    "deleted")
        out.append(Diagnostic(source, lines[0][0], WARNING, f"{len(lines)} journal line(s) here {what}",
                              DUPLICATE_EVENTS))
    return out


DUPLICATE_EVENTS = "DUPLICATE_EVENTS"


def diagnostics(index: Index, source: str, problems: list[Diagnostic], whole: bool) -> None:
    if whole:
        index.db.execute("DELETE FROM diagnostics WHERE source = ? AND origin = 'parse'", (source,))
    index.db.executemany(
        "INSERT INTO diagnostics(source, origin, line, severity, message, code) VALUES (?, 'parse', ?, ?, ?, ?)",
        [(d.source, d.line, d.severity, d.message, d.code) for d in problems])
