"""The journal: append-only JSONL event logs under journal/, one file per month."""

from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .records import WARNING, Diagnostic

FOLDER = "journal"


@dataclass(frozen=True)
class Event:
    source: str
    line: int
    data: dict[str, Any]


def now_precise() -> str:
    """UTC time with microseconds: events within one second must still order."""
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def append(bank_folder: Path, event: dict[str, Any]) -> str:
    """Append one event as one line (a single write, then fsync); returns the journal file's path under the bank."""
    at = event.setdefault("at", now_precise())
    rel = f"{FOLDER}/{at[:7]}.jsonl"
    path = bank_folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    line = (json.dumps(event, ensure_ascii=False, sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if os.fstat(fd).st_size and not _ends_with_newline(fd):
            line = b"\n" + line  # a torn last line stays alone on its line; it is skipped when read
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)
    return rel


def _ends_with_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return os.pread(fd, 1, size - 1) == b"\n"


def read(data: bytes, source: str) -> tuple[list[Event], list[Diagnostic]]:
    """Events of one journal file. A torn line (a crash mid-write) or any other unreadable line is
    skipped with a warning."""
    events: list[Event] = []
    problems: list[Diagnostic] = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        last = number == len(lines)  # no newline after it: it was never finished
        try:
            value = json.loads(raw.decode("utf-8"))
            if not isinstance(value, dict) or not isinstance(value.get("event"), str):
                raise ValueError("not an event")
        except (UnicodeDecodeError, ValueError):
            # a warning either way: a torn line stays torn after later appends, and the writer has
            # nothing to fix in membank's own log
            what = "was cut off (membank stopped while writing it)" if last else "is cut off or damaged"
            problems.append(Diagnostic(source, number, WARNING, f"this journal line {what}; it is skipped"))
            continue
        events.append(Event(source, number, value))
    return events, problems


COUNTED = ("feedback", "preferences-cleared", "learned")


def rows(events: list[Event]) -> list[dict[str, Any]]:
    """The events that count for learning, as index rows (ignored feedback stays for audit only)."""
    out = []
    for e in events:
        d = e.data
        if d["event"] not in COUNTED or (d["event"] == "feedback" and d.get("ignored")) or not isinstance(d.get("at"), str):
            continue
        tags = d.get("tags")
        out.append({
            "source": e.source, "line": e.line, "at": d["at"], "event": d["event"],
            "key": d.get("signalKey"), "weight": float(d.get("weight") or 0), "run_id": d.get("runId"),
            "evidence": d.get("evidence"), "tags": json.dumps(tags if isinstance(tags, list) else [], ensure_ascii=False),
        })
    return out
