"""Rendering and rewriting YAML: new memory files, and rewrites of existing ones that change only their keys.

The reader (frontmatter.load_yaml: PyYAML, YAML 1.1) defines what a file means, so values are written
by PyYAML's own emitter, which quotes whatever YAML 1.1 would read as something else (`yes`, `1:30`,
`017`). A rewrite replaces only the lines of the keys it changes (spans.py finds them) and leaves
every other byte alone; it then reads the result back and refuses, with RewriteError, to return
anything whose meaning differs from the original with the updates applied."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

import yaml

from . import spans, yamllines
from .frontmatter import BOM, FrontMatterError, bounds, load_yaml, split

REMOVE = object()  # as a value in `rewrite` updates: drop the key
_BIG = 1 << 30  # line width: values are never folded onto more lines than they need


class IsoTime(str):
    """A time written as a plain YAML timestamp (2026-11-21T10:00:00Z), not a quoted string."""


class RewriteError(Exception):
    """The file cannot be changed without changing what the writer's other keys mean; nothing may be written."""

    def __init__(self, message: str, line: int | None = None, of_value: bool = False):
        super().__init__(message)
        self.message = message
        self.line = line  # 1-based, in the YAML text, when the trouble has a place
        self.of_value = of_value  # the new value itself cannot be written to read back as given


# -- rendering: PyYAML's emitter, which knows the reader's YAML 1.1 ------------------------------------

class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)  # `key:\n  - item`, not `key:\n- item`


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # characters where emitter and readers could disagree (YAML 1.1 line breaks, BOM, controls) get escapes
    risky = any(ch in "\x85\u2028\u2029\ufeff\t\r" or ch < " " or "\x7f" <= ch < "\xa0" for ch in value)
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style='"' if risky else None)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    # short lists of words in flow style, like [style, tone]; anything nested as a block
    words = all(v is None or isinstance(v, (str, int, float, bool)) for v in value)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=words)


_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(IsoTime, lambda d, v: d.represent_scalar("tag:yaml.org,2002:timestamp", str(v)))
_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(tuple, _represent_list)
_Dumper.add_representer(dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=False))


class _FlowDumper(_Dumper):
    """Everything on one line: a progression or a relation as `{at: …, state: …}`."""


