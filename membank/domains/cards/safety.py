"""What an import may write: data only (docs/import-export.md, "What an import never writes"). Pure.

A name taken from a card (a CHARX entry, a book folder named in a card file) is never written when any of
its parts starts with `.` (`.git`, `.gitattributes`, `.hooks`: tools act on those by their name) and a
file is never written when it is executable: marked so in the zip, starting like a program (`#!`, ELF, PE,
Mach-O) or named like one (`.exe`, `.sh`, `.bat`, …). Such entries are skipped and listed, never written."""

from __future__ import annotations

import stat

MAX_PART_BYTES = 255  # one file or folder name, in UTF-8 (ext4, APFS, NTFS)
MAX_PATH_BYTES = 1024  # a whole name inside a card's asset folder
PROGRAM_STARTS = (b"#!", b"\x7fELF", b"MZ", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe",
                  b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
PROGRAM_SUFFIXES = frozenset((
    "app", "apk", "bash", "bat", "cmd", "com", "command", "cpl", "csh", "desktop", "dll", "dylib", "exe", "fish",
    "hta", "jar", "js", "jse", "ksh", "lnk", "msc", "msi", "pif", "pl", "ps1", "psm1", "py", "pyc", "pyw", "rb",
    "reg", "scf", "scr", "sh", "so", "url", "vb", "vbe", "vbs", "ws", "wsf", "wsh", "zsh"))


def hidden(name: str) -> bool:
    """True when a part of the slash-separated `name` starts with `.` (a dot file or folder)."""
    return any(part.startswith(".") for part in name.split("/"))


def program(name: str, data: bytes, mode: int = 0) -> str | None:
    """Why the file `name` (its bytes, its Unix mode from the zip; 0 when none) is a program; None when not."""
    if mode and stat.S_ISLNK(mode):
        return "it is a symbolic link"
    if mode & 0o111:
        return "it is marked executable"
    if data.startswith(PROGRAM_STARTS):
        return "it starts like a program or script"
    suffix = name.rsplit("/", 1)[-1].rpartition(".")[2].lower() if "." in name.rsplit("/", 1)[-1] else ""
    if suffix in PROGRAM_SUFFIXES:
        return f"`.{suffix}` files are programs or scripts"
    return None


def skip_reason(name: str, data: bytes, mode: int = 0) -> str | None:
    """Why an import must not write the file `name`; None when it is data it may write."""
    if hidden(name):
        return "a name starting with `.` (such files and folders are read by tools, e.g. git)"
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        return "a name with control characters (a line break, an escape), which terminals and tools misread"
    why = program(name, data, mode)
    return f"{why}; an import writes only data" if why else None


def shown(name: str) -> str:
    """`name` as a message or a terminal may show it: control characters written as `\\xNN` escapes."""
    return "".join(f"\\x{ord(ch):02x}" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in name)


def too_long(name: str) -> str | None:
    """Why `name` cannot be a file name on the writer's disk (a part over 255 bytes, the whole over 1 KiB)."""
    if len(name.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"its name is longer than {MAX_PATH_BYTES} bytes"
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_PART_BYTES for part in name.split("/")):
        return f"a part of its name is longer than {MAX_PART_BYTES} bytes, the most a disk allows"
    return None


def file_and_folder(names: list[str]) -> str | None:
    """Why `names` cannot all be written: one is both a file and a folder (`a` and `a/b`), or two differ only
    in case (one file on macOS and Windows disks); None when they can."""
    files = {name.casefold(): name for name in names}
    if len(files) < len(set(names)):
        seen: dict[str, str] = {}
        for name in sorted(names):
            if name.casefold() in seen:
                return f"`{seen[name.casefold()]}` and `{name}`, names that differ only in case"
            seen[name.casefold()] = name
    for name in sorted(names):
        parts = name.split("/")
        for n in range(1, len(parts)):
            if "/".join(parts[:n]).casefold() in files:
                return f"`{files['/'.join(parts[:n]).casefold()]}` both as a file and as a folder"
    return None
