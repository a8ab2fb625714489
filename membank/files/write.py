"""Writing bank files: atomic writes, the inside-the-bank check, stale temp files, names and ids."""

from __future__ import annotations

import os
import re
import stat as stat_
import string
import time
import unicodedata
from pathlib import Path
from typing import Callable, Collection, Iterable

from ..kernel.errors import CONFLICT, DB_ERROR, MembankError
from .exchange import KEPT_SUFFIX, TEMP_SUFFIX, Changed, fsync_dir, replace_unchanged, write_temp
from .reader import Unreadable, read_regular
from .frontmatter import MAX_FILE_BYTES
from ..kernel.log import log

_ID_ALPHABET = string.ascii_lowercase + string.digits
# A temporary file nobody has touched for this long belongs to a writer that died (kill -9, power
# loss): membank holds one for the milliseconds between writing and renaming it.
STALE_AFTER = 60.0
_TEMP_NAME = re.compile(r"^\.(?P<target>.+)\.[0-9a-f]{8}" + re.escape(TEMP_SUFFIX) + "$")

Cite = Callable[[str], str]  # a bank-relative POSIX path -> its citation (.writenow/…, global:…)


class LeavesBank(MembankError):
    """A write target that a link leads out of the bank: refused before anything is written.

    CONFLICT, not INVALID_ARGUMENT: the request is fine, the bank on disk is in a state membank
    will not write into (like a memory file that is a link); the writer fixes the link, then retries."""

    def __init__(self, source: str):
        super().__init__(CONFLICT, f"{source} is a link that leads outside the bank; membank writes only inside "
                         "the bank, so nothing was written (replace the link with a folder or file)",
                         {"source": source})


class LinkInBank(MembankError):
    """A write target reached through a link inside the bank: the reader never follows folder links
    (nor journal links), so a file written there would be invisible to membank, or read as another
    kind. Refused like a link out (CONFLICT), nothing written."""

    def __init__(self, source: str):
        super().__init__(CONFLICT, f"{source} is a link; membank neither reads nor writes through links in the "
                         "bank, so nothing was written (replace the link with the folder or file itself)",
                         {"source": source})


def new_id(prefix: str = "m") -> str:
    import secrets  # here: `random` and its imports are for writes, not every command

    return f"{prefix}-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12))


# names Windows gives to devices, with or without an extension: `con.md` there is the console, not a file
WINDOWS_DEVICES = re.compile(r"(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)( *\..*)?", re.IGNORECASE)


def kept_chars(text: str) -> str:
    """`text` with every character that is neither a letter, a digit nor a mark after one made `-`."""
    out: list[str] = []
    for ch in text:
        mark = unicodedata.category(ch) in ("Mn", "Mc")
        out.append(ch if ch.isalnum() or (mark and out and out[-1] != "-") else "-")
    return "".join(out)


def slug(text: str, limit: int = 60) -> str:
    """Letters and digits of any script kept, with the marks that belong to them (a Devanagari or Thai
    vowel sign is a mark, not a letter: without it `नमस्ते` would read `नमस-त`; a mark with no letter
    before it is not kept), everything else `-`; never a Windows device (a memory that reads "Con" is
    `con-1.md`, which a project cloned onto Windows can still check out)."""
    text = unicodedata.normalize("NFKC", text).lower()
    out = _head(text, limit)[:limit].strip("-") or "memory"
    return f"{out}-1" if WINDOWS_DEVICES.fullmatch(out) else out


def _head(text: str, limit: int) -> str:
    """`kept_chars(text)` with each run of `-` made one, less its leading `-`: read from the start of `text`
    only until more than `limit` characters are made (a character's fate depends on those before it
    alone, so that prefix is the whole answer's; the body of a memory is thousands of characters)."""
    if limit < 0:  # a cut from the end: the whole text
        return re.sub(r"-+", "-", kept_chars(text)).strip("-")
    n = 4 * limit + 16
    while True:
        out = re.sub(r"-+", "-", kept_chars(text[:n])).lstrip("-")
        if len(out) > limit or n >= len(text):
            return out
        n *= 4


