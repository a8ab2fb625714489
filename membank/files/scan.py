"""Finding a bank's files: roots, citations (sources), and a stat-only walk."""

from __future__ import annotations

import errno
import operator
import os
import re
import stat as stat_
from dataclasses import dataclass
from pathlib import Path

from .exchange import TEMP_SUFFIX
from .reader import LOOP, kind_of, not_regular, why
from .records import ERROR, WARNING, Diagnostic

SECTIONS = ("memories", "characters", "world", "skills")
JOURNAL = "journal"
TRACES = f"{JOURNAL}/traces"  # run events: left out of git by the template's .gitignore (files.md, Git)
PROJECT_PREFIX = ".writenow/"
GLOBAL_PREFIX = "global:"
_TEMP = re.compile(r"(~|\.swp|\.swx|\.swo|\.tmp|\.bak|\.membank-tmp)$|^4913$|^\.goutputstream-|^\.#|^#.*#$")


@dataclass(frozen=True)
class BankRoot:
    """One bank folder: the project's `.writenow/` or the global bank."""

    bank: str  # "project" | "global"
    path: Path

    def source(self, rel: str) -> str:
        """The citation for a POSIX path relative to this bank's folder."""
        return (PROJECT_PREFIX if self.bank == "project" else GLOBAL_PREFIX) + rel

    def rel(self, source: str) -> str | None:
        prefix = PROJECT_PREFIX if self.bank == "project" else GLOBAL_PREFIX
        return source[len(prefix):] if source.startswith(prefix) else None

    def file(self, rel: str) -> Path:
        return self.path / rel


UNKNOWN_SIZE = -2  # a FileStat's size when the scan was told not to ask (never a file's, nor -1: unreadable)


@dataclass(frozen=True)
class FileStat:
    source: str
    rel: str  # POSIX path relative to the bank folder, e.g. memories/style/short.md
    section: str
    size: int
    mtime_ns: int

    def __init__(self, source: str, rel: str, section: str, size: int, mtime_ns: int) -> None:
        # every command's sync makes one per bank file (~11,700 at 10,000 memories): the generated
        # __init__ of a frozen class calls object.__setattr__ per field, twice this one's cost; the
        # instance stays frozen (assignment raises), equal, hashed and shown as the generated methods do
        d = self.__dict__
        d["source"], d["rel"], d["section"], d["size"], d["mtime_ns"] = source, rel, section, size, mtime_ns


def is_temporary(name: str) -> bool:
    """Editor swap, backup and temporary files: vim's `~`, `.swp` and `4913`, gedit's `.goutputstream-*`, …"""
    return bool(_TEMP.search(name))


def is_ignored(name: str) -> bool:
    """Editor swap and backup files, hidden files, anything not Markdown."""
    return name.startswith(".") or bool(_TEMP.search(name)) or not name.lower().endswith(".md")


def _inside(path: Path | str, root: Path) -> bool:
    try:
        Path(path).resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):  # RuntimeError: a link loop, on Pythons before 3.13
        return False
    return True


