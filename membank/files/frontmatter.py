"""Splitting a Markdown file into YAML front matter and body, loading the YAML safely."""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from dataclasses import dataclass
from typing import Any

import yaml

from . import yamlmemo
from .yamlbounds import TooComplex, check_shape, may_be_costly

from ..kernel.limits import MAX_FILE_BYTES  # noqa: F401  (re-exported: the file layer names it)
BOM = "\ufeff"

try:  # the C loader is ~10x faster; pure Python is the fallback where libyaml is missing
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover
    _BaseLoader = yaml.SafeLoader


class _Loader(_BaseLoader):  # type: ignore[misc, valid-type]
    """SafeLoader that refuses duplicate keys: YAML would silently keep the last one."""


_MERGE = "tag:yaml.org,2002:merge"
# YAML 1.1 reads the plain keys `on:`, `yes:`, `off:`, `null:` as True, False and None; a writer
# naming a field means the word (and `on:` with `yes:` would clash as two Trues). Values keep YAML's
# reading (`pinned: yes` is true), and the fast reader below reads keys the same way.
_TEXT_KEYS = frozenset({"tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"})


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE:
            continue  # `<<: *defaults` merges a mapping in (SafeLoader's flatten_mapping does it)
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag in _TEXT_KEYS and not key_node.style \
                and key_node.value:
            key_node.tag = "tag:yaml.org,2002:str"  # `on:`, `yes:`, `null:` written plain are the words, as keys
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:str":
            key = key_node.value  # the common case, without building the key twice
        else:
            key = loader.construct_object(key_node, deep=deep)
        if isinstance(key, (list, dict)):
            raise yaml.constructor.ConstructorError(None, None, "a key cannot be a list or a mapping", key_node.start_mark)
        if key in seen:
            # context_mark is the first occurrence; yaml_problem() turns both marks into file lines
            raise yaml.constructor.ConstructorError(
                "first set", seen[key], f"the key `{key}` appears twice", key_node.start_mark)
        seen[key] = key_node.start_mark
    return loader.construct_mapping_plain(node, deep=deep)  # type: ignore[no-any-return]


def _construct_timestamp(loader: Any, node: yaml.ScalarNode) -> Any:
    """A date YAML cannot build (2026-02-30) stays text, so the field check reports it instead of crashing."""
    value = node.value
    if len(value) == 20 and value[10] == "T" and value[19] == "Z":  # 2026-11-21T10:00:00Z, the usual form
        try:
            return dt.datetime.fromisoformat(value[:19])
        except ValueError:
            pass
    try:
        return _BaseLoader.construct_yaml_timestamp(loader, node)
    except (ValueError, OverflowError):
        return loader.construct_scalar(node)


_Loader.construct_mapping_plain = _BaseLoader.construct_mapping  # type: ignore[attr-defined]
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)
# YAML 1.1 resolves a bare `=` to a "value" tag SafeLoader cannot build; a writer means the text "="
_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def load_yaml(text: str) -> Any:
    """Safe YAML (no object construction) that refuses duplicate keys and keeps impossible dates as text.

    Bounded: nesting deeper than MAX_DEPTH, an alias inside its own anchor, or aliases expanding past
    MAX_EXPANDED raise TooComplex before anything is built."""
    fast = _load_flat(text)
    if fast is not None:
        return fast
    if may_be_costly(text):
        check_shape(text)
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        raise
    except Exception as e:  # PyYAML's constructors fail so on a tagged value they cannot build (`!!int ""`)
        raise UnbuildableValue(e) from None


class UnbuildableValue(yaml.YAMLError):
    """A value with an explicit type tag (`!!bool maybe`, `!!timestamp soon`) its type cannot hold."""

    def __init__(self, cause: Exception):
        super().__init__(f"a value marked with a !! type cannot be read as that type ({cause.__class__.__name__}); "
                         "remove the !! mark or fix the value")


