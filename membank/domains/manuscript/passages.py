"""Cutting one manuscript document into passages and scenes (docs/manuscript.md, "Passages and scenes").
Pure: text in, passages out; the caller reads the file and stores what comes back.

- a passage is one or more whole paragraphs (a blank line separates them), about MIN..MAX code points;
- a paragraph longer than LONG is cut at a sentence end (`。．！？!?.…` and closing quotes), else hard;
- a Markdown heading starts a new scene named by its text (the heading line opens the scene's first
  passage); a line of only `***`, `* * *`, `---` or `§` starts a new scene without a name (`#2`, `#3` …);
- a Markdown document's front matter is not a passage (its lines still count)."""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

MIN, MAX, LONG = 400, 1000, 1500  # code points
# the name and its closing `#`s are taken apart by `_heading_name`: `(.+?)[ \t]*#*[ \t]*$` tried every split of
# a run of blanks at every start (2,000 blanks in one heading: 31 s; 20,000: days)
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t](.+)$")
_BREAK = re.compile(r"^[ \t]*(\*\*\*+|\* \* \*|---+|§)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")  # a code fence: no heading or scene break inside it
_SETEXT = re.compile(r"^ {0,3}=+[ \t]*$")  # under a one-line paragraph: it is a heading (`---` stays a scene break)
# a sentence ends after one of these, with any closing quotes or brackets that follow it
_END = re.compile(r"(?:[。．｡！？!?…]+|\.(?=[\s\"'”’」』）)]|$))[\"'”’」』）)\]]*")
SENTENCE_END = _END
_LONE_CR = re.compile(r"\r(?!\n)")  # an old Mac line end: a line end, and one code point as "\n" is (offsets stay)


@dataclass(frozen=True)
class Passage:
    document: str
    scene: str  # the heading's text, or `#n` for a scene without one
    scene_no: int  # 1-based: the scene's place in its document
    ordinal: int  # 0-based: the passage's place in its document
    line: int  # first line (1-based)
    end_line: int  # last line
    start: int  # code-point offsets into the document's text: text == document[start:end]
    end: int
    text: str


@dataclass(frozen=True)
class Scene:
    number: int
    name: str | None  # the heading's text; None for a scene a break (or the document's start) opens
    line: int

    @property
    def label(self) -> str:
        return self.name if self.name is not None else f"#{self.number}"


def front_matter_end(text: str) -> int:
    """The offset just past a Markdown front matter block (`---` … `---`), or 0 without one."""
    if not text.startswith("---"):
        return 0
    first = text.find("\n")
    if first < 0 or text[:first].strip() != "---":
        return 0
    pos = first + 1
    while pos < len(text):
        nl = text.find("\n", pos)
        line = text[pos:nl if nl >= 0 else len(text)]
        if line.strip() in ("---", "..."):
            return nl + 1 if nl >= 0 else len(text)
        if nl < 0:
            break
        pos = nl + 1
    return 0  # never closed: not front matter, the text is the writer's


def sentence_cuts(text: str, start: int, end: int) -> list[int]:
    """Offsets (in `text`) where text[start:end] is cut into pieces of at most about MAX code points: at
    the last sentence end that keeps a piece within MAX, else the first one within LONG, else hard."""
    ends = [m.end() for m in _END.finditer(text, start, end)]
    cuts: list[int] = []
    at = start
    while end - at > LONG:  # bisect, not a scan of every end: a 2 MB paragraph of short sentences is linear
        i = bisect_right(ends, at + MAX) - 1
        if i >= 0 and ends[i] >= at + MIN // 2:
            cut = ends[i]
        else:
            j = bisect_left(ends, at + MAX + 1)
            cut = ends[j] if j < len(ends) and ends[j] <= at + LONG else _hard(text, at + MAX, at)
        cuts.append(cut)
        at = cut
    return cuts


def _hard(text: str, cut: int, floor: int) -> int:
    """A hard cut at `cut`, moved back off a combining mark, variation selector or joiner so an emoji or an
    accented letter is never split across two passages."""
    back = cut
    while back > floor + 1 and (unicodedata.category(text[back]) in ("Mn", "Me", "Cf", "Sk")
                                or "\ufe00" <= text[back] <= "\ufe0f" or text[back - 1] == "\u200d"):
        back -= 1
    return back if back > floor + 1 else cut


def scenes(text: str, markdown: bool = True) -> list[Scene]:
    return _cut("", text, markdown)[1]


def cut(document: str, text: str, markdown: bool = True) -> list[Passage]:
    """The document's passages in order."""
    return _cut(document, text, markdown)[0]


