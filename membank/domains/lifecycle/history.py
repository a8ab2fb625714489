"""Compact history (episodes.md, "History: full → compact"): `history/YYYY-MM.md`, one section per
document and week, each run on one line with a back-reference to its full journal line.

`render` is pure: the same runs give the same bytes, so the weekly trigger rewrites a month's file
only when something in it changed (re-running it changes nothing). A file carries a mark (a hash of the
rest): a file the writer edited, or a new text listing fewer runs (a clock set back), is never put in
its place (files.md, Time): the weekly run reports it as `kept`. Lines carry no manuscript or
model text: the skill, what the writer did, the signal, the cards the prompt held, and the app's
one-line summary (left out in privacy mode)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Callable

from ...files.conflicts import LEFT_OUT, MERGE_CONFLICT, conflict_line
from ...files.reader import Unreadable, read_regular
from ...files.records import ERROR, Diagnostic
from ...kernel.limits import MAX_FILE_BYTES

FOLDER = "history"
NO_DOCUMENT = "(no document)"
HEADING = re.compile(r"^## (.+) · week of (\d{4}-\d{2}-\d{2})$")


@dataclass(frozen=True)
class Entry:
    """One run (or an episode recorded without a run), as history shows it."""
    at: str  # journal time, `2026-11-18T14:02:07.123456Z`
    document: str | None
    skill: str | None
    action: str | None
    signal: str | None
    weight: float | None
    cards: tuple[str, ...]  # the names of the cards the prompt held
    summary: str | None
    cite: str  # `journal/2026-11.jsonl#L120`, under the bank


def _week(at: str) -> str:
    day = date.fromisoformat(at[:10])
    return (day - timedelta(days=day.weekday())).isoformat()  # its Monday


def _line(e: Entry) -> str:
    parts = [f"{e.at[:10]} {e.at[11:16]}", e.skill or "(no skill)", e.action or "no feedback"]
    if e.signal:
        parts.append(f"{e.signal} {e.weight:+.2f}" if e.weight is not None else e.signal)
    if e.cards:
        parts.append(", ".join(e.cards))
    if e.summary:
        parts.append(f"“{' '.join(e.summary.split())}”")
    return f"- {' · '.join(parts)} ([{e.cite}](../{e.cite}))"


def render(month: str, entries: list[Entry]) -> str:
    """A month's history file: sections by document (in order), then week; lines by time. Its mark
    (a hash of the rest) tells a file membank wrote from one the writer has edited since."""
    out = [f"# History, {month}", "",
           "Written by membank's weekly lifecycle trigger from the journal (`membank lifecycle weekly`);",
           "each line links to its full record. Once you edit this file membank leaves it as you made it",
           "(the weekly run reports it as `kept`); delete it to have membank write it again.", ""]
    sections: dict[tuple[str, str], list[Entry]] = {}
    for e in entries:
        sections.setdefault((e.document or NO_DOCUMENT, _week(e.at)), []).append(e)
    for (document, week), found in sorted(sections.items()):
        out += [f"## {document} · week of {week}", ""]
        out += [_line(e) for e in sorted(found, key=lambda e: (e.at, e.cite))]
        out.append("")
    body = "\n".join(out)
    return body.replace("\n\n", f"\n\n{_mark(body)}\n\n", 1)


MARK = re.compile(r"^<!-- membank history ([0-9a-f]{16}) -->\n\n", re.M)
LEGACY = "It is rewritten whole each time: edits here do not last."  # what files said before the mark
RUN_LINE = re.compile(r"^- .*\(\[[^\]]+#L\d+\]\(", re.M)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _mark(body: str) -> str:
    return f"<!-- membank history {_digest(body)} -->"


def written_by_membank(text: str) -> bool:
    """Whether a history file is as membank wrote it: its mark matches the rest of it (a file from before
    the mark, which told the writer edits do not last, counts as membank's)."""
    found = MARK.search(text)
    if found is None:
        return LEGACY in text
    return found.group(1) == _digest(text[:found.start()] + text[found.end():])


def runs_listed(text: str) -> int:
    return len(RUN_LINE.findall(text))


def replaceable(old: bytes, new: str) -> bool:
    """Whether membank may put `new` in place of a month's file `old`: never over the writer's edits,
    never with fewer runs (a clock set back sees fewer runs older than a week: files.md, Time)."""
    try:
        text = old.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return False
    return written_by_membank(text) and runs_listed(new) >= runs_listed(text)


def by_month(entries: list[Entry]) -> dict[str, list[Entry]]:
    months: dict[str, list[Entry]] = {}
    for e in entries:
        months.setdefault(e.at[:7], []).append(e)
    return months


@dataclass(frozen=True)
class Section:
    """One section of a history file, for a prompt: its heading's line cites it."""
    document: str
    week: str
    text: str
    source: str  # `.writenow/history/2026-11.md`
    line: int


def sections(text: str, source: str) -> list[Section]:
    """The sections of a history file, in file order."""
    found: list[Section] = []
    lines = text.split("\n")
    starts = [(i, m) for i, line in enumerate(lines) if (m := HEADING.match(line))]
    for n, (i, m) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        body = "\n".join(lines[i:end]).strip()
        found.append(Section(m.group(1), m.group(2), body, source, i + 1))
    return found


def latest(folder: Path, source_of: Callable[[str], str], document: str | None, count: int,
           read: Callable[[Path], str | None]) -> list[Section]:
    """The `count` latest sections: this document's first when it has any, else any document's."""
    try:
        names = sorted((n for n in folder.iterdir() if n.suffix == ".md" and re.fullmatch(r"\d{4}-\d{2}", n.stem)),
                       reverse=True)
    except OSError:
        return []
    everything: list[Section] = []
    for path in names[:3]:  # the last three months are plenty for a prompt
        text = read(path)
        if text is not None and conflict_line(text) is None:  # both machines' versions: in no prompt (files.md, Git)
            everything += sections(text, source_of(f"{FOLDER}/{path.name}"))
    everything.sort(key=lambda s: s.week, reverse=True)
    mine = [s for s in everything if s.document == document] if document else []
    return (mine or everything)[:count]


def conflicts(folder: Path, source_of: Callable[[str], str],
              seen: dict[str, tuple[tuple[int, int], int | None]]) -> list[Diagnostic]:
    """`MERGE_CONFLICT` on each month file a merge left markers in (both machines' weekly runs wrote it).
    `seen` keeps each file's (size, mtime) and marker line: a file is read again only when it changed."""
    try:
        names = sorted(n for n in folder.iterdir() if n.suffix == ".md" and re.fullmatch(r"\d{4}-\d{2}", n.stem))
    except OSError:
        return []
    out = []
    for path in names:
        try:
            st = path.stat()
            stamp = (st.st_size, st.st_mtime_ns)
            if path.name not in seen or seen[path.name][0] != stamp:
                data, _ = read_regular(path, MAX_FILE_BYTES, follow_links=False)  # what a prompt reads of it
                has = b"<<<<<<<" in data or b">>>>>>>" in data
                seen[path.name] = (stamp, conflict_line(data.decode("utf-8", "replace")) if has else None)
        except (OSError, Unreadable):
            continue
        marker = seen[path.name][1]
        if marker is not None:
            out.append(Diagnostic(source_of(f"{FOLDER}/{path.name}"), marker, ERROR, LEFT_OUT, MERGE_CONFLICT))
    return out


def cutoff(now: datetime) -> str:
    """Runs older than a week go into history."""
    return (now - timedelta(days=7)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
