"""Where each key of a YAML block mapping is written: the text span of its lines, from the parser's marks.

A rewrite replaces only the spans of the keys it changes, so every other byte stays as the writer
wrote it. A key's span runs from the start of its key's line to the end of the line where its value
ends (an end-of-line comment included); comment and blank lines after that belong to no key and
stay where they are. Layouts where that is not well defined raise `Unsafe`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

try:  # the C parser is ~10x faster; both count marks in characters, which is what the spans need
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

NOT_TEXT = object()  # the key of an entry whose key the reader does not read as text (`1:`, `yes:`)
_STR = "tag:yaml.org,2002:str"
_RESOLVER = yaml.resolver.Resolver()
_YAML_BREAKS = "\x85\u2028\u2029"  # line breaks to YAML but not to a line-by-line editor


class Unsafe(Exception):
    """The YAML is laid out in a way a line-by-line edit cannot change safely."""


@dataclass
class Node:
    start: int
    end: int  # just after the last character of the value's own text
    kind: str  # "scalar", "alias", "map" or "seq"
    flow: bool = False
    empty: bool = False  # nothing written at all (`key:` alone): the reader's null
    block_scalar: bool = False  # `|` or `>`: takes in the more-indented lines that follow it
    entries: list[Entry] | None = None  # a block mapping near the top: where its keys are written
    unsafe: str = ""  # why `entries` is None for a block mapping near the top


@dataclass
class Entry:
    key: Any  # the key as text, or NOT_TEXT
    start: int  # start of the key's line
    end: int  # after the line where the value ends
    indent: int  # the key's column
    value: Node
    eol_comment: str = ""  # `   # why` after a one-line entry, kept when its value is replaced


@dataclass
class _Frame:
    start: int
    kind: str
    flow: bool
    keep_entries: bool
    last_end: int
    pending: tuple[Node, Any] | None = None
    pairs: list[tuple[Node, Any, Node]] = field(default_factory=list)


def outline(text: str, depth: int = 2) -> Node | None:
    """The root node of `text` with entries for block mappings down to `depth` levels; None when the text
    holds no value at all (empty, or only comments). Raises yaml.YAMLError when the text is not YAML."""
    stack: list[_Frame] = []
    root: Node | None = None
    documents = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise Unsafe("there is more than one YAML document")
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            is_map = isinstance(event, yaml.MappingStartEvent)
            stack.append(_Frame(event.start_mark.index, "map" if is_map else "seq", bool(event.flow_style),
                                is_map and not event.flow_style and len(stack) < depth, event.start_mark.index))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = stack.pop()
            end = event.end_mark.index if frame.flow else frame.last_end  # a block ends where the next token starts
            node = Node(frame.start, end, frame.kind, frame.flow)
            if frame.keep_entries:
                try:
                    node.entries = [_entry(text, key, key_text, value) for key, key_text, value in frame.pairs]
                    _check_layout(node.entries)
                except Unsafe as e:  # only a problem if a key in this mapping is to change
                    node.entries, node.unsafe = None, str(e)
            root = _deliver(stack, node, None) or root
        elif isinstance(event, (yaml.ScalarEvent, yaml.AliasEvent)):
            start, end = event.start_mark.index, event.end_mark.index
            scalar = isinstance(event, yaml.ScalarEvent)
            empty = scalar and start == end
            block = scalar and event.style in ("|", ">")
            node = Node(start, end, "scalar" if scalar else "alias", empty=empty, block_scalar=block)
            root = _deliver(stack, node, _key_text(event) if scalar else NOT_TEXT) or root
    return root


def _deliver(stack: list[_Frame], node: Node, as_key: Any) -> Node | None:
    """Hand a finished node to the collection it is in; returns it when it is the root."""
    if not stack:
        return node
    parent = stack[-1]
    parent.last_end = max(parent.last_end, node.end)
    if parent.kind == "map":
        if parent.pending is None:
            parent.pending = (node, as_key if node.kind == "scalar" else NOT_TEXT)
        else:
            key, key_text = parent.pending
            parent.pending = None
            if parent.keep_entries:
                parent.pairs.append((key, key_text, node))
    return None


def _key_text(event: yaml.ScalarEvent) -> Any:
    """The key as the reader builds it, when that is text (the composer's own tag resolution)."""
    tag = event.tag
    if tag is None or tag == "!":
        tag = _RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
    return event.value if tag == _STR else NOT_TEXT


def _entry(text: str, key: Node, key_text: Any, value: Node) -> Entry:
    line_start = text.rfind("\n", 0, key.start) + 1
    prefix = text[line_start:key.start]
    lead = len(prefix) - len(prefix.lstrip(" "))
    if prefix[lead:].rstrip(" ") not in ("", "?"):  # `? key` is how PyYAML writes long or multi-line keys
        raise Unsafe("a key does not start its own line")
    value_end = max(key.end, value.end)
    end, comment = line_end(text, value_end)
    if value.block_scalar and not _keeps_blank_lines(text, value.start):
        while end > line_start and text[text.rfind("\n", 0, end - 1) + 1:end].strip() == "":
            end = text.rfind("\n", 0, end - 1) + 1  # blank lines after `|` text are layout, not the value
    one_line = "\n" not in text[line_start:value_end]
    return Entry(key_text, line_start, end, lead, value, comment if one_line else "")


def _keeps_blank_lines(text: str, start: int) -> bool:
    """Whether the `|` or `>` scalar starting at `start` (its anchor or tag first, maybe) says `+`."""
    nl = text.find("\n", start)
    header = text[start:nl if nl >= 0 else len(text)].split("#", 1)[0]
    marker = max(header.rfind("|"), header.rfind(">"))
    return "+" in header[marker:]


def line_end(text: str, at: int) -> tuple[int, str]:
    """(where the line holding position `at` ends, after its newline; the comment after `at` on it)."""
    back = at
    while back > 0 and text[back - 1] == " ":
        back -= 1
    if back == 0 or text[back - 1] == "\n":
        return back, ""  # a block scalar's end mark sits at the start of the next line
    nl = text.find("\n", at)
    nl = len(text) if nl < 0 else nl
    rest = text[at:nl]
    stripped = rest.lstrip(" \t")
    if any(ch in rest for ch in _YAML_BREAKS) or (stripped and not stripped.startswith("#")):
        raise Unsafe("a line holds more after a value than a comment")
    return min(nl + 1, len(text)), rest if stripped else ""


def _check_layout(entries: list[Entry]) -> None:
    for before, after in zip(entries, entries[1:]):
        if after.start < before.end or after.indent != before.indent:
            raise Unsafe("two keys share a line")
