"""The journal: append-only JSONL event logs under journal/, one file per month."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..kernel import clock
from ..kernel.errors import DB_ERROR, MembankError
from .conflicts import MERGE_CONFLICT, is_marker
from .records import ERROR, WARNING, Diagnostic
from .scan import PROJECT_PREFIX, TRACES
from .write import Cite, check_inside, make_folder, new_id

FOLDER = "journal"
# TRACES (from scan): run events, one line per assembled prompt, kept apart so that prompts make no
# tracked change (files.md, Git): the template's .gitignore leaves that folder out; a writer may track it.
ID = "eventId"  # every event's unique id: readers count an event once however many copies there are


@dataclass(frozen=True)
class Event:
    source: str
    line: int
    data: dict[str, Any]
    offset: int = 0  # the line's first byte in the file: a trace reads its lines back by offset
    key: str = ""  # the event's identity: its id, or (an event written before ids) its exact text
    @property
    def cite(self) -> str:
        """The event's citation, `.writenow/journal/2026-11.jsonl#L120`."""
        return f"{self.source}#L{self.line}"


def key_of(data: dict[str, Any], raw: bytes) -> str:
    """An event's identity (files.md, Git): its `eventId`; an older event without one, its exact text."""
    found = data.get(ID)
    if isinstance(found, str) and found:
        return "id:" + found
    return "text:" + hashlib.blake2b(raw.strip(), digest_size=16).hexdigest()


def month_file(at: str, folder: str = FOLDER) -> str:
    """The path under the bank of the month's file an event at `at` goes to."""
    return f"{folder}/{at[:7]}.jsonl"


def encode(event: dict[str, Any], raw: dict[str, str] | None = None) -> str:
    """The event's line (without its newline): JSON, keys sorted. `raw`: fields already encoded as
    `json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)` gives them (keys that
    `event` does not have), placed among the others as that would place them: the same bytes as
    encoding the whole event, for a caller that keeps the encoding of parts that repeat."""
    if not raw:
        return json.dumps(event, ensure_ascii=False, sort_keys=True, allow_nan=False)
    fields = {k: json.dumps(v, ensure_ascii=False, sort_keys=True, allow_nan=False) for k, v in event.items()}
    fields.update(raw)
    return "{" + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {fields[k]}" for k in sorted(fields)) + "}"


def append(bank_folder: Path, event: dict[str, Any], cite: Cite = lambda rel: PROJECT_PREFIX + rel,
           durable: bool = True, folder: str = FOLDER, raw: dict[str, str] | None = None) -> str:
    """Append one event as one line (a single write, then fsync); returns the journal file's path under the bank.
    The event gets a unique `eventId` unless it has one. `folder`: `TRACES` for a run. `raw`: fields of
    the event already encoded (`encode`).

    Refused (a MembankError, nothing written) when a link leads the journal out of the bank or the
    month's file is not a regular file."""
    at = event.setdefault("at", clock.now_precise())
    event.setdefault(ID, new_id("e"))
    rel = month_file(at, folder)
    path = bank_folder / rel
    line = (encode(event, raw) + "\n").encode("utf-8")
    check_target(bank_folder, at, cite, folder)
    # O_NONBLOCK: a FIFO planted under the name must not hang the write; it is refused below.
    # O_NOFOLLOW: a link swapped in after the check is refused too, where the system has it.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_NONBLOCK", 0)
                 | getattr(os, "O_NOFOLLOW", 0), 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MembankError(DB_ERROR, f"could not write the journal: {cite(rel)} is not a regular file; nothing "
                               "was written (remove it)", {"source": cite(rel)})
        if os.fstat(fd).st_size and not _ends_with_newline(fd):
            line = b"\n" + line  # a torn last line stays alone on its line; it is skipped when read
        os.write(fd, line)
        if durable:  # a trace (context:assemble's run) is not worth an fsync per prompt
            os.fsync(fd)
    finally:
        os.close(fd)
    return rel


