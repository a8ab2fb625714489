"""The shape of a Python type annotation, read once: what payload checks and JSON Schemas both walk.

A channel's payload dataclass and its data TypedDict are the contract. Two consumers read them, the
payload check (every call) and the JSON Schema generator (docs/schema/), and each used to walk
`typing` on its own. `shape_of` walks it here, once per type, into a small tree of frozen records:
`Scalar`, `Enum`, `Union`, `ListOf`, `MapOf`, `Record` (a dataclass or a TypedDict), `Free` (Any)
and `Opaque` (a type neither consumer can express; each refuses it in its own words). The `Most`
bounds of `Annotated` ride on the `Scalar` strings and the `ListOf` lists they bound, the `Within`
bounds on the `Scalar` numbers.
"""

from __future__ import annotations

import dataclasses
import threading
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, Required, TypeAlias


@dataclass(frozen=True)
class Most:
    """The bound of one field: `chars` for a string, `items` for a list."""

    chars: int | None = None
    items: int | None = None


@dataclass(frozen=True)
class Within:
    """The bound of a number field: from `low` to `high`, both included."""

    low: int | float
    high: int | float


Kind = Literal["str", "int", "float", "bool", "null"]
_KINDS: dict[Any, Kind] = {str: "str", int: "int", float: "float", bool: "bool", type(None): "null", None: "null"}


@dataclass(frozen=True)
class Scalar:
    """str, int, float, bool or None; `chars` is a string's own bound (None: the consumer's default),
    `within` a number's (None: any the consumer accepts)."""

    kind: Kind
    chars: int | None = None
    within: Within | None = None


@dataclass(frozen=True)
class Enum:
    """A Literal: one of `values`, in the order written."""

    values: tuple[Any, ...]


@dataclass(frozen=True)
class Union:
    """One of `members`, in the order written; None stays where it was written (a schema keeps the order)."""

    members: tuple[Shape, ...]
    # read on every payload check, so worked out once
    options: tuple[Shape, ...] = dataclasses.field(init=False, compare=False, repr=False)  # the members but None
    nullable: bool = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        options = tuple(m for m in self.members if not _is_null(m))
        object.__setattr__(self, "options", options)
        object.__setattr__(self, "nullable", len(options) < len(self.members))


@dataclass(frozen=True)
class ListOf:
    """A list of `item`; `most` is its own bound on the number of items (None: the consumer's default)."""

    item: Shape
    most: int | None = None


@dataclass(frozen=True)
class MapOf:
    """An object of `value`s; `text_keys` is False when the annotation's keys are not `str`."""

    value: Shape
    text_keys: bool = True


@dataclass(frozen=True)
class Free:
    """Any: a free-form JSON value."""


@dataclass(frozen=True)
class Opaque:
    """A type with no shape here (a set, a bare dict, a class): the consumer says why it cannot use it."""

    tp: Any


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()  # a field that is required, or whose default comes from a factory


@dataclass(frozen=True)
class Field:
    """One field of a record: `required` when it has neither a default nor a factory; `default` a plain
    default (a factory's value is made per instance, so no schema can state it)."""

    name: str
    shape: Shape
    required: bool
    default: Any = NO_DEFAULT


@dataclass(frozen=True)
class Record:
    """A dataclass (`built`: a payload check builds one) or a TypedDict; its fields are read on first use,
    so a record may refer to itself."""

    name: str
    cls: type
    doc: str | None
    built: bool

    @property
    def fields(self) -> tuple[Field, ...]:
        return record_fields(self.cls)


Shape: TypeAlias = "Scalar | Enum | Union | ListOf | MapOf | Record | Free | Opaque"

