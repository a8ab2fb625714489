"""Runs and their traces (episodes.md): every `context:assemble` journals a `run`; feedback on it is
journaled beside it. The index keeps where each line about a run is (file, line, byte offset), and
a trace is read back from the journal itself, so it survives any rebuild.

A run just assembled may not be indexed yet (its line is appended without touching the index); then
the journal files are searched for its id, newest first."""

from __future__ import annotations

import json
import os
from typing import Any

from ...files import journal
from ...files.reader import Unreadable, read_regular
from ...files.scan import PROJECT_PREFIX
from ...files.write import check_inside
from ...index import Index
from ...index.schema import DomainSchema, register
from ...kernel.errors import NOT_FOUND, MembankError
from ..contract import Bank
from .episode import clean

RUN, VERDICT = "run", "trace-feedback"

register(DomainSchema(
    "episodes.traces", 3,
    """CREATE TABLE traces(              -- where each journal line about a run is
    source TEXT NOT NULL, line INTEGER NOT NULL, offset INTEGER NOT NULL, at TEXT NOT NULL,
    event TEXT NOT NULL, run_id TEXT NOT NULL, verdict TEXT,  -- a trace-feedback's verdict
    ekey TEXT NOT NULL                 -- the event's identity: copies of one event are read once
);
CREATE INDEX traces_run ON traces(run_id, at);
CREATE INDEX traces_source ON traces(source);""",
    "DROP TABLE IF EXISTS traces",
    derived_from=(f"{PROJECT_PREFIX}{journal.FOLDER}/",),
    forget="DELETE FROM traces WHERE source = ?"))


def run_of(event: dict[str, Any]) -> str | None:
    """The run a journal event is about, if any."""
    found = event.get("runId")
    if not isinstance(found, str) and isinstance(event.get("episode"), dict):
        found = event["episode"].get("runId")
    return found if isinstance(found, str) and found else None


def put(index: Index, source: str, found: list[journal.Event], whole: bool) -> None:
    if whole:
        index.db.execute("DELETE FROM traces WHERE source = ?", (source,))
    index.db.executemany(
        "INSERT INTO traces(source, line, offset, at, event, run_id, verdict, ekey) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(source, e.line, e.offset, e.data["at"], e.data["event"], run,
          e.data.get("verdict") if e.data.get("verdict") in ("correct", "incorrect") else None, e.key) for e in found
         if isinstance(e.data.get("at"), str) and (run := run_of(e.data)) is not None])


def confirmed_runs(index: Index) -> set[str]:
    """Runs whose latest verdict is `correct`: the writer confirmed what they held, and their episodes
    are never evicted."""
    latest: dict[str, str] = {}
    for run, verdict in index.db.execute("SELECT run_id, verdict FROM traces WHERE verdict IS NOT NULL"
                                         " ORDER BY at, source, line"):
        latest[run] = verdict
    return {run for run, verdict in latest.items() if verdict == "correct"}


def _journal_files(bank: Bank) -> list[str]:
    """The project's journal files (paths under the bank), the run traces first, each newest month
    first; none from a folder that is a link out of the bank (what is there is not the project's)."""
    out = []
    for rel_folder in (journal.TRACES, journal.FOLDER):
        folder = bank.project.path / rel_folder
        try:
            check_inside(bank.project.path, folder, bank.project.source)
            names = os.listdir(folder)
        except (OSError, MembankError):
            continue
        out += [f"{rel_folder}/{n}" for n in sorted((n for n in names if n.endswith(".jsonl")), reverse=True)]
    return out


def read_journal(bank: Bank, rel: str) -> bytes | None:
    """A journal file's bytes (None when it cannot be read, or is not the bank's own)."""
    try:
        check_inside(bank.project.path, bank.project.file(rel), bank.project.source)
        data, _ = read_regular(bank.project.file(rel), None, follow_links=False)
    except (OSError, Unreadable, MembankError):
        return None
    return data


def line_at(data: bytes, offset: int) -> dict[str, Any] | None:
    """The event on the line starting at `offset`, or None when it is not one there (the file changed)."""
    end = data.find(b"\n", offset)
    try:
        event = json.loads(data[offset:end if end >= 0 else len(data)])
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) else None


def _indexed(bank: Bank, run_id: str) -> list[journal.Event] | None:
    """The run's lines where the index says they are; None when it does not know the run or a line is
    no longer where it was (the file changed since: the journal is searched instead)."""
    with bank.index.lock:
        rows = bank.index.db.execute("SELECT source, line, offset, ekey FROM traces WHERE run_id = ?"
                                     " ORDER BY at, source, line",
                                     (run_id,)).fetchall()
    if not rows:
        return None
    files: dict[str, bytes | None] = {}
    found = []
    for source, line, offset, key in rows:
        rel = bank.project.rel(source)
        if rel is None:
            return None
        if rel not in files:
            files[rel] = read_journal(bank, rel)
        data = files[rel]
        event = line_at(data, offset) if data is not None else None
        if event is None or run_of(event) != run_id:
            return None
        found.append(journal.Event(source, line, event, offset, key))
    return found if any(e.data.get("event") == RUN for e in found) else None