def readable_name(rel: str) -> bool:
    """False when a path holds a name that is not UTF-8 (Python keeps its bytes as lone surrogates,
    which neither JSON nor SQLite text can carry)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(rel: str) -> str:
    """A path with its undecodable bytes written as \\xff (lone surrogates as \\udc80), for a citation."""
    return "".join(f"\\x{ord(c) - 0xDC00:02x}" if 0xDC80 <= ord(c) <= 0xDCFF
                   else f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in rel)


SKIPPED = "membank skips it"
_SOURCE = operator.attrgetter("source")


def _bad_name(root: BankRoot, rel: str, folder: bool) -> Diagnostic:
    what, then = ("folder", "membank does not look inside it") if folder else ("file", "membank skips it")
    return Diagnostic(root.source(shown(rel)), 1, ERROR, f"the name of this {what} is not valid UTF-8 text (it was "
                      f"probably made on a system with another character set); {then} until it is renamed")


def _problem(root: BankRoot, rel: str, message: str) -> Diagnostic:
    return Diagnostic(root.source(rel), 1, ERROR, f"{message}; {SKIPPED}")


def scan(root: BankRoot, sizes: bool = True, temps: list[str] | None = None) -> tuple[list[FileStat], list[Diagnostic]]:
    """Every Markdown file in the bank's sections, by stat alone; links out of the bank, link loops,
    FIFOs, sockets, devices and names that are not UTF-8 are refused with a diagnostic.

    Without `sizes`, an ordinary file's size and mtime are not asked for (UNKNOWN_SIZE, 0): a sync
    that reads every file (a cold index) has them from the read itself, and the stat per file was
    ~30 ms of a 10,000-file sync's single-threaded start. With `temps`, the paths of the hidden
    `*.membank-tmp` files the walk passes are added to it: the temporary-file sweep needs no walk of
    its own over the sections (files/write.py `sweep_temps`)."""
    found: list[FileStat] = []
    problems: list[Diagnostic] = []
    for section in SECTIONS:
        base = root.path / section
        if base.is_symlink():
            problems.append(_problem(root, section, LOOP) if _loops(base) else _link_problem(root, section, base))
        elif base.is_dir():
            _walk(root, base, section, found, problems, sizes, temps)
    if root.bank == "project":
        found.extend(_journal(root, problems))
    found.sort(key=_SOURCE)
    return found, problems


def _journal(root: BankRoot, problems: list[Diagnostic]) -> list[FileStat]:
    """The project's journal files (`journal/*.jsonl` and the run traces, `journal/traces/*.jsonl`),
    written by membank itself. A month's file that is not an ordinary file (a folder, a link, a FIFO)
    is reported: its events would otherwise vanish without a word."""
    found = []
    for folder_rel in (JOURNAL, TRACES):
        folder = root.path / folder_rel
        try:
            lst = os.lstat(folder)
        except OSError:
            continue
        if not stat_.S_ISDIR(lst.st_mode):
            what = "a link" if stat_.S_ISLNK(lst.st_mode) else kind_of(lst.st_mode) or "a file"
            problems.append(Diagnostic(root.source(folder_rel), 1, ERROR, f"this should be the folder of membank's "
                                       f"journal files, but it is {what}: {JOURNAL_UNREAD}"))
            continue
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.name.endswith(".jsonl") or entry.name.startswith("."):
                continue
            rel = f"{folder_rel}/{entry.name}"
            if not readable_name(rel):
                problems.append(_bad_name(root, rel, folder=False))
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # gone since the listing
            if stat_.S_ISREG(st.st_mode):
                found.append(FileStat(root.source(rel), rel, JOURNAL, st.st_size, st.st_mtime_ns))
            else:
                problems.append(_journal_problem(root, rel, st.st_mode))
    return found


JOURNAL_UNREAD = ("the events it holds (feedback, episodes, runs) are not read, and membank cannot write there; "
                  "put the journal file back in its place (a folder's file moved out and the folder removed)")


def _journal_problem(root: BankRoot, rel: str, mode: int) -> Diagnostic:
    what = "a link" if stat_.S_ISLNK(mode) else kind_of(mode) or "a special file"
    return Diagnostic(root.source(rel), 1, ERROR, f"this journal file is {what}, not an ordinary file: {JOURNAL_UNREAD}")


def _loops(path: Path) -> bool:
    try:
        os.stat(path)
    except OSError as e:
        return e.errno == errno.ELOOP
    return False


def _link_problem(root: BankRoot, rel: str, path: Path) -> Diagnostic:
    if _inside(path, root.path):
        return Diagnostic(root.source(rel), 1, WARNING, "this is a link to a folder; membank does not follow "
                          "folder links, so the files in it are not read")
    return Diagnostic(root.source(rel), 1, ERROR, "this link leads outside the bank; membank only reads files "
                      "inside it, so it is skipped")


def _walk(root: BankRoot, base: Path, section: str, found: list[FileStat], problems: list[Diagnostic],
          sizes: bool = True, temps: list[str] | None = None) -> None:
    """Folders one after another (a stack, not recursion: a chain of 1,000 nested folders is fine)."""
    todo = [(base, section)]
    while todo:
        folder, rel = todo.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError as e:
            message = ("this folder's path is too long for the system to open" if e.errno == errno.ENAMETOOLONG
                       else "this folder cannot be read (check its permissions)")
            problems.append(Diagnostic(root.source(rel), 1, ERROR, message))
            continue
        prefix = root.source("")
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                if temps is not None and name.endswith(TEMP_SUFFIX):
                    temps.append(entry.path)
                continue
            child_rel = f"{rel}/{name}"
            try:
                # the common case, without the checks below: `x.md` is no temporary name (_TEMP's all end
                # otherwise or start with a dot), an ASCII name is UTF-8, the entry's type needs no call
                if name.endswith(".md") and name.isascii() and entry.is_file(follow_symlinks=False):
                    if not sizes:
                        found.append(FileStat(prefix + child_rel, child_rel, section, UNKNOWN_SIZE, 0))
                        continue
                    st = entry.stat(follow_symlinks=False)
                    found.append(FileStat(prefix + child_rel, child_rel, section, st.st_size, st.st_mtime_ns))
                    continue
                got = _entry(root, entry, child_rel, section)
            except OSError as e:  # the entry changed under us, or the system refused a look at it
                if e.errno in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone since the listing: the next sync sees it gone
                got = None if is_ignored(entry.name) else _problem(root, shown(child_rel), why(e))
            if isinstance(got, FileStat):
                found.append(got)
            elif isinstance(got, Diagnostic):
                problems.append(got)
                if temps is not None and entry.is_dir(follow_symlinks=False):
                    temps.append(entry.path)  # a folder not walked (a name not UTF-8): the sweep walks it
            elif got is not None:
                todo.append((Path(entry.path), child_rel))


def _entry(root: BankRoot, entry: os.DirEntry[str], rel: str, section: str) -> FileStat | Diagnostic | str | None:
    """One directory entry: a file to read, a problem, a folder to walk (its rel), or None (not ours)."""
    name = entry.name
    if entry.is_file(follow_symlinks=False):  # the common case first; the type comes from the entry: no open
        if is_ignored(name):
            return None
        if not readable_name(name):
            return _bad_name(root, rel, folder=False)
        st = entry.stat(follow_symlinks=False)
        return FileStat(root.source(rel), rel, section, st.st_size, st.st_mtime_ns)
    if entry.is_symlink():
        return _follow(root, rel, entry.path, section)
    if entry.is_dir(follow_symlinks=False):
        return rel if readable_name(name) else _bad_name(root, rel, folder=True)
    if is_ignored(name):
        return None
    if not readable_name(name):
        return _bad_name(root, rel, folder=False)
    # a FIFO, socket or device: never opened, so never waited on
    return _problem(root, rel, not_regular(kind_of(entry.stat(follow_symlinks=False).st_mode) or "a special file"))


def _follow(root: BankRoot, rel: str, path: str, section: str) -> FileStat | Diagnostic | None:
    """A link: refused when it leads out of the bank, loops, or leads to a folder (not followed) or to
    anything but an ordinary file; else the file it leads to, read under the link's name."""
    name = rel.rsplit("/", 1)[-1]
    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP and not is_temporary(name):
            return _problem(root, shown(rel), LOOP)
        return None  # a dangling link: there is nothing to read
    if stat_.S_ISDIR(st.st_mode):
        return _link_problem(root, shown(rel), Path(path))
    if is_ignored(name):
        return None
    if not readable_name(rel):
        return _bad_name(root, rel, folder=False)
    if not _inside(path, root.path):
        return _link_problem(root, rel, Path(path))
    what = kind_of(st.st_mode)
    if what is not None:
        return _problem(root, rel, not_regular(f"a link to {what}"))
    return FileStat(root.source(rel), rel, section, st.st_size, st.st_mtime_ns)


