"""The shape of a proposal (capture.md, propose): the nine operations, their fields and types, checked
before anything is looked up, and the JSON Schema a model is asked to answer in. Pure."""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from ...kernel import errors
from ...kernel.errors import MembankError
from .evidence import MAX_QUOTE_CHARS

MAX_OPS = 1_000  # ops in one call: a chapter's changes, not a book's
MAX_FIELD_CHARS = 2_000  # a name, a state, a note, a fact
THREAD_ACTIONS = ("open", "touch", "resolve", "drop")
TEXT, TEXTS, FACETS = "text", "texts", "facets"

# op -> {field: (type, required)}; every op also has `evidence` (a quote from the chapter)
OPS: dict[str, dict[str, tuple[str, bool]]] = {
    "entity": {"name": (TEXT, True), "kind": (TEXT, True), "aliases": (TEXTS, False), "summary": (TEXT, False)},
    "progress": {"entity": (TEXT, True), "state": (TEXT, False), "set": (FACETS, False), "scene": (TEXT, False)},
    "relate": {"entity": (TEXT, True), "to": (TEXT, True), "type": (TEXT, True), "note": (TEXT, False)},
    "unrelate": {"entity": (TEXT, True), "to": (TEXT, True), "type": (TEXT, True)},
    "fact": {"content": (TEXT, True), "entities": (TEXTS, False), "until": (TEXT, False)},
    "invalidate": {"fact": (TEXT, True)},
    "thread": {"title": (TEXT, True), "action": (TEXT, True), "entities": (TEXTS, False)},
    "reveal": {"fact": (TEXT, False), "content": (TEXT, False)},
    "scene": {"scene": (TEXT, False), "pov": (TEXT, False), "present": (TEXTS, False), "location": (TEXT, False),
              "date": (TEXT, False)},
}
# op -> the fields that may be null: the op takes that value away (a scene's key removed from its file)
CLEARABLE: dict[str, frozenset[str]] = {"scene": frozenset({"pov", "present", "location", "date"})}


def _bad(index: int, field: str, message: str) -> MembankError:
    return errors.invalid(f"ops[{index}].{field}" if field else f"ops[{index}]", f"op {index}: {message}")


PROSE = frozenset({"content", "summary", "state", "note", "evidence"})  # the fields that may hold line breaks
_CONTROL = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x84\x86-\x9f]")  # never in any text (tab is text)
_CONTROL_OR_BREAK = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")  # nor a break in a name


def _text(value: Any, index: int, field: str, most: int = MAX_FIELD_CHARS) -> None:
    if not isinstance(value, str) or not value.strip():
        raise _bad(index, field, f"`{field}` should be a non-empty text")
    if len(value) > most:
        raise _bad(index, field, f"`{field}` is {len(value):,} characters long, more than the {most:,} allowed")
    prose = field.split(".")[0] in PROSE
    found = (_CONTROL if prose else _CONTROL_OR_BREAK).search(value)  # a name goes into a file as one line:
    if found:  # a break there would write another key or heading
        raise _bad(index, field, f"`{field}` holds a control character or a line break (U+{ord(found.group()):04X}); "
                   + ("only text" if not prose else "only text and line breaks") + " belong there")


def _value(value: Any, index: int, field: str, depth: int = 0) -> None:
    """A facet value: text, number, true/false, or a short list of those."""
    if isinstance(value, str):
        _text(value, index, field)
    elif isinstance(value, list) and depth == 0 and len(value) <= 100:
        for item in value:
            _value(item, index, field, 1)
    elif not isinstance(value, (bool, int, float)) or value != value:
        raise _bad(index, field, f"`{field}` should be a text, a number, true/false or a list of those")


