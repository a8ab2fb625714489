"""What an import may write: data only (docs/import-export.md, "What an import never writes"). Pure.

A name taken from a card (a CHARX entry, a book folder named in a card file) is never written when any of
its parts starts with `.` (`.git`, `.gitattributes`, `.hooks`: tools act on those by their name) and a
file is never written when it is executable: marked so in the zip, starting like a program (`#!`, ELF, PE,
Mach-O) or named like one (`.exe`, `.sh`, `.bat`, …). Nor a name a disk or git reads otherwise: a dot behind a
look-alike or an invisible character (`．git`, `\u200c.git` on macOS), `GIT~1`, a file `HEAD` (a bare git
repository), a Windows device, stream or trailing dot. Such entries are skipped and listed, never written.
The file names membank makes of a name (`files.write.slug`) are never Windows devices either."""

from __future__ import annotations

import re
import stat
import unicodedata

from ...files.write import WINDOWS_DEVICES

MAX_PART_BYTES = 255  # one file or folder name, in UTF-8 (ext4, APFS, NTFS)
MAX_PATH_BYTES = 1024  # a whole name inside a card's asset folder
PROGRAM_STARTS = (b"#!", b"\x7fELF", b"MZ", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
                  b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
PROGRAM_SUFFIXES = frozenset((
    "app", "apk", "appimage", "applescript", "appx", "bash", "bat", "chm", "cjs", "cmd", "com", "command", "cpl",
    "csh", "deb", "desktop", "dll", "dmg", "dylib", "exe", "fish", "hta", "htm", "html", "inf", "jar", "js", "jse",
    "ksh", "lnk", "lua", "mht", "mhtml", "mjs", "msc", "msi", "msix", "msp", "ocx", "php", "pif", "pkg", "pl",
    "ps1", "psm1", "py", "pyc", "pyw", "rb", "reg", "rpm", "scf", "scpt", "scr", "sh", "so", "sys", "tcl", "url",
    "vb", "vbe", "vbs", "ws", "wsf", "wsh", "xhtml", "zsh",
    # Windows Explorer acts on these when it shows their folder (sends the writer's credentials, runs code)
    "diagcab", "library-ms", "searchconnector-ms", "settingcontent-ms", "theme", "themepack", "website",
    # macOS: bundles that run, files Terminal runs or Finder follows when opened
    "action", "bundle", "fileloc", "inetloc", "kext", "prefpane", "saver", "terminal", "tool", "webloc", "workflow"))
BUNDLES = frozenset(("action", "app", "appex", "bundle", "kext", "plugin", "prefpane", "saver", "workflow", "xpc"))


WINDOWS_FORBIDDEN = frozenset('<>:"|?*')


def _plain(part: str) -> str:
    """A name as a disk or git may take it: compatibility forms folded (`．` is `.`), and the invisible format
    characters macOS leaves out of a name (`\u200c.git` is `.git` there) taken out."""
    return "".join(ch for ch in unicodedata.normalize("NFKC", part) if unicodedata.category(ch) != "Cf")


def invisible(ch: str) -> bool:
    """A format character that hides or turns text around (a right-to-left override, a zero-width space); not
    the joiners Persian, Indic scripts and emoji need in their words (U+200C, U+200D)."""
    return unicodedata.category(ch) == "Cf" and ch not in "\u200c\u200d"


def control(ch: str) -> bool:
    """A control character (C0, DEL or C1: a line break, an escape, a CSI), which terminals obey and tools misread."""
    return unicodedata.category(ch) == "Cc"


def hidden(name: str) -> bool:
    """True when a part of the slash-separated `name` starts with `.` (a dot file or folder), also once its
    look-alike dots are folded and its invisible characters left out, or is Windows' short name of `.git`."""
    return any(part.startswith(".") or _plain(part).startswith(".") or re.fullmatch(r"git~[0-9]+", part.casefold())
               for part in name.split("/"))


def windows_problem(name: str) -> str | None:
    """Why a part of `name` cannot be a file name on Windows (a device, a stream, a character it refuses, a
    trailing dot or space it drops, so that `HEAD.` is `HEAD`); None when every part can."""
    for part in name.split("/"):
        if WINDOWS_DEVICES.fullmatch(part):
            return f"`{shown(part)}` names a device on Windows (CON, NUL, AUX, COM1, …), not a file"
        if WINDOWS_FORBIDDEN & set(part):
            return "a name with a character Windows refuses (`<>:\"|?*`; `a.png:x` writes a hidden stream there)"
        if part.endswith((".", " ")):
            return "a name ending in a dot or a space, which Windows drops (two names would become one)"
    return None


def git_marker(name: str) -> bool:
    """True when the file `name` is a `HEAD` (in any case): with it, its folder is a git repository to git,
    which then reads the `config` beside it and runs the commands it names (`core.pager`, `core.fsmonitor`);
    also a part naming another version control's folder (`_darcs`, `_FOSSIL_`), whose settings run commands."""
    parts = [_plain(part).rstrip(". ").casefold() for part in name.split("/")]
    return parts[-1] == "head" or any(part in ("_darcs", "_fossil_") for part in parts)


def program(name: str, data: bytes, mode: int = 0) -> str | None:
    """Why the file `name` (its bytes, its Unix mode from the zip; 0 when none) is a program; None when not."""
    if mode and stat.S_ISLNK(mode):
        return "it is a symbolic link"
    if mode & 0o111:
        return "it is marked executable"
    if data.startswith(PROGRAM_STARTS):
        return "it starts like a program or script"
    parts = name.split("/")
    for n, part in enumerate(parts):  # a folder too: `x.app/`, `x.workflow/` are programs to macOS
        suffix = part.rpartition(".")[2].lower() if "." in part else ""
        if suffix in (PROGRAM_SUFFIXES if n == len(parts) - 1 else BUNDLES):
            return f"`.{suffix}` files are programs or scripts"
    return None


def skip_reason(name: str, data: bytes, mode: int = 0) -> str | None:
    """Why an import must not write the file `name`; None when it is data it may write."""
    if hidden(name):
        return "a name starting with `.` (such files and folders are read by tools, e.g. git)"
    if any(control(ch) for ch in name):
        return "a name with control characters (a line break, an escape), which terminals and tools misread"
    if any(invisible(ch) for ch in name):
        return ("a name with invisible characters (a right-to-left mark, a zero-width space), which disguise it "
                "and which macOS leaves out of a name")
    if git_marker(name):
        return ("a file named HEAD (or a `_darcs`, `_FOSSIL_` folder) makes its folder a repository, whose config "
                "git (darcs, fossil) obeys: it can run commands")
    if (why := windows_problem(name)) is not None:
        return why
    why = program(name, data, mode)
    return f"{why}; an import writes only data" if why else None


def shown(name: str) -> str:
    """`name` as a message or a terminal may show it: control characters written as `\\xNN` escapes, invisible
    format characters (a right-to-left override, which turns the text around it) as `\\uNNNN`."""
    return "".join(f"\\x{ord(ch):02x}" if control(ch)
                   else f"\\u{ord(ch):04x}" if invisible(ch) else ch for ch in name)


def too_long(name: str) -> str | None:
    """Why `name` cannot be a file name on the writer's disk (a part over 255 bytes, the whole over 1 KiB)."""
    if len(name.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"its name is longer than {MAX_PATH_BYTES} bytes"
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES for part in name.split("/")):
        return f"a part of its name is longer than {MAX_PART_BYTES} bytes, the most a disk allows"
    return None


def folded(name: str) -> str:
    """`name` as macOS and Windows disks compare names: without case, and (macOS) `é` written as one character
    or as `e` and an accent the same."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def file_and_folder(names: list[str]) -> str | None:
    """Why `names` cannot all be written: one is both a file and a folder (`a` and `a/b`), or two differ only
    in case or in how an accented letter is written (one file on macOS and Windows disks); None when they can."""
    files = {folded(name): name for name in names}
    if len(files) < len(set(names)):
        seen: dict[str, str] = {}
        for name in sorted(names):
            if folded(name) in seen:
                return (f"`{shown(seen[folded(name)])}` and `{shown(name)}`, names that differ only in case or in "
                        "how an accented letter is written")
            seen[folded(name)] = name
    for name in sorted(names):
        parts = name.split("/")
        for n in range(1, len(parts)):
            if folded("/".join(parts[:n])) in files:
                return f"`{shown(files[folded('/'.join(parts[:n]))])}` both as a file and as a folder"
    return None
