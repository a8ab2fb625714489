"""Reading a JSON-RPC request's `id` tolerantly, so a request too large or too broken to parse whole
is still answered with its own id (docs/decisions.md, "which id a broken line is answered with")."""

from __future__ import annotations

import json
import math
import re
from typing import Any

# The id of a request that cannot be parsed whole (too large, not valid JSON) is looked for in its
# first ID_SCAN bytes: a top-level `"id"` before any string that does not end there.
ID_SCAN = 64 * 1024
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|"|[{}\[\],:]')


def request_id(head: bytes) -> Any:
    """The top-level `id` of a request from the start of its line, read tolerantly; None when the
    head does not show one (it comes after a long value, say) or it is not a valid id."""
    text = head.decode("utf-8", errors="replace")
    depth, key_next, want_value = 0, False, False
    for m in _TOKEN.finditer(text):
        token = m.group()
        if want_value:  # right after `"id":`
            if token != ":":
                return None
            try:
                value, end = json.JSONDecoder(parse_constant=no_constants).raw_decode(text, _skip_space(text, m.end()))
            except (ValueError, RecursionError):
                return None  # cut off in the head, or not JSON
            if end >= len(text) and not isinstance(value, str):
                return None  # it reaches the end of the head: a number may go on after it
            return value if valid_id(value) and not isinstance(value, (dict, list)) else None
        if token == '"':
            return None  # a string that does not end in the head: what follows cannot be read
        if token in "{[":
            depth += 1
            key_next = token == "{" and depth == 1
        elif token in "}]":
            depth -= 1
            key_next = False
        elif token == ",":
            key_next = depth == 1
        elif token == ":":
            key_next = False
        elif depth == 1 and key_next:
            want_value = token == '"id"'
            key_next = False
    return None


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def valid_id(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: Python reads them, JSON.parse would not