def check(op: Any, index: int) -> dict[str, Any]:
    """The op as given, if its shape is right; INVALID_ARGUMENT naming the op's index and field."""
    if not isinstance(op, dict):
        raise _bad(index, "", "an op is an object with `op`, its fields and `evidence`")
    kind = op.get("op")
    if kind not in OPS:
        raise _bad(index, "op", f"`op` is one of {', '.join(OPS)}")
    fields = OPS[kind]
    for key in op:
        if key not in fields and key not in ("op", "evidence"):
            raise _bad(index, key, f"a `{kind}` op has no field `{key}` (it has {', '.join(fields)}, evidence)")
    _text(op.get("evidence"), index, "evidence", MAX_QUOTE_CHARS)
    for key, (kind_of, required) in fields.items():
        if key not in op:
            if required:
                raise _bad(index, key, f"a `{kind}` op needs `{key}`")
            continue
        value = op[key]
        if value is None and key in CLEARABLE.get(kind, ()):
            continue
        if kind_of == TEXT:
            _text(value, index, key)
        elif kind_of == TEXTS:
            if not isinstance(value, list) or len(value) > 100:
                raise _bad(index, key, f"`{key}` should be a list of at most 100 texts")
            for item in value:
                _text(item, index, key)
        else:
            if not isinstance(value, dict) or not value or len(value) > 100:
                raise _bad(index, key, f"`{key}` should be an object of 1 to 100 `facet: value` pairs")
            for name, item in value.items():
                _text(name, index, f"{key}.{name}", 200)
                _value(item, index, f"{key}.{name}")
    if kind == "progress" and "state" not in op and "set" not in op:
        raise _bad(index, "state", "a `progress` op needs `state`, `set` or both")
    if kind == "thread" and op["action"] not in THREAD_ACTIONS:
        raise _bad(index, "action", f"`action` is one of {', '.join(THREAD_ACTIONS)}")
    if kind == "reveal" and ("fact" in op) == ("content" in op):
        raise _bad(index, "fact", "a `reveal` op has `fact` (an id) or `content`, one of them")
    if kind == "scene" and len(op) <= 2:
        raise _bad(index, "scene", "a `scene` op needs at least one of scene, pov, present, location, date")
    return op


def check_all(ops: Any) -> list[dict[str, Any]]:
    if not isinstance(ops, list):
        raise errors.invalid("ops", "`ops` is a list of operations")
    if len(ops) > MAX_OPS:
        raise errors.invalid("ops", f"{len(ops):,} ops in one call, more than the {MAX_OPS:,} allowed; "
                             "propose a chapter's changes in smaller calls")
    return [check(op, i) for i, op in enumerate(ops)]


def _field_schema(kind_of: str) -> dict[str, Any]:
    text = {"type": "string", "minLength": 1, "maxLength": MAX_FIELD_CHARS}
    if kind_of == TEXT:
        return text
    if kind_of == TEXTS:
        return {"type": "array", "items": text, "maxItems": 100}
    scalar = [text, {"type": "number"}, {"type": "boolean"}]
    return {"type": "object", "minProperties": 1, "maxProperties": 100,
            "additionalProperties": {"anyOf": [*scalar, {"type": "array", "items": {"anyOf": scalar}}]}}


def proposal_schema() -> dict[str, Any]:
    """The JSON Schema of a proposal: `{ops: [...]}`, one variant per op."""
    variants = []
    for kind, fields in OPS.items():
        props: dict[str, Any] = {"op": {"const": kind},
                                 "evidence": {"type": "string", "minLength": 1, "maxLength": MAX_QUOTE_CHARS,
                                              "description": "a quote copied from the chapter"}}
        props.update({k: _field_schema(t) for k, (t, _) in fields.items()})
        for k in sorted(CLEARABLE.get(kind, ())):
            props[k] = {"anyOf": [props[k], {"type": "null"}], "description": "null takes the value away"}
        if kind == "thread":
            props["action"] = {"enum": list(THREAD_ACTIONS)}
        variants.append({"type": "object", "properties": props, "additionalProperties": False,
                         "required": ["op", "evidence", *[k for k, (_, r) in fields.items() if r]]})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "membank capture proposal",
            "type": "object", "required": ["ops"], "additionalProperties": False,
            "properties": {"ops": {"type": "array", "maxItems": MAX_OPS, "items": {"oneOf": variants}}}}


@functools.lru_cache(maxsize=1)
def schema_text() -> str:
    """The JSON Schema as the prompt shows it (made once: it never changes while membank runs)."""
    return json.dumps(proposal_schema(), ensure_ascii=False, indent=1)