def free_path(folder: Path, base: str) -> Path:
    """`folder/base.md`, or `base-2.md`, `base-3.md` … when taken."""
    candidate = folder / f"{base}.md"
    n = 2
    while os.path.lexists(candidate):  # a dangling link takes a name too
        candidate = folder / f"{base}-{n}.md"
        n += 1
    return candidate


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_inside(bank: Path, target: Path, cite: Cite) -> None:
    """Refuse (LeavesBank) when `target`, with every link on its way resolved (the file itself too,
    when it is a link), is not inside the bank folder `bank`; refuse (LinkInBank) any link below the
    bank folder on the way to it, since the reader would not follow it. Every writer calls this first.

    A link swapped in between this check and the write is not caught: membank does not open each
    folder on the way without following links."""
    real_bank = os.path.realpath(bank)
    try:
        parts = target.relative_to(bank).parts
    except ValueError:
        parts = (target.name,)
    if _within(os.path.realpath(target), real_bank):
        for n in range(1, len(parts) + 1):
            if bank.joinpath(*parts[:n]).is_symlink():
                raise LinkInBank(cite("/".join(parts[:n])))
        return
    for n in range(1, len(parts) + 1):  # name the first link on the way that leads out
        step = bank.joinpath(*parts[:n])
        if step.is_symlink() and not _within(os.path.realpath(step), real_bank):
            raise LeavesBank(cite("/".join(parts[:n])))
    raise LeavesBank(cite("/".join(parts)))


def make_folder(bank: Path, folder: Path, cite: Cite) -> None:
    """Create `folder` (and its parents) inside the bank, after checking no link leads it out."""
    check_inside(bank, folder, cite)
    folder.mkdir(parents=True, exist_ok=True)