def _searched(bank: Bank, run_id: str) -> list[journal.Event]:
    """The run's lines found by reading the journal, the traces first, newest file first; once the run
    is found, no file of an earlier month is read (feedback is never older than its run)."""
    needle = json.dumps(run_id, ensure_ascii=False).encode("utf-8")
    found: list[journal.Event] = []
    month: str | None = None  # the run's month, once found
    for rel in _journal_files(bank):
        if month is not None and rel.rsplit("/", 1)[-1][:7] < month:
            continue
        data = read_journal(bank, rel)
        if data is None or needle not in data:
            continue
        lines = []
        at = data.find(needle)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            lines.append((start, end))
            at = data.find(needle, end)
        source = bank.project.source(rel)
        here = []
        for start, end in lines:
            events, _ = journal.read(data, source, start, data.count(b"\n", 0, start) + 1, end)
            here += [e for e in events if run_of(e.data) == run_id]
        found += here
        runs = [e for e in here if e.data.get("event") == RUN]
        if runs and month is None:
            month = str(runs[0].data.get("at"))[:7]
    found.sort(key=lambda e: (str(e.data.get("at")), e.source, e.line))
    return found


def lines(bank: Bank, run_id: str) -> list[journal.Event]:
    """Every journal line about a run, oldest first, the run itself first, each event once however many
    copies of it the journal holds (a union merge, a sync tool's copy); NOT_FOUND for an unknown run."""
    found = _indexed(bank, run_id)
    if found is None:
        found = _searched(bank, run_id)
    seen: set[str] = set()
    found = [e for e in found if not (e.key in seen or seen.add(e.key))]  # the first of each event's copies
    runs = [e for e in found if e.data.get("event") == RUN]
    if not runs:
        raise MembankError(NOT_FOUND, f"no run `{run_id[:80]}` in this project's journal", {"runId": run_id[:200]})
    return [runs[0]] + [e for e in found if e is not runs[0]]


def _feedback(e: journal.Event) -> dict[str, Any] | None:
    """One line of feedback on a run, as a trace lists it (values of the wrong type read as null)."""
    d, out = e.data, {"at": clean("text", e.data.get("at")), "source": e.cite}
    kind = d.get("event")
    if kind == VERDICT:
        verdict = d.get("verdict") if d.get("verdict") in ("correct", "incorrect") else None
        return {**out, "kind": "verdict", "verdict": verdict, "reason": clean("text", d.get("reason"))}
    episode = d.get("episode") if isinstance(d.get("episode"), dict) else None
    if kind == "feedback":
        item = {**out, "kind": "skill" if episode else "preference", "action": clean("text", d.get("action")),
                "signalKey": clean("text", d.get("signalKey")), "ignored": clean("text", d.get("ignored"))}
        if episode:
            item.update(episodeId=clean("text", episode.get("id")), signal=clean("text", episode.get("implicitSignal")),
                        weight=clean("number", episode.get("signalWeight")))
        return item
    if kind == "episode" and episode:
        return {**out, "kind": "episode", "action": clean("text", episode.get("action")), "episodeId": clean("text", episode.get("id")),
                "signal": clean("text", episode.get("implicitSignal")), "weight": clean("number", episode.get("signalWeight"))}
    if kind == "episode-updated":
        changes = d.get("changes") if isinstance(d.get("changes"), dict) else {}
        return {**out, "kind": "undo" if changes.get("action") == "undo" else "update",
                "action": clean("text", changes.get("action")), "episodeId": clean("text", d.get("episodeId")),
                "signal": clean("text", changes.get("implicitSignal")), "weight": clean("number", changes.get("signalWeight"))}
    return None


def _piece(p: dict[str, Any]) -> dict[str, Any]:
    return {"layer": clean("int", p.get("layer")), "kind": clean("text", p.get("kind")), "id": clean("text", p.get("id")),
            "source": clean("text", p.get("source")), "tokens": clean("int", p.get("tokens")), "score": clean("number", p.get("score"))}


def trace(bank: Bank, run_id: str) -> dict[str, Any]:
    """`memory:trace:get`: the run, every piece it injected, and all feedback on it."""
    found = lines(bank, run_id)
    run = found[0].data
    pieces = run.get("pieces") if isinstance(run.get("pieces"), list) else []
    return {"runId": run_id, "at": clean("text", run.get("at")), "source": found[0].cite, "skillId": clean("text", run.get("skillId")),
            "documentId": clean("text", run.get("documentId")), "stablePrefixHash": clean("text", run.get("stablePrefixHash")),
            "pieces": [_piece(p) for p in pieces if isinstance(p, dict)],
            "feedback": [f for e in found[1:] if (f := _feedback(e)) is not None]}


def skill_of(bank: Bank, run_id: str) -> tuple[str | None, str | None]:
    """(skillId, documentId) of a run; NOT_FOUND for an unknown run."""
    run = lines(bank, run_id)[0].data
    skill, document = run.get("skillId"), run.get("documentId")
    return (skill if isinstance(skill, str) else None), (document if isinstance(document, str) else None)


def cite(bank: Bank, rel: str, run_id: str, event: str) -> str:
    """The citation of the latest `event` line about a run in one journal file (just written)."""
    source = bank.project.source(rel)
    rows = bank.index.db.execute("SELECT max(line) FROM traces WHERE source = ? AND run_id = ? AND event = ?",
                                 (source, run_id, event)).fetchall()
    return f"{source}#L{rows[0][0]}" if rows and rows[0][0] else source