_lock = threading.Lock()  # the caches fill once per type; the lock only keeps two first readers from racing
# keyed by identity, not equality: typing's equality ignores order (`str | None == None | str`,
# Literal["a", "b"] == Literal["b", "a"]) and both consumers keep the written order. The entry holds
# the annotation, so its id is not reused; typing caches its aliases, so a type is usually one object.
_shapes: dict[tuple[int, Most | None], tuple[Any, Shape]] = {}
_MAX_CACHED = 4_096  # annotations built afresh on every call must not grow the cache without end
_records: dict[type, Record] = {}
_fields: dict[type, tuple[Field, ...]] = {}


def shape_of(tp: Any, most: Most | None = None) -> Shape:
    """The shape of the annotation `tp`; `most` bounds it as an enclosing `Annotated` would."""
    key = (id(tp), most)
    hit = _shapes.get(key)
    if hit is not None and hit[0] is tp:
        return hit[1]
    found = _walk(tp, most)
    if len(_shapes) < _MAX_CACHED:
        with _lock:
            _shapes[key] = (tp, found)
    return found


def is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _is_null(shape: Shape) -> bool:
    return isinstance(shape, Scalar) and shape.kind == "null"


def _walk(tp: Any, most: Most | Within | None) -> Shape:
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        inner, *extras = typing.get_args(tp)
        # an Annotated without a bound clears an outer bound: the nearest annotation decides
        return _walk(inner, next((e for e in extras if isinstance(e, (Most, Within))), None))
    if tp is Any:
        return Free()
    if origin is Literal:
        return Enum(typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        # a bound on a union bounds each member (`Annotated[str | None, Most(chars=5)]`)
        return Union(tuple(_walk(a, most) for a in typing.get_args(tp)))
    if origin is list and len(typing.get_args(tp)) == 1:
        (item,) = typing.get_args(tp)
        return ListOf(_walk(item, None), most.items if isinstance(most, Most) else None)
    if origin is dict and len(typing.get_args(tp)) == 2:
        key, value = typing.get_args(tp)
        return MapOf(_walk(value, None), key is str)
    if (isinstance(tp, type) and dataclasses.is_dataclass(tp)) or is_typeddict(tp):
        return _record(tp)
    try:
        kind = _KINDS.get(tp)
    except TypeError:  # an unhashable annotation
        kind = None
    if kind is None:
        return Opaque(tp)
    within = most if kind in ("int", "float") and isinstance(most, Within) else None
    return Scalar(kind, most.chars if kind == "str" and isinstance(most, Most) else None, within)


def _record(cls: type) -> Record:
    found = _records.get(cls)
    if found is None:
        found = Record(cls.__name__, cls, _doc(cls), dataclasses.is_dataclass(cls))
        with _lock:
            found = _records.setdefault(cls, found)
    return found


def _doc(cls: type) -> str | None:
    doc = cls.__doc__
    if not doc or doc.startswith(cls.__name__ + "("):  # the dataclass's generated signature says nothing new
        return None
    return " ".join(doc.split())


def record_fields(cls: type) -> tuple[Field, ...]:
    """The fields of a dataclass or TypedDict, in declaration order."""
    found = _fields.get(cls)
    if found is None:
        found = _dataclass_fields(cls) if dataclasses.is_dataclass(cls) else _typeddict_fields(cls)
        with _lock:
            found = _fields.setdefault(cls, found)
    return found


def _dataclass_fields(cls: type) -> tuple[Field, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in dataclasses.fields(cls):
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = f.default if f.default is not dataclasses.MISSING else NO_DEFAULT
        out.append(Field(f.name, _walk(hints[f.name], None), required, default))
    return tuple(out)


def _typeddict_fields(cls: type) -> tuple[Field, ...]:
    # __required_keys__ is wrong under `from __future__ import annotations` before 3.12: read the hints
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for key, hint in hints.items():
        origin = typing.get_origin(hint)
        needed = bool(getattr(cls, "__total__", True))
        if origin is NotRequired:
            needed, hint = False, typing.get_args(hint)[0]
        elif origin is Required:
            needed, hint = True, typing.get_args(hint)[0]
        out.append(Field(key, _walk(hint, None), needed))
    return tuple(out)
