"""What one front matter may cost to load: nesting depth and alias expansion, checked before PyYAML builds it."""

from __future__ import annotations

from typing import Any

import yaml

try:  # the C parser keeps its own stack; pure Python is the fallback where libyaml is missing
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _BaseLoader = yaml.SafeLoader

# What one file's front matter may cost, however it is written: nesting depth, and its size once
# every alias is expanded (aliases are shared when loaded, but copied by every later step: JSON,
# metadata, the index). Without aliases a 1 MiB file stays far below MAX_EXPANDED.
MAX_DEPTH = 64
MAX_EXPANDED = 2 * 1024 * 1024  # characters of scalar text, plus one per node


def may_be_costly(text: str) -> bool:
    """False when `text` can be neither deep nor expanded, so check_shape (a quarter of a load) is skipped.
    Every collection starts at its own [, {, -, ? or `:` (a block mapping at its first key), so fewer of
    those than MAX_DEPTH bound the depth; without * there is no alias, and without aliases the loaded
    size stays within twice the text's (1 MiB at most), under MAX_EXPANDED."""
    return "*" in text or sum(text.count(c) for c in "[{-?:") >= MAX_DEPTH


class TooComplex(yaml.YAMLError):
    """YAML that would cost too much to load; `line` is 0-based in the text, `message` plain words."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


_STARTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_ENDS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def check_shape(text: str) -> None:
    """Walk the YAML's events (libyaml's parser keeps its own stack: no recursion, however deep) and
    refuse, before PyYAML composes a node (its composer recurses in C, and 300,000 nested [ crash the
    process), what is nested too deeply or would grow too large once its aliases are expanded (the
    "billion laughs": 381 bytes that expand to gigabytes). Syntax errors raise as yaml.load would."""
    sizes: dict[str, int] = {}  # anchor -> its expanded size
    open_: list[list[Any]] = []  # the collections being read: [expanded size so far, anchor]
    total = 0

    def add(size: int, line: int) -> None:
        nonlocal total
        if open_:
            open_[-1][0] += size
            grown = open_[-1][0]
        else:
            total += size
            grown = total
        if grown > MAX_EXPANDED:
            raise TooComplex(line, f"its aliases (values starting with *) repeat more than "
                             f"{MAX_EXPANDED // (1024 * 1024)} MiB of text; write the values out, or use fewer aliases")

    for event in yaml.parse(text, Loader=_BaseLoader):
        line = event.start_mark.line if event.start_mark is not None else 0
        if isinstance(event, _STARTS):
            if len(open_) >= MAX_DEPTH:
                raise TooComplex(line, f"values are nested more than {MAX_DEPTH} levels deep here; "
                                 "front matter should be flat `key: value` lines or short lists")
            open_.append([1, event.anchor])
        elif isinstance(event, _ENDS):
            size, anchor = open_.pop()
            if anchor is not None:
                sizes[anchor] = size
            add(size, line)
        elif isinstance(event, yaml.ScalarEvent):
            size = 1 + len(event.value)
            if event.anchor is not None:
                sizes[event.anchor] = size
            add(size, line)
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for _, anchor in open_):
                raise TooComplex(line, f"the alias *{event.anchor} is used inside its own anchor "
                                 f"&{event.anchor}, so the value would contain itself; write the value out")
            add(sizes.get(event.anchor, 1), line)  # an unknown anchor: yaml.load says so