_FlowDumper.add_representer(dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=True))
_FlowDumper.add_representer(list, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def dump(mapping: dict[Any, Any]) -> str:
    """The whole mapping as PyYAML's emitter writes front matter: what `yamllines` is held to (public, so
    tests take it as the reference)."""
    return yaml.dump(mapping, Dumper=_Dumper, allow_unicode=True, sort_keys=False, width=_BIG,
                     default_flow_style=False)


_LINES = yamllines.Lines(dump, IsoTime)


def _render(mapping: dict[Any, Any], indent: int = 0) -> str:
    """`key: value` lines for each item, every line moved right by `indent` spaces."""
    if not mapping:
        return ""
    try:
        text = _LINES.render(mapping)  # the same text, line by line (yamllines.py)
        if text is None:
            text = dump(mapping)
    except (yaml.YAMLError, ValueError) as e:  # ValueError: an int longer than Python will print
        raise RewriteError(f"a value cannot be written as YAML ({e})", of_value=True) from None
    if indent:
        text = "\n".join(" " * indent + line if line else line for line in text.split("\n"))
    return text


def yaml_lines(mapping: dict[str, Any]) -> str:
    """`key: value` lines (a whole small YAML file, like project.yaml) that the reader reads back as given."""
    text = _render(mapping)
    _same(_load(text) or {}, mapping, "the file", mapping)
    return text


def render(meta: dict[str, Any], body: str) -> str:
    """A new file: front matter in the given key order, then the body."""
    text = f"---\n{_render(meta)}---\n{body.strip()}\n"
    _same(_read_meta(text), meta, "the new file", meta)
    return text


# -- what values mean --------------------------------------------------------------------------------

def _meaning(value: Any) -> Any:
    """A value as the reader's meaning, comparable with ==: types kept apart (True is not 1), times in UTC."""
    if isinstance(value, IsoTime):
        value = load_yaml(f"t: {value}")["t"]
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            try:
                value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
            except OverflowError:  # its zone moves it past year 1 or 9999: compared as written
                return ("datetime", value.isoformat())
        return ("datetime", value)
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    if isinstance(value, dict):
        return ("map", frozenset((_meaning(k), _meaning(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_meaning(v) for v in value))
    if isinstance(value, (set, frozenset)):  # !!set
        return ("set", frozenset(_meaning(v) for v in value))
    return (type(value).__name__, value)


def _same_value(a: Any, b: Any) -> bool:
    try:
        return _meaning(a) == _meaning(b)
    except TypeError:  # unhashable oddities: compare as they are
        return bool(a == b)


def _same(found: Any, expected: Any, what: str, updated: Any = ()) -> None:
    """RewriteError unless `found` means `expected`; of_value when only keys in `updated` differ."""
    if not _same_value(found, expected):
        changed = sorted((k for k in set(found) | set(expected)
                          if k not in found or k not in expected or not _same_value(found[k], expected[k])),
                         key=str) if isinstance(found, dict) and isinstance(expected, dict) else []
        named = ", ".join(f"`{k}`" for k in changed[:5]) or "a value"
        raise RewriteError(f"writing {what} would have changed what {named} means, so membank stopped",
                           of_value=bool(changed) and all(k in updated for k in changed))


def _read_meta(text: str) -> dict[Any, Any]:
    try:
        return split(text).meta
    except FrontMatterError as e:
        raise RewriteError(e.message, e.line) from None


def _applied(before: dict[Any, Any], updates: dict[Any, Any]) -> dict[Any, Any]:
    expected = dict(before)
    for key, value in updates.items():
        if value is REMOVE:
            expected.pop(key, None)
        else:
            expected[key] = value
    return expected


# -- editing spans -----------------------------------------------------------------------------------

def _outline(text: str, what: str, depth: int) -> spans.Node | None:
    try:
        return spans.outline(text, depth)
    except spans.Unsafe as e:
        raise _by_hand(what, str(e)) from None
    except (yaml.YAMLError, RecursionError) as e:
        mark = getattr(e, "problem_mark", None)
        raise RewriteError(f"{what} is not valid YAML", mark.line + 1 if mark is not None else None) from None


def _by_hand(what: str, why: str) -> RewriteError:
    return RewriteError(f"in {what}, {why}, and membank changes only the lines it is asked to change")


def _entries(node: spans.Node | None, what: str) -> list[spans.Entry]:
    if node is None:
        return []
    if node.entries is None:
        raise _by_hand(what, node.unsafe or "the values are not written as `key: value` lines")
    return node.entries


def _set_keys(text: str, entries: list[spans.Entry], before: dict[Any, Any], updates: dict[Any, Any],
              indent: int, append_at: int) -> str:
    """`text` with `updates` made to the mapping whose `entries` are given: changed keys' lines replaced,
    removed keys' lines deleted, new keys added at `append_at`. Keys set to what they already mean stay."""
    where = {e.key: e for e in entries if e.key is not spans.NOT_TEXT}
    removed = {id(where[k]) for k, v in updates.items() if v is REMOVE and k in where}
    edits: list[tuple[int, int, str]] = []
    new: dict[Any, Any] = {}
    for key, value in updates.items():
        entry = where.get(key)
        if value is REMOVE:
            if entry is not None:
                kept = [e for e in entries if e.start < entry.start and id(e) not in removed]
                after_block = bool(kept) and kept[-1].value.block_scalar
                end, gap = _comments_after(text, entry.end, indent) if after_block else (entry.end, "")
                edits.append((entry.start, end, gap))
        elif key in before and _same_value(before[key], value):
            continue  # `pinned: yes` set to true stays `pinned: yes`
        elif entry is None:
            new[key] = value
        else:
            edits.append((entry.start, entry.end, _replacement(entry, key, value, indent)))
    if new:
        lead = "" if append_at == 0 or text[append_at - 1] == "\n" else "\n"
        edits.append((append_at, append_at, lead + _render(new, indent)))
    for start, end, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text


def _comments_after(text: str, at: int, indent: int) -> tuple[int, str]:
    """The comment and blank lines from `at` on, indented comments moved left to the keys' column: once
    the key above them is gone they would otherwise join the `|` or `>` text before it."""
    lines = []
    while at < len(text):
        nl = text.find("\n", at)
        end = len(text) if nl < 0 else nl + 1
        line = text[at:end]
        if line.strip() and not line.lstrip(" ").startswith("#"):
            break
        lines.append(" " * indent + line.lstrip(" ") if line.strip() else line)
        at = end
    return at, "".join(lines)


def _replacement(entry: spans.Entry, key: Any, value: Any, indent: int) -> str:
    rendered = _render({key: value}, indent)
    if entry.eol_comment and rendered.count("\n") == 1:
        rendered = rendered[:-1] + entry.eol_comment + "\n"  # `revision: 3   # why` keeps its why
    elif entry.eol_comment:
        first = rendered.index("\n")
        if rendered[:first].endswith(":"):  # `progressions: []  # none yet` become a block: the why stays on its key
            rendered = rendered[:first] + entry.eol_comment + rendered[first:]
    return rendered


# -- front matter ------------------------------------------------------------------------------------

def rewrite(original: str, updates: dict[str, Any], body: str | None = None) -> str:
    """`original` with the top-level keys in `updates` set (None values written as null).

    Every other byte of the front matter (comments, key order, unknown keys, quoting, layout) is kept;
    the body is kept unless `body` is given. A BOM stays; a file with CRLF line endings is written
    with CRLF throughout (and one with lone CRs, with LF). Raises RewriteError rather than return a
    file whose other keys would read differently."""
    return _rewrite(original, updates, body)[0]


def _rewrite(original: str, updates: dict[str, Any], body: str | None = None,
             meta: dict[Any, Any] | None = None) -> tuple[str, dict[Any, Any]]:
    """`rewrite`, and the front matter it read back from the result. `meta`: what the caller knows
    `original` to mean (it is not read again)."""
    bom = original.startswith(BOM)
    text = original[1:] if bom else original
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # as the reader sees it
    try:
        found = bounds(text)
    except FrontMatterError as e:
        raise RewriteError(e.message, e.line) from None
    if found:
        head, fm, close, old_body = text[:found[0]], text[found[0]:found[1]], text[found[1]:found[2]], text[found[2]:]
    else:
        head, fm, close, old_body = "---\n", "", "---", "\n" + text
    before = _read_meta(text) if meta is None else meta
    entries = _entries(_outline(fm, "the front matter", 1), "the front matter")
    indent = entries[0].indent if entries else 0
    new_fm = _set_keys(fm, entries, before, updates, indent, len(fm))
    new_body = old_body if body is None else "\n" + body.strip() + "\n"
    result = head + new_fm + close + new_body
    try:
        after = split(result).meta
    except FrontMatterError as e:  # e.g. a removed anchor that another key's alias (*name) still uses
        raise RewriteError(f"the change would leave front matter membank cannot read ({e.message})") from None
    _same(after, _applied(before, updates), "the file", updates)
    if crlf:
        result = result.replace("\n", "\r\n")
    return (BOM if bom else "") + result, after


def flow(value: dict[str, Any]) -> str:
    """A mapping as one YAML flow line, like `{at: chapters/ch05.md, state: wounded}`."""
    try:
        text = yaml.dump(value, Dumper=_FlowDumper, allow_unicode=True, sort_keys=False, width=_BIG,
                         default_flow_style=True).strip()
    except (yaml.YAMLError, ValueError) as e:
        raise RewriteError(f"a value cannot be written as YAML ({e})", of_value=True) from None
    if "\n" in text:
        raise RewriteError("a value would need more than one line", of_value=True)
    return text


def _one_line(item: Any) -> str:
    """An item of a list as one line: a mapping as `{…}`, a text or number as YAML writes it in a list."""
    if isinstance(item, dict):
        return flow(item)
    line = _render({"x": [item]}).strip()  # `x: [text]`: the emitter's own quoting for a list's item
    if not (line.startswith("x: [") and line.endswith("]")) or "\n" in line:
        raise RewriteError("a value would need more than one line", of_value=True)
    return line[4:-1]


def append_item(original: str, key: str, item: Any, updates: dict[str, Any],
                meta: dict[Any, Any] | None = None) -> str:
    """`original` with `item` added at the end of the top-level list `key`, then `updates` made as
    `rewrite` makes them. A block list gains one line, `- {…}` in its items' column, just after its
    last item (a comment below it stays below); a flow list, or none, is written whole as a block.
    Every other byte stays; RewriteError rather than anything else. `meta`: the front matter the caller
    already read from `original` (not read again).

    The text with the line added is not read on its own: the result is held to the original's
    meaning with the item and `updates` added, which covers it (any other key read differently
    fails that check too). When the check fails, the steps are made again one by one, reading each,
    so the refusal is the one they give."""
    bom = original.startswith(BOM)
    text = original[1:] if bom else original
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    before = _read_meta(text) if meta is None else meta
    current = before.get(key)
    if current is not None and not isinstance(current, list):
        raise _by_hand("the front matter", f"`{key}` is not a list")
    found = bounds(text)
    entries = _entries(_outline(text[found[0]:found[1]], "the front matter", 1), "the front matter") if found else []
    entry = next((e for e in entries if e.key == key), None)
    if entry is not None and entry.value.kind == "seq" and not entry.value.flow and not entry.value.empty:
        fm_start = found[0] if found else 0
        start = fm_start + entry.value.start
        column = start - (text.rfind("\n", 0, start) + 1)
        at = fm_start + entry.end
        text = text[:at] + " " * column + "- " + _one_line(item) + "\n" + text[at:]
    elif entry is not None and entry.value.kind in ("seq", "scalar") and isinstance(key, str) and key.isidentifier():
        # `key: []`, `key: [{…}]`, `key:` or `key: null`: one `- {…}` line per item, its comment kept on its line
        fm_start = found[0] if found else 0
        items = "".join(f"{' ' * (entry.indent + 2)}- {_one_line(x)}\n" for x in [*(current or []), item])
        text = (text[:fm_start + entry.start] + f"{' ' * entry.indent}{key}:{entry.eol_comment}\n" + items
                + text[fm_start + entry.end:])
    else:
        updates = {key: [*(current or []), item], **updates}
    try:  # the text is LF and without a BOM here: `_rewrite` adds neither
        result = _rewrite(text, updates, meta={**before, key: [*(current or []), item]})[0]
    except RewriteError:
        result, after = _rewrite(text, updates)
        _same(after.get(key), [*(current or []), item], f"`{key}`")
    if crlf:
        result = result.replace("\n", "\r\n")
    return (BOM if bom else "") + result



def set_item(original: str, key: str, line: int, change: Any, updates: dict[str, Any]) -> str:
    """`original` with the item of the top-level list `key` written on file line `line` replaced by
    `change(item)` (a mapping, written as one `{…}` line in the item's place), then `updates` made as
    `rewrite` makes them. Every other byte stays; RewriteError when there is no mapping item on that
    line, or when it holds a comment a one-line rewrite would drop."""
    bom = original.startswith(BOM)
    text = original[1:] if bom else original
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    before = _read_meta(text)
    found = bounds(text)
    items = before.get(key)
    if found is None or not isinstance(items, list):
        raise _by_hand("the front matter", f"`{key}` is not a list")
    try:
        root = yaml.compose(text[found[0]:found[1]], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except yaml.YAMLError as e:
        raise RewriteError("the front matter is not valid YAML") from e
    seq = next((v for k, v in getattr(root, "value", ()) if isinstance(k, yaml.ScalarNode) and k.value == key
                and isinstance(v, yaml.SequenceNode)), None)
    index = next((i for i, n in enumerate(seq.value if seq is not None else ()) if 2 + n.start_mark.line == line),
                 None)
    if seq is None or index is None or not isinstance(items[index], dict):
        raise RewriteError(f"no item of `{key}` is written on line {line}", line)
    node = seq.value[index]
    end = node.end_mark.index if node.flow_style else node.value[-1][1].end_mark.index if node.value else None
    start = found[0] + node.start_mark.index
    if end is not None:  # a block ending in a nested block ends at the next line: its line break stays
        end = len(text[found[0]:found[0] + end].rstrip(" \n")) if not node.flow_style else end
    if end is None or "#" in text[start:found[0] + end]:
        raise _by_hand(f"`{key}`", f"the item on line {line} holds a comment or is empty")
    if _linked(text[found[0]:found[1]], node.start_mark.index, end):
        raise _by_hand(f"`{key}`", f"the item on line {line} holds an anchor, an alias or a merge (`&`, `*`, `<<`) "
                       "a one-line rewrite would flatten")
    new_item = change(dict(items[index]))
    text = text[:start] + flow(new_item) + text[found[0] + end:]
    result = rewrite(text, updates)
    after = _read_meta(result[1:] if result.startswith(BOM) else result)
    _same(after.get(key), [*items[:index], new_item, *items[index + 1:]], f"`{key}`")
    if crlf:
        result = result.replace("\n", "\r\n")
    return (BOM if bom else "") + result


def _linked(yaml_text: str, start: int, end: int) -> bool:
    """Whether the text from `start` to `end` holds an anchor, an alias or a merge key `<<`."""
    try:
        for token in yaml.scan(yaml_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # noqa: S506
            if start <= token.start_mark.index < end and (
                    isinstance(token, (yaml.AnchorToken, yaml.AliasToken))
                    or isinstance(token, yaml.ScalarToken) and token.plain and token.value == "<<"):
                return True
    except yaml.YAMLError:
        return True
    return False


def set_keys(yaml_text: str, updates: dict[str, Any], what: str) -> str:
    """A YAML mapping written as `key: value` lines (a scene's section) with `updates` set: changed keys'
    lines replaced, new keys added at the end, every other byte kept. RewriteError otherwise."""
    before = _load(yaml_text) or {}
    if not isinstance(before, dict):
        raise _by_hand(what, "it is not `key: value` lines")
    entries = _entries(_outline(yaml_text, what, 1), what) if yaml_text.strip() else []
    text = _set_keys(yaml_text, entries, before, updates, entries[0].indent if entries else 0, len(yaml_text))
    _same(_load(text) or {}, _applied(before, updates), what)
    return text

# -- settings.yaml -----------------------------------------------------------------------------------

def _load(text: str) -> Any:
    try:
        return load_yaml(text) if text.strip() else None
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as e:
        mark = getattr(e, "problem_mark", None)
        raise RewriteError("it is not valid YAML", mark.line + 1 if mark is not None else None) from None


def rewrite_yaml(original: str, updates: dict[tuple[str, ...], Any]) -> str:
    """A whole YAML file (settings.yaml) with `(section, key)` paths set; every other byte kept (BOM and
    line endings as in `rewrite`).

    A key that exists has its lines replaced; a new key goes after the section's last key, lined up
    with it; a new section goes at the end. Raises RewriteError rather than change anything else."""
    bom = original.startswith(BOM)
    text = original[1:] if bom else original
    crlf = "\r\n" in text
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    before = _load(text)
    if before is None:
        before = {}
    if not isinstance(before, dict):
        raise RewriteError("it should hold `memory:` and `embedding:` sections")
    sections: dict[str, dict[str, Any]] = {}
    for path, value in updates.items():
        if len(path) != 2:
            raise ValueError("settings paths are (section, key)")
        sections.setdefault(path[0], {})[path[1]] = value
    expected = copy.deepcopy(before)
    for name, values in sections.items():
        current = expected.get(name)
        expected[name] = {**(current if isinstance(current, dict) else {}), **values}
    entries = _entries(_outline(text, "settings.yaml", 2), "settings.yaml")
    where = {e.key: e for e in entries if e.key is not spans.NOT_TEXT}
    present = sorted((where[name] for name in sections if name in where), key=lambda e: e.start, reverse=True)
    for entry in present:  # the last in the file first, so the spans before it stay where they are
        text = _set_section(text, entry, before.get(entry.key), sections[entry.key])
    missing = {name: values for name, values in sections.items() if name not in where}
    if missing:
        lead = "" if not text or text.endswith("\n") else "\n"
        text += lead + _render(missing, entries[0].indent if entries else 0)
    _same(_load(text) or {}, expected, "settings.yaml")
    return (BOM if bom else "") + (text.replace("\n", "\r\n") if crlf else text)


def _set_section(text: str, entry: spans.Entry, current: Any, values: dict[str, Any]) -> str:
    value = entry.value
    if value.empty and current is None:  # `memory:` with nothing under it yet
        return text[:entry.end] + _render(values, entry.indent + 2) + text[entry.end:]
    what = f"`{entry.key}:` in settings.yaml"
    if value.kind != "map" or value.flow or not isinstance(current, dict):
        raise _by_hand(what, "it is not written as `key: value` lines under it")
    children = _entries(value, what)
    return _set_keys(text, children, current, values, children[0].indent, children[-1].end)
