"""The text edits `capture:review` makes to a file that already exists (capture.md, review), pure: a
relation's `until`, a fact memory's `until` or `revealed`, a thread's `resolved` / `dropped` / a touch,
a scene's values. Each goes through the round-trip writer (files/rewrite.py): every byte it is not asked
to change stays; each written value cites `evidence: <document>:<line>`. The flow (review.py) reads and
writes the files."""

from __future__ import annotations

import re
from typing import Any

import yaml

from ...files import spans
from ...files.frontmatter import BOM, FrontMatterError, bounds, load_yaml, split
from ...files.rewrite import REMOVE, RewriteError, append_item, rewrite, set_item, set_keys, yaml_lines


def cited(old: Any, cite: str, listed: bool = False) -> Any:
    """`evidence` with one more `document:line`: a text alone, a list once there are several (always a
    list when `listed`: a memory's `evidence` is one)."""
    if old is None or old == "" or old == []:
        return [cite] if listed else cite
    items = [*old] if isinstance(old, list) else [old]
    return items if cite in items else [*items, cite]


def meta_of(text: str) -> dict[str, Any]:
    try:
        return split(text.replace("\r\n", "\n")).meta
    except FrontMatterError as e:
        raise RewriteError(e.message, e.line) from None


def keys(text: str, values: dict[str, Any], cite: str, updates: dict[str, Any], listed: bool = False) -> str:
    """Top-level keys set (a fact's `until` / `revealed`, a thread's `resolved` / `dropped`), `evidence`
    citing the line (a list when `listed`)."""
    meta = meta_of(text)
    old = meta.get("evidence")
    if isinstance(old, list) and old and _block_list(text, "evidence"):  # one more line: comments in it stay
        if cite not in old:
            text = append_item(text, "evidence", cite, {})
        return rewrite(text, {**values, **updates})
    return rewrite(text, {**values, "evidence": cited(old, cite, listed), **updates})


def _block_list(text: str, key: str) -> bool:
    """Whether the top-level `key` is written as a block (`key:` alone on its line, its items below)."""
    head = text.replace("\r\n", "\n").lstrip(BOM)
    try:
        found = bounds(head)
    except FrontMatterError:
        return False
    head = head[:found[1]] if found else ""
    return re.search(rf"^{re.escape(key)}:[ \t]*(#.*)?$", head, re.MULTILINE) is not None


def until(text: str, line: int, position: str, cite: str, updates: dict[str, Any]) -> str:
    """The relation item written on `line` gets `until: position` and the evidence."""
    return set_item(text, "relations", line,
                    lambda item: {**item, "until": position, "evidence": cited(item.get("evidence"), cite)}, updates)


def touch(text: str, position: str, cite: str) -> str:
    """A thread touched here: an item `{at, evidence}` at the end of its `touched:` list."""
    if "touched" not in meta_of(text):
        text = rewrite(text, {"touched": []})  # then one `- {at, evidence}` line per touch, as progressions
    return append_item(text, "touched", {"at": position, "evidence": cite}, {})


def _set(yaml_text: str, values: dict[str, Any], what: str) -> str:
    """`set_keys`, refused (RewriteError) when a value it replaces holds a comment inside it (`present:`
    with `- 贾母  # 外祖母` below): a rewrite of the value would drop it."""
    try:
        node = spans.outline(yaml_text, 1) if yaml_text.strip() else None
    except (spans.Unsafe, yaml.YAMLError, RecursionError):
        node = None  # set_keys says why, with its line
    before = _mapping(yaml_text)
    for entry in (node.entries or []) if node is not None else []:
        if entry.key in values and before.get(entry.key) != values[entry.key]:
            inside = yaml_text[entry.start:entry.end].split("\n", 1)[1:]
            if inside and any(line.lstrip().startswith("#") or " #" in line for line in inside[0].split("\n")):
                raise RewriteError(f"in {what}, `{entry.key}` holds a comment inside its value that a rewrite "
                                   "would drop; change it by hand")
    return set_keys(yaml_text, values, what)


def _mapping(yaml_text: str) -> dict[Any, Any]:
    try:
        found = load_yaml(yaml_text) if yaml_text.strip() else {}
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def _section(lines: list[str], start: int, title: str) -> tuple[int, int] | None:
    """(the first line after `## title`, the end of its `key: value` lines) as indices into `lines`."""
    for i in range(start, len(lines)):
        if lines[i].startswith("## ") and lines[i][3:].strip() == title:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("## ")), len(lines))
            while end > i + 1 and not lines[end - 1].strip():
                end -= 1  # the blank lines before the next section stay where they are
            return i + 1, end
    return None


def _later_section(lines: list[str], start: int, cite: str) -> int | None:
    """The index of the first `## ` section whose evidence comment cites a later line of the chapter."""
    document, _, line = cite.rpartition(":")
    heading = None
    for i in range(start, len(lines)):
        if lines[i].startswith("## "):
            heading = i
        elif heading is not None and lines[i].startswith(f"# evidence: {document}:"):
            tail = lines[i].rpartition(":")[2].strip()
            if tail.isdecimal() and int(tail) > int(line):
                return heading
    return None


def scene(text: str, title: str | None, values: dict[str, Any], cite: str) -> str:
    """A scene file (story.md, Scenes) with `values` set: in the front matter for the whole document
    (`title` None), else in the section `## title` (a new one goes before the first section captured from
    later in the chapter, else at the end); a value None takes the key away (its lines go, so the value
    before the scene holds again). A comment line `# evidence: <document>:<line>` follows the values: a
    key would be read as a scene value. A file saved with a BOM keeps it, CRLF (or CR) line ends stay as
    they were: the reader reads past both, so the edit does too."""
    bom = text.startswith(BOM)
    newline = "\r\n" if "\r\n" in text else "\r" if "\r" in text else "\n"
    done = _scene(text[1 if bom else 0:].replace("\r\n", "\n").replace("\r", "\n"), title, values, cite)
    return (BOM if bom else "") + (done.replace("\n", newline) if newline != "\n" else done)


def _scene(text: str, title: str | None, values: dict[str, Any], cite: str) -> str:
    note = f"# evidence: {cite}\n"
    given = {k: v for k, v in values.items() if v is not None}  # what a new front matter or section holds
    values = {k: REMOVE if v is None else v for k, v in values.items()}  # null: the key's lines go
    if title is None:
        found = bounds(text) if text else None
        if found is None:
            return "---\n" + yaml_lines(given) + note + "---\n" + (text if not text or text.startswith("\n")
                                                                     else "\n" + text)
        head = _set(text[found[0]:found[1]], values, "the scene file's front matter")
        return text[:found[0]] + head + note + text[found[1]:]
    lines = text.split("\n")
    start = bounds(text)[2] if text and bounds(text) else 0
    first_body = text.count("\n", 0, start) if start else 0
    where = _section(lines, first_body, title)
    if where is None:
        new_section = f"## {title}\n" + yaml_lines(given) + note
        later = _later_section(lines, first_body, cite)
        if later is not None:  # in the chapter's order: before the first section captured from further on
            return "\n".join(lines[:later]) + ("\n" if later else "") + new_section + "\n" + "\n".join(lines[later:])
        lead = "" if not text else "\n" if text.endswith("\n") else "\n\n"
        return text + lead + new_section
    begin, end = where
    chunk = "\n".join(lines[begin:end]) + "\n" if end > begin else ""
    new = _set(chunk, values, f"the scene `{title}`") + note
    return "\n".join(lines[:begin]) + "\n" + new + "\n".join(lines[end:])