def check_target(bank_folder: Path, at: str | None = None,
                 cite: Cite = lambda rel: PROJECT_PREFIX + rel, folder: str = FOLDER) -> str:
    """Refuse (a MembankError, nothing written) what `append` would refuse for an event at `at`
    (now by default): a link leading the journal out of the bank, a month's file that is not a
    regular file. Makes the folder; returns the file's path under the bank. Callers that change
    other files before journalling call it first: validate first, write second."""
    rel = month_file(at or clock.now_precise(), folder)
    path = bank_folder / rel
    plain, st = _plain_way(bank_folder, rel)
    if not plain:  # a step missing or a link on the way: made, or refused as `check_inside` says
        make_folder(bank_folder, path.parent, cite)
        check_inside(bank_folder, path, cite)  # the month's file may itself be a link
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return rel
    if st is None:
        return rel
    if not stat.S_ISREG(st.st_mode):
        raise MembankError(DB_ERROR, f"could not write the journal: {cite(rel)} is not a regular file; nothing "
                           "was written (remove it)", {"source": cite(rel)})
    if st.st_nlink > 1:  # a hard link: the same file may live outside the bank, where git and privacy do not reach
        raise MembankError(DB_ERROR, f"could not write the journal: {cite(rel)} has another name (a hard link) "
                           "that may be outside the bank; nothing was written (copy it to a plain file)",
                           {"source": cite(rel)})
    return rel


def _plain_way(bank_folder: Path, rel: str) -> tuple[bool, os.stat_result | None]:
    """(True, the month's file's `lstat`, None when it is not there yet) when every folder from the bank folder
    to it is a folder, not a link: then `check_inside` passes and `make_folder` has nothing to make (no step
    can lead out of the bank), at one `lstat` a step rather than every link on the way resolved twice (a
    prompt's trace asks each time). (False, None) otherwise: the caller makes the folders and checks the way
    in full."""
    at = str(bank_folder)
    steps = rel.split("/")
    if any(step in ("", ".", "..") for step in steps):
        return False, None
    st = None
    for i, step in enumerate(steps):
        at = f"{at}/{step}"
        try:
            st = os.lstat(at)
        except FileNotFoundError:
            return i == len(steps) - 1, None
        except OSError:
            return False, None
        if getattr(st, "st_reparse_tag", 0) or (i < len(steps) - 1 and not stat.S_ISDIR(st.st_mode)):
            return False, None  # a Windows junction (a folder to lstat), a link, or a file where a folder goes
    return (False, None) if st is None or stat.S_ISLNK(st.st_mode) else (True, st)