def atomic_write(path: Path, data: bytes, *, exclusive: bool = False, sync_dir: bool = True) -> None:
    """Temporary file, fsync, rename: readers see the old file or the new one, never a torn one.

    With `exclusive`, refuses to replace a file that exists (FileExistsError). Without `sync_dir`, the
    caller fsyncs the folder once its files are all in place. The caller checks the target with
    `check_inside` first; a rewrite of a file someone may be editing goes through
    `exchange.replace_unchanged` instead."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp, _ = write_temp(path, data)
    try:
        if exclusive:
            os.link(tmp, path)  # fails if the name was taken meanwhile
            os.unlink(tmp)
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def rewrite_file(bank: Path, path: Path, cite: Cite, change: Callable[[bytes | None], bytes]) -> None:
    """Rewrite a file the writer may be editing (settings.yaml): `change` gets its bytes (None when
    there is none yet) and returns the new ones, which replace it only if it still holds what was
    read (else CONFLICT, the writer's save stays). Links out of the bank, links, and anything but a
    regular file are refused before anything is written."""
    rel = path.relative_to(bank).as_posix()
    check_inside(bank, path, cite)  # refuses the file itself when it is a link (replacing it would cut it)
    old: bytes | None = None
    if os.path.lexists(path):
        try:
            old = read_regular(path, MAX_FILE_BYTES + 1)[0]
        except Unreadable as e:  # DB_ERROR like any file that cannot be written
            raise MembankError(DB_ERROR, f"could not write {cite(rel)}: {e.message}; nothing was written",
                               {"source": cite(rel)}) from None
        if len(old) > MAX_FILE_BYTES:
            raise MembankError(DB_ERROR, f"{cite(rel)} is larger than 1 MiB, the most membank reads; fix it by hand "
                               "first", {"source": cite(rel)})
    new = change(old)
    try:
        if old is None:
            atomic_write(path, new, exclusive=True)
        else:
            replace_unchanged(path, new, old)
    except (Changed, FileExistsError):
        raise MembankError(CONFLICT, f"{cite(rel)} was changed on disk during the update; the writer's version "
                           "stays and nothing was written; retry", {"source": cite(rel)}) from None


def sweep_temps(bank: Path, older_than: float | None = None, now: float | None = None, skip: Collection[str] = (),
                found: Iterable[str] = ()) -> list[str]:
    """Clear membank temporary files (`.<name>.<hex>.membank-tmp`) left by a writer that was killed;
    returns their bank-relative paths. Hidden folders (`.index/`, `.git/`) are not entered: membank
    writes no temporary file there. `skip`: top-level folders another walk listed already (a sync's
    scan of the sections, files/scan.py), and `found`: the temporary files it saw there, looked at
    without a second walk of ~10,000 files, and the folders it did not enter (a name that is not
    UTF-8), walked here.

    Stale means neither written nor renamed for `older_than` seconds: max(mtime, ctime), since a swap
    gives the temporary name the file that was at the path, with that file's old mtime but a fresh
    ctime. One that can hold no word found nowhere else (`_disposable`: empty, its target gone, or the
    same bytes as its target) is deleted; any other may hold an editor's save swapped out by a writer
    killed before it swapped it back, so it is never deleted but renamed to
    `.<name>.<hex>.membank-kept` (hidden: neither swept nor indexed)."""
    cutoff = (time.time() if now is None else now) - (STALE_AFTER if older_than is None else older_than)
    cleared: list[str] = []
    stack = [bank]
    for path in found:
        try:
            st = os.lstat(path)
            if _TEMP_NAME.match(os.path.basename(path)) and stat_.S_ISREG(st.st_mode):
                _clear(bank, path, st, cutoff, cleared)
            elif stat_.S_ISDIR(st.st_mode):
                stack.append(Path(path))
        except OSError:
            continue  # gone meanwhile, or not ours to touch: the next sweep tries again
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not entry.name.startswith(".") and not (folder is bank and entry.name in skip):
                        stack.append(Path(entry.path))
                elif _TEMP_NAME.match(entry.name) and entry.is_file(follow_symlinks=False):
                    _clear(bank, entry.path, entry.stat(follow_symlinks=False), cutoff, cleared)
            except OSError:
                continue  # gone meanwhile, or not ours to touch: the next sweep tries again
    return sorted(cleared)


def _clear(bank: Path, path: str, st: os.stat_result, cutoff: float, cleared: list[str]) -> None:
    """One temporary file: deleted or set aside when stale (`sweep_temps`), else left."""
    if max(st.st_mtime, st.st_ctime) >= cutoff:
        return
    if _disposable(Path(path), st.st_size):
        os.unlink(path)
    else:
        _set_aside(Path(path))
    cleared.append(Path(path).relative_to(bank).as_posix())


def _disposable(tmp: Path, size: int) -> bool:
    """Whether a stale temporary file can hold no word that is not elsewhere: empty (half-written), its
    target gone (a create that never landed: nothing ever stood under that name), or its target holding
    the same bytes. Anything else may be an editor's save a killed writer swapped out."""
    if size == 0:
        return True
    m = _TEMP_NAME.match(tmp.name)
    target = tmp.with_name(m.group("target")) if m else None
    if target is None or not os.path.lexists(target):
        return True
    try:
        return size <= MAX_FILE_BYTES and read_regular(target, size + 1)[0] == read_regular(tmp, size + 1)[0]
    except (OSError, Unreadable):
        return False


def _set_aside(tmp: Path) -> None:
    base = tmp.name[: -len(TEMP_SUFFIX)]
    kept = tmp.with_name(base + KEPT_SUFFIX)
    while os.path.lexists(kept):
        import secrets

        kept = tmp.with_name(f"{base}.{secrets.token_hex(4)}{KEPT_SUFFIX}")
    os.rename(tmp, kept)
    log.warning("%s kept aside: a writer was killed while it held what may be an editor's save", kept.name)