# -- the fast path: most front matter is flat `key: value` lines --------------------------------------
# PyYAML spends most of a sync building and resolving nodes in Python. Front matter made only of
# `key: plain-scalar` and `key: [plain, items]` lines is read here instead, with PyYAML's own
# resolver deciding each scalar's type; anything else (quotes, nesting, block lists, odd numbers,
# duplicate keys) returns None and goes to PyYAML. tests/test_frontmatter.py holds both to the same
# answers.

_FLAT_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):([ \t].*)?")  # the value's blanks stripped in Python: linear
_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`](?:[^:#]|:(?=\S)|(?<=\S)#)*")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\.[0-9]+")
_RESOLVER = yaml.resolver.Resolver()
# the first characters PyYAML's resolver looks at (a null, bool, number, timestamp, merge, value or
# empty scalar starts so): a plain scalar starting with any other is a string, as `resolve` would say
_TYPED_FIRST = frozenset(_RESOLVER.yaml_implicit_resolvers)


@functools.lru_cache(maxsize=4096)
def _flat_scalar(value: str) -> tuple[bool, Any]:
    """(True, value) for a plain scalar this path can type exactly as PyYAML would; (False, None) otherwise."""
    if not _PLAIN.fullmatch(value):
        return False, None
    if value[0] not in _TYPED_FIRST and None not in _TYPED_FIRST:
        return True, value
    tag = _RESOLVER.resolve(yaml.ScalarNode, value, (True, False))
    if tag == "tag:yaml.org,2002:str":
        return True, value
    if tag == "tag:yaml.org,2002:null":
        return True, None
    if tag == "tag:yaml.org,2002:bool":
        return True, value.lower() in ("yes", "true", "on")
    if tag == "tag:yaml.org,2002:int" and _INT.fullmatch(value):
        return True, int(value)
    if tag == "tag:yaml.org,2002:float" and _FLOAT.fullmatch(value):
        return True, float(value)
    if tag == "tag:yaml.org,2002:timestamp" and len(value) == 20 and value[10] == "T" and value[19] == "Z":
        try:
            return True, dt.datetime.fromisoformat(value[:19])
        except ValueError:
            return False, None
    return False, None


def _flat_mapping(raw: str) -> tuple[bool, Any]:
    """(True, mapping) for a one-line flow mapping of plain text keys and plain scalars without `:`
    or brackets, like a card's progression `{at: chapters/ch01.md, state: 在家}`; (False, None) otherwise."""
    if raw[-1:] != "}" or any(ch in raw[1:-1] for ch in "[]{}"):
        return False, None
    out: dict[str, Any] = {}
    for piece in raw[1:-1].split(","):
        key, colon, value = piece.strip(" ").partition(":")
        if not colon or value[:1] != " " or ":" in value or key in out or _flat_scalar(key) != (True, key):
            return False, None  # a `:` in a flow value, an empty value or a key read as no text: PyYAML's
        ok, out[key] = _flat_scalar(value.strip(" "))
        if not ok:
            return False, None
    return True, out


def _load_flat(text: str) -> dict[str, Any] | None:
    result: dict[str, Any] = {}
    block_key: str | None = None  # a `key:` with nothing after it: `- item` lines may follow
    block_indent: int | None = None
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped[0] == "#":
            if stripped and line[0] != "#":
                return None  # an indented comment may sit inside a block: let PyYAML decide
            continue
        if "\t" in line:
            return None
        cut = line.find(" #")  # in plain scalars and flow lists, " #" always starts a comment
        if cut >= 0:
            line = line[:cut]
        if stripped[:2] == "- " and block_key is not None:
            indent = len(line) - len(line.lstrip(" "))
            if block_indent is None:
                block_indent = indent
            raw_item = line.strip(" ")[2:].strip(" ")  # YAML trims spaces, not U+00A0
            ok, item = _flat_mapping(raw_item) if raw_item[:1] == "{" else _flat_scalar(raw_item)
            if not ok or indent != block_indent:  # items out of line are PyYAML's to report
                return None
            if result[block_key] is None:
                result[block_key] = []
            result[block_key].append(item)  # in place: a 100,000-item list must not cost 10^10 copies
            continue
        if line[0] in " -":
            return None
        m = _FLAT_LINE.fullmatch(line)
        if m is None or m.group(1) in result:
            return None
        key, raw = m.group(1), (m.group(2) or "").strip(" \t")
        block_key, block_indent = (key if not raw else None), None
        if not raw:
            value: Any = None  # stays null unless `- item` lines follow
        elif raw[0] == "[" and raw[-1] == "]":
            inner = raw[1:-1].strip(" ")
            value = []
            for item in (inner.split(",") if inner else []):
                ok, parsed = _flat_scalar(item.strip(" "))
                if not ok:
                    return None
                value.append(parsed)
        else:
            ok, value = _flat_scalar(raw)
            if not ok:
                return None
        result[key] = value
    return result


def yaml_problem(e: Exception, text: str, first_line: int) -> tuple[int, str]:
    """A YAML error in `text` (which starts on file line `first_line`) as (file line, plain words for a writer)."""
    if isinstance(e, TooComplex):
        return first_line + e.line, e.message
    if isinstance(e, ValueError) and "digits" in str(e):  # Python's limit on int("…4,301 digits…")
        long = re.search(r"[0-9_]{4301}", text)
        line = first_line + (text.count("\n", 0, long.start()) if long else 0)
        return line, "a number has more digits than membank reads (4300); put it in quotes to keep it as text"
    if isinstance(e, RecursionError):
        return first_line, "values are nested too deeply; front matter should be flat `key: value` lines"
    if isinstance(e, UnbuildableValue):
        tagged = re.search(r"!!?[A-Za-z<]", text)
        return first_line + (text.count("\n", 0, tagged.start()) if tagged else 0), str(e)
    if not isinstance(e, yaml.MarkedYAMLError):
        return first_line, f"a value cannot be read ({e})"
    problem, context = e.problem or "", e.context or ""
    pmark, cmark = e.problem_mark, e.context_mark
    # where the trouble started, when the parser only noticed it later (an unclosed quote or bracket)
    use_context = cmark is not None and (pmark is None or context.startswith(
        ("while scanning a quoted scalar", "while parsing a flow", "while scanning a simple key")))
    mark = cmark if use_context else pmark
    line = first_line + mark.line if mark is not None else first_line
    lines = text.split("\n")
    char = ""
    if pmark is not None and pmark.line < len(lines):
        char = lines[pmark.line][pmark.column:pmark.column + 1]
    if "appears twice" in problem:
        first = first_line + cmark.line if cmark is not None else first_line
        return line, f"{problem} (first on line {first}); keep only one of them"
    if context.startswith("while scanning a quoted scalar"):
        return line, "a quote (\" or ') opened on this line is never closed; add the closing quote"
    if context.startswith("while parsing a flow"):
        return line, "a [ or { opened on this line is never closed; add the closing ] or }"
    if context.startswith("while scanning a simple key"):
        return line, ("this line is not a `key: value` line; add the key and a colon, "
                      "or start it with # to make it a comment")
    if char == "\t" or "tab character" in problem or "'\\t'" in problem:  # not "unconstructable"
        return line, "this line is indented with a tab; YAML needs spaces for indentation"
    if "mapping values are not allowed" in problem:
        return line, ("this line has a second `: ` that YAML cannot read; if the value contains a colon, put the "
                      'whole value in quotes (like summary: "Chapter 5: the fight"), otherwise check the indentation')
    if "cannot start any token" in problem and char:
        return line, f"a value cannot start with {char}; put the whole value in quotes"
    if "did not find expected" in problem or "expected <block end>" in problem:
        return line, "this line does not line up with the lines above it; check the spaces at its start"
    if "could not determine a constructor" in problem:
        return line, "markers starting with ! (like !!python/object) are not allowed; write a plain value"
    if "undefined alias" in problem:
        return line, "a value starting with * is read as a YAML alias; put the whole value in quotes"
    if "recursive" in problem:
        return line, "a value refers to itself through an alias (*); write the value out"
    if "for merging" in problem:
        return line, "`<<:` merges only a mapping or a list of mappings; write the keys out instead"
    return line, problem or context or "YAML cannot read it"


def yaml_lead(e: Exception, what: str) -> str:
    """How a YAML problem's message starts: valid YAML that membank refuses is not called invalid."""
    if isinstance(e, (TooComplex, RecursionError)) or (isinstance(e, ValueError) and "digits" in str(e)):
        return f"membank cannot read {what}"
    return f"{what} is not valid YAML"


class FrontMatterError(Exception):
    """The file cannot be read as front matter + body; `line` is 1-based in the file."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass(frozen=True)
class Document:
    meta: dict[str, Any]
    body: str
    fm_text: str  # the raw front matter, LF line endings
    body_line: int  # 1-based line of the first body line

    def key_line(self, key: str) -> int:
        """The file line where a top-level key is written (1 when it is absent)."""
        pattern = re.compile(rf"^['\"]?{re.escape(key)}['\"]?\s*:", re.MULTILINE)
        m = pattern.search(self.fm_text)
        if m is None:
            return 1
        return 2 + self.fm_text.count("\n", 0, m.start())

    @functools.cached_property
    def _nodes(self) -> Any:
        """The front matter composed into nodes, once per document (a card asks for the lines of two
        lists, each twice); None when it does not compose. It loaded a moment ago, so composing it
        again is within the same bounds."""
        try:
            return yaml.compose(self.fm_text, Loader=_Loader)  # noqa: S506 - nodes only, nothing built
        except yaml.YAMLError:  # pragma: no cover - it loaded a moment ago
            return None

    def item_lines(self, key: str) -> tuple[int, ...]:
        """The file line of each item of a top-level list (`relations:`, `progressions:`), so a value
        can be cited where it is written; () when the key is absent or not a list."""
        if not isinstance(self.meta.get(key), list):
            return ()
        root = self._nodes
        if not isinstance(root, yaml.MappingNode):
            return ()
        for key_node, value_node in root.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key and isinstance(value_node, yaml.SequenceNode):
                return tuple(2 + item.start_mark.line for item in value_node.value)
        return ()

    def raw_scalars(self, key: str) -> dict[str, str]:
        """The values of the top-level mapping `key:` as written (YAML 1.1 reads `yes` and `on` as true:
        a caller that allows only true/false needs the words themselves)."""
        if not isinstance(self.meta.get(key), dict):
            return {}
        root = self._nodes
        for key_node, value_node in root.value if isinstance(root, yaml.MappingNode) else ():
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key and isinstance(value_node, yaml.MappingNode):
                return {str(k.value): v.value for k, v in value_node.value
                        if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode)}
        return {}

    def nested_key_line(self, key: str, inner: str) -> int:
        """The file line of `inner:` inside the top-level mapping `key:` (its own line when not found)."""
        start = self.key_line(key)
        lines = self.fm_text.split("\n")
        pattern = re.compile(rf"(^|[\s{{,])['\"]?{re.escape(inner)}['\"]?\s*:")
        for i in range(start - 2, len(lines)):
            if i < 0:
                continue
            if i > start - 2 and lines[i][:1] not in (" ", "\t", "") and not lines[i].startswith("#"):
                break  # the next top-level key
            text = lines[i] if i > start - 2 else lines[i].split(":", 1)[-1]
            if pattern.search(text):
                return i + 2
        return start


def decode(data: bytes) -> str:
    """Bytes to text; raises FrontMatterError with a writer's message."""
    if len(data) > MAX_FILE_BYTES:  # the reader may stop at 1 MiB + 1 byte, so the real size is not known here
        raise FrontMatterError(1, "the file is larger than 1 MiB (1024 KiB), the most membank reads; "
                               "split it into smaller files")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise FrontMatterError(1, "the file is saved as UTF-16 (\"Unicode\" in some editors); save it as UTF-8")
    if b"\x00" in data:
        raise FrontMatterError(1, "this looks like a binary file (a picture or a document from another program), "
                               "not text; only Markdown text files belong here")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise FrontMatterError(line, "the file is not UTF-8 text (this line has a character saved in another "
                               "encoding); save the file as UTF-8 in your editor") from None
    if text.startswith(BOM):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _load_yaml(fm_text: str) -> Any:
    try:
        return yamlmemo.loaded(fm_text, load_yaml)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as e:
        line, problem = yaml_problem(e, fm_text, 2)
        raise FrontMatterError(line, f"{yaml_lead(e, 'the front matter')}: {problem}") from None


_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$", re.MULTILINE)


def bounds(text: str) -> tuple[int, int, int] | None:
    """Where the front matter of `text` (LF endings) starts and ends, and where its closing line ends;
    None when the file has none. The reader and the rewriter both use this, so they always agree."""
    if not text.startswith("---") or text[3:4] not in ("\n", "", " ", "\t"):
        return None
    first_nl = text.find("\n")
    if first_nl < 0 or text[3:first_nl].strip():
        if first_nl < 0:
            raise FrontMatterError(1, "the front matter opened with --- on line 1 is never closed with ---")
        raise FrontMatterError(1, "the first line should be just --- to open the front matter")
    m = _CLOSE.search(text, first_nl + 1)
    if m is None:
        raise FrontMatterError(1, "the front matter opened with --- on line 1 is never closed with ---")
    return first_nl + 1, m.start(), m.end()


def split(text: str) -> Document:
    """Text (LF endings) to front matter + body. A file without front matter has empty meta."""
    found = bounds(text)
    if found is None:
        return Document({}, text.strip(), "", 1)
    fm_start, fm_end, close_end = found
    fm_text = text[fm_start:fm_end]
    body_start = close_end + 1
    rest = text[body_start:]
    lead = len(rest) - len(rest.lstrip())  # the body is stripped: its first line is its first written one
    body_line = text.count("\n", 0, min(body_start, len(text))) + 1 + rest.count("\n", 0, lead)
    meta = _load_yaml(fm_text) if fm_text.strip() else {}
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        what = "a list (lines starting with -)" if isinstance(meta, list) else "a single value"
        raise FrontMatterError(2, f"the front matter should be `key: value` lines (like `type: note`), not {what}")
    return Document(meta, text[body_start:].strip(), fm_text, body_line)


def iso(value: Any) -> str | None:
    """A YAML date/time or ISO string as `YYYY-MM-DDTHH:MM:SSZ` (UTC); None if it is not a time, or
    not one that exists in UTC (9999-12-31T23:59:59-05:00 is past year 9999 there)."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
        except ValueError:
            return None
    else:
        return None
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
        except (OverflowError, ValueError):
            return None
    # by hand, not strftime: %Y gives "999", not "0999", on glibc, and ISO readers refuse that
    text = (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
            f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def iso_to_micros(value: str) -> int:
    """An `iso()` string as microseconds since the epoch, for ordering (exact, years 1 to 9999)."""
    moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return (moment - _EPOCH) // dt.timedelta(microseconds=1)


def jsonable(value: Any) -> Any:
    """YAML values as JSON values (times become ISO strings, bytes a placeholder)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [jsonable(v) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return iso(value)
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    if isinstance(value, float) and not math.isfinite(value):  # NaN and .inf are not JSON
        return None
    return value