def _ends_with_newline(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return os.pread(fd, 1, size - 1) == b"\n"


def read(data: bytes, source: str, start: int = 0, first_line: int = 1,
         end: int | None = None) -> tuple[list[Event], list[Diagnostic]]:
    """Events of one journal file, from byte `start` (the start of line `first_line`: what was read
    before is not read again) to `end`. A torn line (a crash mid-write) or any other unreadable line is
    skipped with a warning; git conflict markers (a merge without the union attribute) are an error,
    once per read, and every event on either side of them counts (each once, by its id)."""
    events: list[Event] = []
    problems: list[Diagnostic] = []
    number, at, end = first_line - 1, start, len(data) if end is None else end
    while at < end:
        stop = data.find(b"\n", at, end)
        last = stop < 0 and end == len(data)  # no newline after it: it was never finished
        stop = end if stop < 0 else stop
        offset, raw, at = at, data[at:stop], stop + 1
        number += 1
        if offset == 0:
            raw = raw.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark an editor saved the file with
        if not raw.strip():
            continue
        if is_marker(raw):
            if not any(p.code == MERGE_CONFLICT for p in problems):
                problems.append(Diagnostic(source, number, ERROR, CONFLICTED, MERGE_CONFLICT))
            continue
        try:
            value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
            if not _well_formed(value):
                raise ValueError("not an event")
        except (UnicodeDecodeError, ValueError, RecursionError):
            # a warning either way: a torn line stays torn after later appends, and the writer has
            # nothing to fix in membank's own log
            what = "was cut off (membank stopped while writing it)" if last else "is cut off or damaged"
            problems.append(Diagnostic(source, number, WARNING, f"this journal line {what}; it is skipped"))
            continue
        if not value["at"].endswith("Z"):  # a hand-written offset (`+02:00`, summer time) or no zone: UTC, as
            value["at"] = _utc(value["at"])  # membank writes it, so that times compare as text everywhere
        events.append(Event(source, number, value, offset, key_of(value, raw)))
    return events, problems


CONFLICTED = ("this journal file holds git conflict markers (<<<<<<<, =======, >>>>>>>) left by a merge without "
              "`merge=union` for the journal; membank counts every event of both sides once and skips the marker "
              "lines: delete the marker lines and save (and run `membank git-setup` so that the next merge keeps "
              "both sides by itself)")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number membank writes")  # NaN, Infinity: a damaged line


# Each field the index takes from an event, and the values membank itself writes there
_OPTIONAL_TEXT = ("at", "signalKey", "runId", "evidence", "skillId", "memoryId")


def _well_formed(value: Any) -> bool:
    """An event as membank writes it: a line with another shape is damaged, never half-counted
    (a NaN or text weight would poison every later sum for its signal)."""
    if not isinstance(value, dict) or not isinstance(value.get("event"), str) or not _time(value.get("at")):
        return False  # a time that is no time would sort after every real one (escaping a clear, say)
    if any(value.get(k) is not None and not _text(value[k]) for k in _OPTIONAL_TEXT):
        return False
    weight = value.get("weight")
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, (int, float))
                               or not 0 <= weight <= 1):
        return False  # membank writes 1 or 0.5; NaN and infinities fail the comparison, huge ints too
    tags = value.get("tags")
    return tags is None or (isinstance(tags, list) and all(_text(t) for t in tags))


def _time(value: Any) -> bool:
    """An ISO time, as membank writes `at` (`2026-11-27T10:00:00.000000Z`; a hand-written date or offset too)."""
    if not isinstance(value, str) or len(value) < 10 or value[4:5] != "-":
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _utc(at: str) -> str:
    """An ISO time in UTC as membank writes it (`2026-11-27T08:00:00.000000Z`); one without a zone is UTC."""
    moment = datetime.fromisoformat(at)
    if moment.tzinfo is not None:
        moment = moment.astimezone(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _text(value: Any) -> bool:
    """Text the index can store: a `\\ud800` escape in JSON gives a string UTF-8 cannot carry."""
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


COUNTED = ("feedback", "preferences-cleared", "learned")
RETRACTED = "episode-updated"  # an undo within the window takes its accept's feedback back


def rows(events: list[Event]) -> list[dict[str, Any]]:
    """The events that count for learning, as index rows (ignored feedback stays for audit only). An
    undo that takes back an accept's feedback counts as that feedback's weight, negative."""
    out = []
    for e in events:
        d = e.data
        if not isinstance(d.get("at"), str):
            continue
        if d["event"] == RETRACTED:
            taken = _retracted(d.get("retracts"))
            if taken is not None:
                out.append({"source": e.source, "line": e.line, "at": d["at"], "event": "feedback", "key": taken[0],
                            "weight": -taken[1], "run_id": d.get("runId"), "evidence": None, "tags": "[]",
                            "ekey": e.key})
            continue
        if d["event"] not in COUNTED or (d["event"] == "feedback" and d.get("ignored")):
            continue
        tags = d.get("tags")
        out.append({
            "source": e.source, "line": e.line, "at": d["at"], "event": d["event"],
            "key": d.get("signalKey"), "weight": float(d.get("weight") or 0), "run_id": d.get("runId"),
            "evidence": d.get("evidence"), "tags": json.dumps(tags if isinstance(tags, list) else [], ensure_ascii=False),
            "ekey": e.key,
        })
    return out


def _retracted(value: Any) -> tuple[str, float] | None:
    """(signal key, weight) of the feedback an undo takes back, when the event names one membank could write."""
    if not isinstance(value, dict) or not _text(value.get("signalKey")):
        return None
    weight = value.get("weight")
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 < weight <= 1:
        return None
    return value["signalKey"], float(weight)
