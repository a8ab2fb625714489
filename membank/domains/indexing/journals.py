"""Journal files into the index: read again whole only when they changed other than by growing.

The journal is append-only, and a month's file grows with every prompt (a `run` per assembly), so
reading it whole after each append would cost more with every line. A journal file's state in the
index is its length and a hash of its last bytes; when the file is longer now and those bytes are
unchanged (and ended a line), only what follows is read. Anything else (a file rewritten without
label text in privacy mode, edited by hand, shortened) is read whole and replaces what it gave."""

from __future__ import annotations

import os
from typing import Iterable

from ...files import journal
from ...files.reader import content_hash
from ...files.records import Diagnostic
from ...files.scan import BankRoot
from ...index import Index
from ..episodes import store as episodes, traces
from ..lifecycle import runs as lifecycle
from ..learning import events as learning

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
    for consume in CONSUMERS:
        consume(index, source, found, whole)
    diagnostics(index, source, problems, whole)


def unreadable(index: Index, source: str, problem: Diagnostic) -> None:
    """A journal file that cannot be read gives nothing (and says why)."""
    for consume in CONSUMERS:
        consume(index, source, [], True)
    diagnostics(index, source, [problem], True)


def diagnostics(index: Index, source: str, problems: list[Diagnostic], whole: bool) -> None:
    if whole:
        index.db.execute("DELETE FROM diagnostics WHERE source = ? AND origin = 'parse'", (source,))
    index.db.executemany(
        "INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, 'parse', ?, ?, ?)",
        [(d.source, d.line, d.severity, d.message) for d in problems])
