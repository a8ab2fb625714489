"""Checking a channel's payload against its Python type, within bounds, before anything runs.

Every value that reaches a handler is of its declared type, every string is text UTF-8 can carry
(JSON's `\\ud800` escapes can smuggle in a lone surrogate), and every size is bounded: a string's
length (`Most(chars)` on the field, else `MAX_CHARS`), a list's length (`Most(items)`, else
`MAX_ITEMS`), a number's range where a field has one (`Within(low, high)`), and free-form values
(`metadata`, `evidence` items) by nesting depth and node count.
A value outside them is INVALID_ARGUMENT naming the field, never a failure further in.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from . import errors, shapes
from .errors import MembankError
from .limits import MAX_FILE_BYTES
from .shapes import Most, Within  # defined with the walker that reads them; channel types import them from here

MAX_CHARS = 100_000  # a string field without its own bound (a query, a label, a metadata value)
MAX_ITEMS = 1_000  # a list without its own bound
MAX_DEPTH = 32  # nesting of free-form values: metadata, evidence items
MAX_NODES = 10_000  # values inside one free-form field, all levels together
MAX_INT = 2 ** 63 - 1  # what SQLite and every JSON reader that matters can hold
MAX_DEADLINE_MS = 10 * 60 * 1000  # a call's `deadlineMs` (kernel/cancel.py): at most ten minutes
MAX_QUERY_CHARS = 10_000  # a query or an instruction: a few pages (a 100,000-character query cost a preview ~2.6 s)


# Bounded field types. A string or list field without a bound of its own gets MAX_CHARS or MAX_ITEMS.
Id = Annotated[str, Most(chars=200)]  # memory, project, run and skill ids (a memory id allows 200)
TypeName = Annotated[str, Most(chars=64)]  # a memory type: one lower-case word, also a folder name
DocPath = Annotated[str, Most(chars=1024)]  # a project-relative document path
Tag = Annotated[str, Most(chars=128)]
Tags = Annotated[list[Tag], Most(items=100)]
Content = Annotated[str, Most(chars=MAX_FILE_BYTES)]  # a memory file holds at most 1 MiB
Evidence = list[Any]
QueryText = Annotated[str, Most(chars=MAX_QUERY_CHARS)]  # what recall looks for; the writer's instruction
DeadlineMs = Annotated[int, Within(1, MAX_DEADLINE_MS)]  # the field that bounds a long call (kernel/cancel.py)


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _key(key: str) -> str:
    """A key as a field path names it: short, and sendable as UTF-8 (a lone surrogate written as \\ud800)."""
    return _short(key.encode("utf-8", "backslashreplace").decode("utf-8"))


def _field(where: str) -> str:
    """The field as a message names it: the last part of a long path."""
    return _short(where, 80)


def check_text(value: str, where: str, most: int = MAX_CHARS) -> str:
    if len(value) > most:
        raise errors.invalid(where, f"`{_field(where)}` is longer than {most:,} characters")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise errors.invalid(where, f"`{_field(where)}` holds text that is not valid Unicode (a lone surrogate)") \
                from None
    return value


def check_json(value: Any, where: str) -> Any:
    """A free-form value (metadata, an evidence item): JSON's types only, text UTF-8 can carry, at most
    MAX_DEPTH levels deep and MAX_NODES values in all. Iterative, so no depth can exhaust the stack."""
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    nodes = 0
    while stack:
        item, at, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise errors.invalid(where, f"`{_field(where)}` holds more than {MAX_NODES:,} values")
        if item is None or isinstance(item, bool):
            continue
        if isinstance(item, int):
            if abs(item) > MAX_INT:
                raise errors.invalid(at, f"`{_field(at)}` is a number too large to keep")
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise errors.invalid(at, f"`{_field(at)}` must be a finite number")
        elif isinstance(item, str):
            check_text(item, at)
        elif isinstance(item, (list, dict)):
            if depth > MAX_DEPTH:
                raise errors.invalid(where, f"`{_field(where)}` is nested more than {MAX_DEPTH} levels deep")
            if isinstance(item, list):
                stack.extend((v, f"{at}[{i}]", depth + 1) for i, v in enumerate(item))
                continue
            for key, v in item.items():
                if not isinstance(key, str):
                    raise errors.invalid(at, f"`{_field(at)}` has a key that is not text")
                check_text(key, f"{at}.{_key(key)}", 1_000)
                stack.append((v, f"{at}.{_key(key)}", depth + 1))
        else:
            raise errors.invalid(at, f"`{_field(at)}` must be text, a number, true/false, null, a list or an object")
    return value


_NAMES = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true or false"}


def type_name(tp: Any) -> str:
    return _name(shapes.shape_of(tp))


def _name(shape: shapes.Shape) -> str:
    if isinstance(shape, shapes.Enum):
        return " or ".join(repr(a) for a in shape.values)
    if isinstance(shape, shapes.Union):
        return " or ".join(_name(m) for m in shape.options)
    if isinstance(shape, (shapes.ListOf, shapes.MapOf)):
        return "a list" if isinstance(shape, shapes.ListOf) else "an object"
    if isinstance(shape, shapes.Record):
        return "an object" if shape.built else str(shape.cls)
    if isinstance(shape, shapes.Scalar):
        return _NAMES.get(shape.kind, str(type(None)))
    if isinstance(shape, shapes.Opaque):
        return str(shape.tp)
    return str(Any)  # Free


def check(tp: Any, value: Any, where: str, most: Most | None = None) -> Any:
    """`value` as the type `tp` asks; INVALID_ARGUMENT naming `where` otherwise."""
    return _check(shapes.shape_of(tp, most), value, where)


def _check(shape: shapes.Shape, value: Any, where: str) -> Any:
    # the kinds in order of how often a payload field is one
    if isinstance(shape, shapes.Scalar):
        return _scalar(shape, value, where)
    if isinstance(shape, shapes.Union):
        return _union(shape, value, where)
    if isinstance(shape, shapes.Enum):
        if not isinstance(value, (list, dict)) and value in shape.values:
            return value
        raise errors.invalid(where, f"`{where}` must be {_name(shape)}")
    if isinstance(shape, shapes.Free):
        return check_json(value, where)
    if isinstance(shape, shapes.ListOf):
        if not isinstance(value, list):
            raise errors.invalid(where, f"`{where}` must be a list")
        limit = shape.most if shape.most is not None else MAX_ITEMS
        if len(value) > limit:
            raise errors.invalid(where, f"`{where}` has more than {limit:,} items")
        return [_check(shape.item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(shape, shapes.MapOf):
        if not isinstance(value, dict):
            raise errors.invalid(where, f"`{where}` must be an object")
        return check_json(value, where)  # an object's values are free-form, whatever the annotation says
    if isinstance(shape, shapes.Record) and shape.built:
        if not isinstance(value, dict):  # null included: a nested object (a patch) is required whole
            raise errors.invalid(where, f"`{where}` must be an object")
        # it arrives as a dict of the keys sent, so null and absent differ
        checked = _build(shape, value, where)
        return {k: getattr(checked, k) for k in value}
    raise TypeError(f"no payload check for the type {_name(shape)}")  # a channel declared a type it cannot take


def _union(shape: shapes.Union, value: Any, where: str) -> Any:
    if value is None and shape.nullable:
        return None
    last: MembankError | None = None
    for option in shape.options:
        try:
            return _check(option, value, where)
        except MembankError as e:
            last = e
    raise last or errors.invalid(where, f"`{where}` has the wrong type")


def _scalar(shape: shapes.Scalar, value: Any, where: str) -> Any:
    kind = shape.kind
    if kind == "str":
        ok = isinstance(value, str)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    else:
        raise TypeError(f"no payload check for the type {_name(shape)}")
    if not ok:
        raise errors.invalid(where, f"`{where}` must be {_NAMES[kind]}")
    if kind == "str":
        return check_text(value, where, shape.chars if shape.chars is not None else MAX_CHARS)
    if kind == "float" and (abs(value) > MAX_INT if isinstance(value, int) else not math.isfinite(value)):
        raise errors.invalid(where, f"`{where}` must be a finite number")  # an int past 2**63 has no float
    if kind == "int" and abs(value) > MAX_INT:
        raise errors.invalid(where, f"`{where}` is too large")
    if shape.within is not None and not shape.within.low <= value <= shape.within.high:
        raise errors.invalid(where, f"`{where}` must be from {shape.within.low:,} to {shape.within.high:,}")
    return value


def build(cls: type, payload: Any, prefix: str = "") -> Any:
    """A payload dict as `cls`; INVALID_ARGUMENT names the first wrong field."""
    shape = shapes.shape_of(cls)
    if not (isinstance(shape, shapes.Record) and shape.built):
        raise TypeError(f"{cls!r} is not a dataclass")
    return _build(shape, payload, prefix)


def _build(record: shapes.Record, payload: Any, prefix: str) -> Any:
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise errors.invalid(prefix or "params", f"`{prefix or 'params'}` must be an object")
    values: dict[str, Any] = {}
    for f in record.fields:
        where = f"{prefix}.{f.name}" if prefix else f.name
        if f.name not in payload:
            if f.required:
                raise errors.invalid(where, f"`{where}` is required")
            continue
        values[f.name] = _check(f.shape, payload[f.name], where)
    if len(values) < len(payload):  # every key sent that is a field is in values by now
        names = {f.name for f in record.fields}
        unknown = sorted((k for k in payload if k not in names), key=str)
        name = _short(str(unknown[0]).encode("utf-8", "backslashreplace").decode("utf-8"))  # shown, so made printable
        where = f"{prefix}.{name}" if prefix else name
        raise errors.invalid(where, f"`{where}` is not a field of this channel")
    return record.cls(**values)
