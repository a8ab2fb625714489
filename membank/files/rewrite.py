"""Rendering and rewriting YAML: new memory files, and comment-keeping rewrites of existing ones."""

from __future__ import annotations

import io
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from .frontmatter import BOM, bounds

REMOVE = object()  # as a value in `rewrite` updates: drop the key


class IsoTime(str):
    """A time written as a plain YAML timestamp (2026-11-21T10:00:00Z), not a quoted string."""


def _yaml() -> YAML:
    y = YAML()
    y.preserve_quotes = True
    y.width = 4096
    y.representer.add_representer(
        IsoTime, lambda r, d: r.represent_scalar("tag:yaml.org,2002:timestamp", str(d))
    )
    y.representer.add_representer(type(None), lambda r, d: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    y.representer.add_representer(str, _represent_str)
    return y


_YAML11 = yaml.resolver.Resolver()


def _represent_str(representer: Any, value: str) -> Any:
    """Quote a string that the reader (YAML 1.1: yes, no, on, 12:30 …) would take for something else.

    ruamel writes YAML 1.2, where `no` is a string; PyYAML, which reads the files, would make it false."""
    plain = _YAML11.resolve(yaml.ScalarNode, value, (True, False)) == "tag:yaml.org,2002:str"
    return representer.represent_scalar("tag:yaml.org,2002:str", value, style=None if plain else "'")


def _guess_indent(fm_text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) as the writer used them, so untouched keys keep their layout."""
    mapping, offset = 0, -1
    for line in fm_text.splitlines():
        stripped = line.lstrip(" ")
        lead = len(line) - len(stripped)
        if not stripped or stripped.startswith("#") or lead == 0:
            continue
        if stripped.startswith("- "):
            offset = lead if offset < 0 else min(offset, lead)
        elif mapping == 0:
            mapping = lead
    mapping = mapping or 2
    offset = 2 if offset < 0 else offset
    return mapping, offset + 2, offset


def _value(value: Any) -> Any:
    """Python values as ruamel nodes: short lists of words in flow style, like [style, tone]."""
    if isinstance(value, (list, tuple)):
        seq = CommentedSeq([_value(v) for v in value])
        if all(isinstance(v, (str, int, float, bool)) for v in value):
            seq.fa.set_flow_style()
        return seq
    if isinstance(value, dict):
        m = CommentedMap()
        for k, v in value.items():
            m[k] = _value(v)
        return m
    return value


def render(meta: dict[str, Any], body: str) -> str:
    """A new file: front matter in the given key order, then the body."""
    y = _yaml()
    y.indent(mapping=2, sequence=4, offset=2)
    out = io.StringIO()
    y.dump(_value(meta), out)
    return f"---\n{out.getvalue()}---\n{body.strip()}\n"


def rewrite(original: str, updates: dict[str, Any], body: str | None = None) -> str:
    """`original` with the top-level keys in `updates` set (None values written as null).

    Every other byte of the front matter (comments, key order, unknown keys, quoting) is kept;
    the body is kept unless `body` is given. A BOM stays; a file with CRLF line endings is written
    with CRLF throughout (and one with lone CRs, with LF)."""
    bom = original.startswith(BOM)
    text = original[1:] if bom else original
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as the reader sees it
    found = bounds(text)
    fm_text, old_body = (text[found[0]:found[1]], text[found[2]:]) if found else ("", "\n" + text)
    y, data = _round_trip(fm_text)
    for key, value in updates.items():
        if value is REMOVE:
            _pop_keeping_comments(data, key)
        else:
            data[key] = _value(value)
    out = io.StringIO()
    y.dump(data, out)
    new_body = old_body if body is None else "\n" + body.strip() + "\n"
    result = f"---\n{out.getvalue()}---{new_body}"
    if crlf:
        result = result.replace("\n", "\r\n")
    return (BOM if bom else "") + result


def _pop_keeping_comments(data: CommentedMap, key: str) -> None:
    """Remove a key; the comment lines ruamel hangs on it (those below its line) move to the key before."""
    if key not in data:
        return
    token = data.ca.items.get(key, [None, None, None, None])[2]
    keys = list(data)
    data.pop(key)
    if token is None or "\n" not in token.value.rstrip("\n"):
        return  # no comment, or only the removed key's own end-of-line comment
    below = token.value.split("\n", 1)[1]  # the first line is the removed key's own comment
    at = keys.index(key)
    if at == 0:
        data.yaml_set_start_comment("\n".join(line.lstrip("# ") for line in below.rstrip("\n").split("\n")))
        return
    before = data.ca.items.setdefault(keys[at - 1], [None, None, None, None])
    if before[2] is None:
        token.value = "\n" + below
        before[2] = token
    else:
        before[2].value = before[2].value.rstrip("\n") + "\n" + below


def _round_trip(text: str) -> tuple[YAML, CommentedMap]:
    """A round-trip loader set to the text's own indentation, and the text's top-level mapping."""
    y = _yaml()
    y.indent(*_guess_indent(text))
    data = y.load(text) if text.strip() else None
    return y, data if isinstance(data, CommentedMap) else CommentedMap()


def rewrite_yaml(original: str, updates: dict[tuple[str, ...], Any]) -> str:
    """A whole YAML file (settings.yaml) with nested keys set, comments and layout kept."""
    y, data = _round_trip(original)
    for path, value in updates.items():
        node = data
        for key in path[:-1]:
            if not isinstance(node.get(key), CommentedMap):
                node[key] = CommentedMap()
            node = node[key]
        node[path[-1]] = _value(value)
    out = io.StringIO()
    y.dump(data, out)
    return out.getvalue()