def _cut(document: str, text: str, markdown: bool) -> tuple[list[Passage], list[Scene]]:
    text = _LONE_CR.sub("\n", text)
    out: list[Passage] = []
    found: list[Scene] = [Scene(1, None, 1)]
    body = front_matter_end(text) if markdown else 0
    # (start, end) of each paragraph of the current scene, and the current passage's paragraphs
    group: list[tuple[int, int]] = []
    heading_at: int | None = None  # where the scene's heading lines begin: they open its first passage
    line_starts = _line_starts(text)

    def emit(start: int, end: int) -> None:
        while end > start and text[end - 1].isspace():
            end -= 1
        if end <= start:
            return
        scene = found[-1]
        out.append(Passage(document, scene.label, scene.number, len(out), _line(line_starts, start),
                           _line(line_starts, end - 1), start, end, text[start:end]))

    def flush() -> None:
        if group:
            emit(group[0][0], group[-1][1])
            group.clear()

    def paragraph(start: int, end: int) -> None:
        nonlocal heading_at
        if heading_at is not None:
            start, heading_at = heading_at, None
        if end - start > LONG:
            flush()
            at = start
            for c in sentence_cuts(text, start, end):
                emit(at, c)
                at = c
                while at < end and text[at].isspace():
                    at += 1
            group.append((at, end))
            return
        size = group[-1][1] - group[0][0] if group else 0
        if group and size >= MIN and end - group[0][0] > MAX:
            flush()
        group.append((start, end))

    def new_scene(name: str | None, line: int) -> None:
        flush()
        current = found[-1]
        if not any(p.scene_no == current.number for p in out) and heading_at is None and current.name is None:
            found[-1] = Scene(current.number, name, line)  # nothing in the scene yet: the heading names it
        elif not any(p.scene_no == current.number for p in out) and name is not None and heading_at is not None:
            found[-1] = Scene(current.number, name, current.line)  # a heading under a heading: the inner names it
        else:
            found.append(Scene(current.number + 1, name, line))

    para_start: int | None = None
    para_lines = 0  # lines of the paragraph being read
    fence: str | None = None  # the open code fence's marker
    pos = body
    while pos < len(text):
        nl = text.find("\n", pos)
        stop = nl if nl >= 0 else len(text)
        line = text[pos:stop].rstrip("\r")  # a CRLF document reads as its LF twin (lines count the same)
        nxt = stop + 1
        opened = _FENCE.match(line) if markdown else None
        if fence is not None or opened:
            if fence is None and opened:
                fence = opened.group(1)[0] * len(opened.group(1))
            elif opened and opened.group(1).startswith(fence) and not line.strip()[len(opened.group(1)):]:
                fence = None
            if para_start is None:
                para_start = pos
            para_lines += 1
            pos = nxt
            continue
        setext = _SETEXT.match(line) if markdown and para_start is not None and para_lines == 1 else None
        if setext:  # `Title` over `=====` or `-----`: the paragraph's one line is a heading
            title_at = para_start
            para_start, para_lines = None, 0
            new_scene(text[title_at:pos].strip(), _line(line_starts, title_at))
            heading_at = title_at if heading_at is None else heading_at
            pos = nxt
            continue
        heading = _HEADING.match(line) if markdown else None
        if heading or _BREAK.match(line):
            if para_start is not None:
                paragraph(para_start, pos)
                para_start, para_lines = None, 0
            new_scene(_heading_name(heading.group(2)) if heading else None, _line(line_starts, pos))
            if heading:
                heading_at = pos if heading_at is None else heading_at
        elif not line.strip():
            if para_start is not None:
                paragraph(para_start, pos)
                para_start, para_lines = None, 0
        else:
            if para_start is None:
                para_start = pos
            para_lines += 1
        pos = nxt
    if para_start is not None:
        paragraph(para_start, len(text))
    elif heading_at is not None:
        paragraph(heading_at, len(text))  # a heading with nothing under it is still text
    flush()
    return out, found


def _heading_name(rest: str) -> str:
    """A heading's name from what follows its `#`s and a blank: without the closing `#`s and the blanks around
    them (`## 雨夜 ##`, `## C#` → `C`); a heading of `#`s alone is named `#`."""
    name = rest.rstrip(" \t").rstrip("#").strip()
    return name or rest.strip()[:1]


def _line_starts(text: str) -> list[int]:
    starts = [0]
    find = text.find
    at = find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = find("\n", at + 1)
    return starts


def _line(starts: list[int], offset: int) -> int:
    return bisect_right(starts, offset)
