"""Git conflict markers (files.md, Git): a file a merge left with both versions in it is an error
on the marker's line (`MERGE_CONFLICT`) and takes no part in any prompt, preview or check."""

from __future__ import annotations

import re

MERGE_CONFLICT = "MERGE_CONFLICT"
RESOLVE = "keep the lines you want, delete the marker lines and save"
LEFT_OUT = ("this file holds git conflict markers (<<<<<<<, =======, >>>>>>>) left by a merge, so both versions "
            f"are in it: {RESOLVE}; until then membank leaves the whole file out of every prompt, preview and check")
_OPENS, _SPLITS, _CLOSES = re.compile(r"<{7}(?:[ \t].*)?"), re.compile(r"={7}[ \t]*"), re.compile(r">{7}(?:[ \t].*)?")


def conflict_line(text: str) -> int | None:
    """The line of the first git conflict marker in `text` (files.md, Git), or None: a `<<<<<<<` line,
    or a `>>>>>>>` line after a `=======` one (a lone `=======` underlines a Markdown heading; a lone
    `>>>>>>>` may be a deep quotation)."""
    if "<<<<<<<" not in text and ">>>>>>>" not in text:
        return None  # the common case, without splitting the text into lines
    split_seen = False
    for number, line in enumerate(text.removeprefix("\ufeff").split("\n"), 1):  # lines as an editor counts them
        line = line.removesuffix("\r")
        if _OPENS.fullmatch(line) or (split_seen and _CLOSES.fullmatch(line)):
            return number
        split_seen = split_seen or bool(_SPLITS.fullmatch(line))
    return None


_ANY_MARKER = re.compile(rb"(?:<{7}|\|{7}|>{7})(?:[ \t].*)?|={7}[ \t]*")


def is_marker(line: bytes) -> bool:
    """Whether one line (of a journal: JSON lines, where no event starts so) is a git conflict marker,
    diff3's `|||||||` included."""
    return bool(_ANY_MARKER.fullmatch(line.removeprefix(b"\xef\xbb\xbf").rstrip(b"\r")))
