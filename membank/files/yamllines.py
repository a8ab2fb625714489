"""Front matter as PyYAML writes it, one `key: value` line per key, without running the emitter on
every call: a new memory's dozen keys took ~1 ms of pure-Python emitting, most of `memory:create`'s CPU.

A block mapping of scalars (or flat lists of scalars, written in flow style) is its keys' lines one
after another, each line what the emitter writes for that key alone. A word the emitter writes as
it is (a letter, then letters, digits, `_` or `-`, and not one YAML 1.1 reads as a boolean or null),
a plain timestamp, an int, a boolean and null are written here directly; any other key's line is
the emitter's own, made once per value and kept. A mapping holding anything else (a nested mapping,
a list of lists) is not handled here: the caller runs the emitter on it whole.
(tests/test_yaml_lines.py holds these lines equal to the emitter's for every kind of value.)"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable

# a word PyYAML writes plain in block context: no indicator, nothing a YAML 1.1 resolver claims
# (numbers, times, `<<` and `=` start with a digit or a sign; these are the words that start with a letter)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_CLAIMED = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF "
                     "null Null NULL".split())
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?Z")
_SCALARS = (str, int, float, bool, type(None))
KEPT = 4096  # lines kept before they are dropped all at once
SIMPLE_KEY = 100  # keys this long at most are written `key: value` (PyYAML's limit is 127)


def plain_word(text: str) -> bool:
    """Whether PyYAML writes `text` (a key or a str value) exactly as it is."""
    return _WORD.fullmatch(text) is not None and text not in _CLAIMED


def direct(value: Any, timestamp: type) -> str | None:
    """`value` as the emitter writes it, when that needs no emitter; None otherwise. `timestamp`: the
    str subclass written as a plain YAML timestamp (rewrite.IsoTime)."""
    kind = type(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return str(value)
    if kind is str:
        return value if plain_word(value) else None
    if kind is timestamp:
        return value if _TIMESTAMP.fullmatch(value) else None
    return None


def _memo_key(key: str, value: Any) -> tuple[Any, ...] | None:
    """What a key's line depends on, hashable, types kept apart (1, 1.0 and True; 0.0 and -0.0); None
    when the value is not a scalar or a flat list of scalars."""
    if isinstance(value, _SCALARS):
        return key, type(value), repr(value)
    if type(value) in (list, tuple) and all(isinstance(v, _SCALARS) for v in value):
        return (key, type(value)) + tuple((type(v), repr(v)) for v in value)
    return None


class Lines:
    """`render(mapping)`: the emitter's text for a mapping of scalars, line by line; `dump` is the
    emitter (a mapping in, its text out), `timestamp` the str subclass written as a timestamp."""

    def __init__(self, dump: Callable[[dict[Any, Any]], str], timestamp: type) -> None:
        self._dump = dump
        self._timestamp = timestamp
        self._lines: dict[tuple[Any, ...], str] = {}
        self._lock = threading.Lock()

    def render(self, mapping: dict[Any, Any]) -> str | None:
        """The emitter's text for `mapping`, or None when it holds a value not handled here (or nothing)."""
        if not mapping:
            return None  # the emitter's `{}`
        out = []
        lists: set[int] = set()  # the emitter writes one list object met twice as `&id001` then `*id001`
        for key, value in mapping.items():
            if type(key) is not str or len(key) > SIMPLE_KEY or not plain_word(key):
                return None  # a key of 128 characters or more is written `? key` on a line of its own
            text = direct(value, self._timestamp)
            if text is not None:
                out.append(f"{key}: {text}\n")
                continue
            memo = _memo_key(key, value)
            if memo is None or (type(value) in (list, tuple) and id(value) in lists):
                return None
            if type(value) in (list, tuple):
                lists.add(id(value))
            line = self._lines.get(memo)
            if line is None:
                line = self._dump({key: value})
                with self._lock:
                    if len(self._lines) >= KEPT:
                        self._lines.clear()
                    self._lines[memo] = line
            out.append(line)
        return "".join(out)