def examine(root: BankRoot, rel: str) -> FileStat | Diagnostic | None:
    """What a full scan would make of one path (`sync_paths` uses it for the watcher and after writes):
    the file to read, a problem to report under `shown(rel)`, or None (gone, a folder, not a bank file,
    or under a folder link, which the scan does not follow)."""
    parts = rel.split("/")
    if len(parts) < 2 or any(p.startswith(".") or not p for p in parts):
        return None
    if parts[0] == JOURNAL:
        return _journal_file(root, rel, parts)
    if parts[0] not in SECTIONS:
        return None
    path = root.file(rel)
    real_root = os.path.realpath(root.path)
    try:
        if os.path.realpath(path.parent) != os.path.join(real_root, *parts[:-1]):
            return None  # under a folder link (or the folder is gone)
        lst = os.lstat(path)
    except (OSError, ValueError):
        return None
    if stat_.S_ISLNK(lst.st_mode):
        return _follow(root, rel, str(path), parts[0])
    if stat_.S_ISDIR(lst.st_mode) or is_ignored(parts[-1]):
        return None
    if not readable_name(rel):
        return _bad_name(root, rel, folder=False)
    what = kind_of(lst.st_mode)
    if what is not None:
        return _problem(root, rel, not_regular(what))
    return FileStat(root.source(rel), rel, parts[0], lst.st_size, lst.st_mtime_ns)


def _journal_file(root: BankRoot, rel: str, parts: list[str]) -> FileStat | Diagnostic | None:
    """`examine` for the journal: as `_journal` lists it (project bank, `journal/` or `journal/traces/`,
    ordinary files; anything else under a month file's name is reported)."""
    if root.bank != "project" or not parts[-1].endswith(".jsonl") or "/".join(parts[:-1]) not in (JOURNAL, TRACES):
        return None
    if not readable_name(rel):
        return _bad_name(root, rel, folder=False)
    try:
        if any(os.path.islink(root.path / folder) for folder in ("/".join(parts[:i]) for i in range(1, len(parts)))):
            return None
        lst = os.lstat(root.file(rel))
    except (OSError, ValueError):
        return None
    if not stat_.S_ISREG(lst.st_mode):
        return _journal_problem(root, rel, lst.st_mode)
    return FileStat(root.source(rel), rel, JOURNAL, lst.st_size, lst.st_mtime_ns)
