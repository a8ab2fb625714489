"""A bank's two git files (files.md, Git): `.gitattributes` (the journal merges by union: two
machines' lines are both kept) and `.gitignore` (the index and the run traces stay out of git).

The template ships both. An existing project gets the missing lines only when the writer asks
(`membank git-setup`, `project:git:setup`): membank never changes a tracked file behind the
writer's back; doctor says what is missing and which command adds it. A writer who chose otherwise
(traces kept in git: `!journal/traces/`) is left alone: any line about the same pattern counts as
their decision."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ..kernel.errors import DB_ERROR, MembankError
from .records import WARNING, Diagnostic
from .write import Cite, atomic_write, check_inside

ATTRIBUTES, IGNORE = ".gitattributes", ".gitignore"
GIT_SETUP = "GIT_SETUP"  # the code of doctor's hint
COMMAND = "membank git-setup"


@dataclass(frozen=True)
class Wanted:
    file: str  # under the bank
    pattern: str  # what a line of the file starts with (a writer's own line about it counts)
    line: str  # the line membank adds
    comment: str  # said above it, and in doctor's hint
    needs: str = ""  # a word the writer's line must also hold to count (`merge`)
    covers: str = ""  # a path under the bank the writer's line must match to count (attributes: git's globs)


WANTED = (
    Wanted(ATTRIBUTES, "journal/", "journal/**/*.jsonl merge=union",
           "membank's journal: one event per line, each with its own id; two machines' lines are both kept at a "
           "merge instead of a conflict, and membank counts each event once", needs="merge",
           covers="journal/2026-11.jsonl"),
    Wanted(IGNORE, ".index", ".index/", "the search index, rebuilt from the files at any time"),
    Wanted(IGNORE, "journal/traces", "journal/traces/",
           "run traces: one line per prompt the assistant assembled, kept on this machine; to keep them in git, "
           "write !journal/traces/ instead"),
)


def has(text: str, wanted: Wanted) -> bool:
    """Whether a file's text already says something about `wanted`'s pattern (the writer's decision
    stands, whatever it is): a line starting with the pattern, `/pattern` or `!pattern`."""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        bare = line.lstrip("!").lstrip("/")
        if wanted.covers:
            pattern, *attributes = line.split(None, 1)
            if _matches(pattern, wanted.covers) and wanted.needs in "".join(attributes):
                return True
        elif bare.startswith(wanted.pattern) and (not wanted.needs or wanted.needs in line):
            return True
    return False


def _matches(pattern: str, path: str) -> bool:
    """Whether a `.gitattributes` pattern matches `path` (relative to the file's folder), after git's
    rules: without a slash it matches a name at any depth; `**/` is any number of folders; `*` and
    `?` stay within a folder name."""
    pattern = pattern.strip()
    if "/" not in pattern:
        path, pattern = path.rsplit("/", 1)[-1], pattern
    pattern = pattern.lstrip("/")
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        else:
            c = pattern[i]
            out, i = out + ("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)), i + 1
    return re.fullmatch(out, path) is not None


def with_lines(text: str, wanted: list[Wanted]) -> str:
    """`text` with each wanted line (and its comment) appended, everything already there kept as it is."""
    out = text if not text or text.endswith("\n") else text + "\n"
    for w in wanted:
        out += f"# {w.comment}\n{w.line}\n"
    return out


def missing(bank: Path) -> dict[str, list[Wanted]]:
    """The wanted lines each git file lacks (a file that cannot be read lacks them all)."""
    out: dict[str, list[Wanted]] = {}
    for file in (ATTRIBUTES, IGNORE):
        lacks = _lacking(os.path.join(bank, file))
        if lacks:
            out[file] = list(lacks)
    return out


# what each git file lacked, by path, with the stat it was read at: `index:status` asks on every call
# (the sidecar's round trip), and a file read again only when its stat moved
_LACKED: dict[str, tuple[tuple[int, ...] | None, tuple[Wanted, ...]]] = {}


def _lacking(path: str) -> tuple[Wanted, ...]:
    try:
        st = os.stat(path)
        seen: tuple[int, ...] | None = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) \
            if stat.S_ISREG(st.st_mode) else None
    except OSError:
        seen = None
    kept = _LACKED.get(path)
    if kept is not None and seen is not None and kept[0] == seen:
        return kept[1]
    name = os.path.basename(path)
    text = _text(Path(path)) if seen is not None else ""
    lacks = tuple(w for w in WANTED if w.file == name and not has(text, w))
    if len(_LACKED) > 64:  # many projects over a process's life: the memo stays small
        _LACKED.clear()
    _LACKED[path] = (seen, lacks)
    return lacks


def _text(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace") if path.is_file() else ""
    except OSError:
        return ""


def not_a_file(path: Path) -> str:
    """What stands at `path` when it is there and is not a regular file (a link followed): `a folder`,
    `a named pipe (FIFO)`, `a special file`; empty otherwise."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return ""
    if stat.S_ISREG(mode):
        return ""
    return "a folder" if stat.S_ISDIR(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a special file"


def in_git(bank: Path) -> bool:
    """Whether the bank is inside a git work tree (a `.git` folder or file at or above it)."""
    folder = os.path.realpath(bank)  # what Path.resolve() does, without a Path per folder
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def check(bank: Path, cite: Cite) -> list[Diagnostic]:
    """Doctor's hint for a project kept in git whose git files lack a line membank's files need."""
    if not in_git(bank):
        return []
    out = []
    for file, lines in sorted(missing(bank).items()):
        odd = not_a_file(bank / file)
        if odd:
            out.append(Diagnostic(cite(file), 1, WARNING, f"this project is kept in git, and this is {odd}, not a "
                                  f"text file, so git reads nothing from it; replace it with a file, then run "
                                  f"`{COMMAND}`", GIT_SETUP))
            continue
        said = "; ".join(f"`{w.line}` ({w.comment})" for w in lines)
        out.append(Diagnostic(cite(file), 1, WARNING, f"this project is kept in git, and this file lacks {said}; run "
                              f"`{COMMAND}` to add the line(s) (membank never changes it by itself)", GIT_SETUP))
    return out


def setup(bank: Path, cite: Cite) -> list[str]:
    """Add the missing lines (`membank git-setup`), keeping everything already there; the files
    written, as citations (none when nothing was missing)."""
    written: list[str] = []
    for file, lines in sorted(missing(bank).items()):
        path = bank / file
        check_inside(bank, path, cite)
        odd = not_a_file(path)
        if odd:  # a folder, or a FIFO that would hang the read: refused, naming it
            done = f"written before it: {', '.join(written)}" if written else "nothing was written"
            raise MembankError(DB_ERROR, f"could not add membank's lines to {cite(file)}: it is {odd}, not a text "
                               f"file; {done} (replace it with a file)", {"source": cite(file)})
        data = path.read_bytes() if os.path.lexists(path) else b""  # kept byte for byte, whatever its encoding
        gap = b"\n" if data and not data.endswith(b"\n") else b""
        atomic_write(path, data + gap + with_lines("", lines).encode("utf-8"))
        written.append(cite(file))
    return written
