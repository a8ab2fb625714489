"""Facet schemas (story.md, Facet schemas): what a facet may hold, declared in settings.yaml
`story.facets` (`type`: text | bool | int | enum | list; `min`/`max` for int, `values` for enum;
`functional: true` for one value at a time, checked against scenes). Pure: a schema and a value in,
what is wrong out. The value is still read as written; `doctor` reports it."""

from __future__ import annotations

from typing import Any, Iterable

from ...files.records import WARNING, Diagnostic
from .state import progressions

TYPES = ("text", "bool", "int", "enum", "list")


def schema_problem(facet: str, schema: dict[str, Any]) -> str | None:
    """What is wrong with a schema as written (None: nothing)."""
    kind = schema.get("type", "text")
    if kind not in TYPES:
        return f"`story.facets.{facet}.type` should be one of {', '.join(TYPES)}, not {kind!r}"
    if kind == "enum" and not isinstance(schema.get("values"), list):
        return f"`story.facets.{facet}` is an enum: give its `values: [...]`"
    for bound in ("min", "max"):
        if bound in schema and (not isinstance(schema[bound], int) or isinstance(schema[bound], bool)):
            return f"`story.facets.{facet}.{bound}` should be a whole number"
    return None


def allowed(schema: dict[str, Any]) -> str:
    """What a schema allows, as a writer reads it."""
    kind = schema.get("type", "text")
    if kind == "bool":
        return "true or false"
    if kind == "int":
        low, high = schema.get("min"), schema.get("max")
        span = f" from {low} to {high}" if low is not None and high is not None else \
            f" of at least {low}" if low is not None else f" of at most {high}" if high is not None else ""
        return "a whole number" + span
    if kind == "enum":
        return "one of " + ", ".join(map(str, schema.get("values") or []))
    if kind == "list":
        return "a list ([a, b])"
    return "a text"


def breaks(schema: dict[str, Any], value: Any) -> bool:
    """Whether `value` breaks `schema` (a schema that is itself wrong breaks nothing)."""
    if schema_problem("", schema) is not None:
        return False
    kind = schema.get("type", "text")
    if kind == "bool":
        return not isinstance(value, bool)
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            return True
        return ("min" in schema and value < schema["min"]) or ("max" in schema and value > schema["max"])
    if kind == "enum":
        return str(value) not in {str(v) for v in schema.get("values") or []}
    if kind == "list":
        return not isinstance(value, list)
    return isinstance(value, (list, dict))  # text: any single value


def _show(value: Any) -> str:
    return "true" if value is True else "false" if value is False else repr(value) if isinstance(value, str) \
        else str(value)


def card_problems(cards: Iterable[dict[str, Any]], schemas: dict[str, dict[str, Any]]) -> list[Diagnostic]:
    """A warning for each progression value (`set:`) that breaks its facet's schema, on its line."""
    out = []
    usable = {k: v for k, v in schemas.items() if isinstance(v, dict) and schema_problem(k, v) is None}
    if not usable:
        return out
    for card in cards:
        for at, item, line in progressions(card):
            facets = item.get("set")
            if not isinstance(facets, dict):
                continue
            for facet, value in facets.items():
                schema = usable.get(str(facet))
                if schema is not None and breaks(schema, value):
                    out.append(Diagnostic(card["source"], line, WARNING,
                                          f"the facet `{facet}` at {at} is {_show(value)}, but settings.yaml "
                                          f"`story.facets` allows {allowed(schema)}; it is read as written"))
    return out


def settings_problems(schemas: dict[str, dict[str, Any]], source: str, line: int) -> list[Diagnostic]:
    """A warning for each schema that is itself wrong (it checks nothing until fixed)."""
    return [Diagnostic(source, line, WARNING, problem + "; it checks nothing until fixed")
            for facet, schema in schemas.items()
            if (problem := schema_problem(facet, schema)) is not None]
