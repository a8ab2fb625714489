"""JSON Schemas for every channel's payload and data, generated from the Python types.

The payload dataclasses and the data TypedDicts in each domain's `channels.py` are the contract (read
through `membank.kernel.shapes`, the walker the payload checks use too); the files in
`docs/schema/` are derived from them so the app can generate its TypeScript types. Regenerate with

    python -m membank.shells.schema            # writes docs/schema/*.json
    python -m membank.shells.schema --check    # exits 1 when the checked-in files have drifted

A test regenerates in memory and compares, so a type change without regenerated schemas (or a
channel without a data type) fails the suite.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Literal, Optional, TypedDict

from ..domains.indexing.channels import DiagnosticItem
from ..kernel import shapes

DIALECT = "https://json-schema.org/draft/2020-12/schema"
DEFAULT_DIR = Path(__file__).resolve().parents[2] / "docs" / "schema"


class SchemaError(Exception):
    """A type the generator cannot express, or a channel without a declared data type."""


class IndexChanged(TypedDict):
    """Sent by the server (a JSON-RPC notification) after the watcher re-indexed changed files."""

    projectId: str
    sources: list[str]
    diagnostics: list[DiagnosticItem]  # problems `membank doctor` now reports that the batch introduced
    fixed: list[DiagnosticItem]  # problems the batch cleared (as they were last reported)
    diagnosticsTotal: int  # how many the batch introduced (`diagnostics` lists at most 200)
    fixedTotal: int  # how many it cleared (`fixed` lists at most 200)


def file_name(channel: str) -> str:
    """`memory:injection:preview` -> `memory.injection.preview.json` (colons are not portable in file names)."""
    return channel.replace(":", ".") + ".json"


_SIMPLE = {"str": "string", "bool": "boolean", "int": "integer", "float": "number", "null": "null"}
_JSON_KINDS = {str: "string", bool: "boolean", int: "integer", float: "number"}


class _Builder:
    """Schemas for Python types, named classes collected once under `$defs`. The bounds a shape carries
    (`Most`) are the payload check's business and stay out of the schemas."""

    def __init__(self) -> None:
        self.defs: dict[str, dict[str, Any]] = {}
        self._owners: dict[str, type] = {}

    def of(self, tp: Any, where: str) -> dict[str, Any]:
        return self.shape(shapes.shape_of(tp), where)

    def shape(self, shape: shapes.Shape, where: str) -> dict[str, Any]:
        if isinstance(shape, shapes.Free):
            return {}
        if isinstance(shape, shapes.Scalar):
            return {"type": _SIMPLE[shape.kind]}
        if isinstance(shape, shapes.Enum):
            values = list(shape.values)
            kinds = sorted({_JSON_KINDS[type(v)] for v in values})
            return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
        if isinstance(shape, shapes.Union):
            return self._union([self.shape(m, where) for m in shape.members])
        if isinstance(shape, shapes.ListOf):
            return {"type": "array", "items": self.shape(shape.item, f"{where}[]")}
        if isinstance(shape, shapes.MapOf):
            if not shape.text_keys:
                raise SchemaError(f"{where}: object keys must be strings")
            schema: dict[str, Any] = {"type": "object"}
            if not isinstance(shape.value, shapes.Free):
                schema["additionalProperties"] = self.shape(shape.value, f"{where}{{}}")
            return schema
        if isinstance(shape, shapes.Record):
            return self.named(shape)
        raise SchemaError(f"{where}: no JSON Schema for the type {shape.tp!r}")

    @staticmethod
    def _union(members: list[dict[str, Any]]) -> dict[str, Any]:
        if all(set(m) == {"type"} and isinstance(m["type"], str) for m in members):
            return {"type": [m["type"] for m in members]}
        if all(set(m) == {"type", "enum"} or m == {"type": "null"} for m in members):
            kinds = [k for m in members for k in ([m["type"]] if isinstance(m["type"], str) else m["type"])]
            values = [v for m in members for v in m.get("enum", [None])]
            return {"type": list(dict.fromkeys(kinds)), "enum": values}
        return {"anyOf": members}

    def named(self, record: shapes.Record) -> dict[str, Any]:
        name = record.name
        owner = self._owners.get(name)
        if owner is not None and owner is not record.cls:
            raise SchemaError(f"two types are named {name}: {owner.__module__} and {record.cls.__module__}")
        if owner is None:
            self._owners[name] = record.cls
            self.defs[name] = {}  # placeholder first: a type may refer to itself
            self.defs[name] = self._object(record)
        return {"$ref": f"#/$defs/{name}"}

    def _object(self, record: shapes.Record) -> dict[str, Any]:
        properties: dict[str, Any] = {}
        required: list[str] = []
        for f in record.fields:
            prop = self.shape(f.shape, f"{record.name}.{f.name}")
            if f.required:
                required.append(f.name)
            elif f.default is not None and f.default is not shapes.NO_DEFAULT:
                prop = {**prop, "default": f.default}
            properties[f.name] = prop
        schema: dict[str, Any] = {"title": record.name}
        if record.doc:
            schema["description"] = record.doc
        schema["type"] = "object"
        schema["properties"] = properties
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema


def _document(title: str, description: str, root: dict[str, Any], builder: _Builder) -> dict[str, Any]:
    doc: dict[str, Any] = {"$schema": DIALECT, "title": title, "description": description}
    doc.update(root)
    if builder.defs:
        doc["$defs"] = builder.defs
    return doc


def channel_schema(channel: Any) -> dict[str, Any]:
    """One channel's file: its payload (the JSON-RPC params) and its data (the envelope's `data`)."""
    if channel.payload is None or channel.data is None:
        missing = "payload" if channel.payload is None else "data"
        raise SchemaError(f"the channel `{channel.name}` declares no {missing} type: give its Channel(...) row in "
                          f"its domain's channels.py one (a TypedDict for data), then run `python -m membank.shells.schema`")
    builder = _Builder()
    payload = builder.of(channel.payload, f"{channel.name} payload")
    data = builder.of(channel.data, f"{channel.name} data")
    root = {
        "type": "object",
        "properties": {"method": {"const": channel.name}, "payload": payload, "data": data},
        "required": ["method", "payload", "data"],
        "additionalProperties": False,
    }
    from ..runtime.catalog import cancellable

    stops = " Cancellable: `deadlineMs` bounds the call, and `$/cancelRequest` stops it halfway (CANCELED, " \
        "TIMEOUT; nothing is left half-done)." if cancellable(channel) else ""
    return _document(f"{channel.name} channel",
                     f"The channel `{channel.name}`: `payload` is what the caller sends (the JSON-RPC params), "
                     f"`data` what a successful envelope carries.{stops}", root, builder)


def envelope_schema() -> dict[str, Any]:
    from ..kernel import errors

    builder = _Builder()
    root = {
        "oneOf": [{"$ref": "#/$defs/Success"}, {"$ref": "#/$defs/Failure"}],
    }
    builder.defs.update({
        "Success": {"title": "Success", "type": "object",
                    "properties": {"ok": {"const": True}, "data": {"description": "the channel's data"}},
                    "required": ["ok", "data"], "additionalProperties": False},
        "Failure": {"title": "Failure", "type": "object",
                    "properties": {"ok": {"const": False}, "error": {"$ref": "#/$defs/ErrorInfo"}},
                    "required": ["ok", "error"], "additionalProperties": False},
        "ErrorInfo": {"title": "ErrorInfo", "type": "object",
                      "properties": {"code": {"type": "string", "enum": sorted(errors.CODES)},
                                     "message": {"type": "string"},
                                     "details": {"type": "object"}},
                      "required": ["code", "message"], "additionalProperties": False},
    })
    return _document("Envelope", "What every channel returns (the JSON-RPC `result`): ok with data, or not ok "
                     "with an error whose code is stable.", root, builder)


def notification_schema(name: str, params: type) -> dict[str, Any]:
    builder = _Builder()
    root = {
        "type": "object",
        "properties": {"method": {"const": name}, "params": builder.of(params, name)},
        "required": ["method", "params"],
        "additionalProperties": False,
    }
    return _document(f"{name} notification", f"The server's notification `{name}` and its params.", root, builder)


class EpisodeFailed(TypedDict):
    """Sent by the server when an episode accepted by `memory:episode:record` (without `wait`) could not
    be written after three tries (docs/episodes.md)."""

    projectId: str
    id: str  # the id `memory:episode:record` answered with
    code: Literal["MEMORY_EPISODE_WRITE_FAILED", "MEMORY_CAPACITY_EXCEEDED", "INTERNAL"]  # INTERNAL: a bug (see the log)
    message: str


class ChapterChanged(TypedDict):
    """Sent by the server after the watcher re-read a manuscript document whose passages changed (or that
    went, or cannot be read any more) (docs/manuscript.md)."""

    projectId: str
    documentId: str  # the document's project-relative path
    capture: Optional[dict[str, Any]]  # capture:status's item for it (its pending ops stale now); null: unreadable


class IndexStrong(TypedDict):
    """Sent by the server after each batch of strong vectors the background wrote, or failed to (docs/recall.md,
    Tiers)."""

    projectId: str
    done: int  # entries with a strong vector of `model`
    total: int  # entries the strong tier embeds (memories, cards, world entries)
    model: str  # the strong model's identity
    problem: Optional[str]  # why the batch failed (the next save tries again); null when it was written


NOTIFICATIONS: dict[str, type] = {"index:changed": IndexChanged, "episode:failed": EpisodeFailed,
                                  "chapter:changed": ChapterChanged, "index:strong": IndexStrong}


def generate() -> dict[str, str]:
    """Every schema file by name, as the text that belongs in docs/schema/."""
    from ..runtime.catalog import CATALOG as CHANNELS

    docs: dict[str, dict[str, Any]] = {"envelope.json": envelope_schema()}
    listing: dict[str, Any] = {"envelope": "envelope.json", "channels": {}, "notifications": {}}
    problems = []
    for name in sorted(CHANNELS):
        try:
            docs[file_name(name)] = channel_schema(CHANNELS[name])
            listing["channels"][name] = file_name(name)
        except SchemaError as e:
            problems.append(str(e))
    if problems:
        raise SchemaError("; ".join(problems))
    for name, params in sorted(NOTIFICATIONS.items()):
        docs[file_name(name)] = notification_schema(name, params)
        listing["notifications"][name] = file_name(name)
    docs["index.json"] = {"$comment": "generated by `python -m membank.shells.schema`; do not edit", **listing}
    return {name: json.dumps(doc, indent=2, ensure_ascii=False) + "\n" for name, doc in sorted(docs.items())}


def drift(folder: Path = DEFAULT_DIR) -> list[str]:
    """How the files in `folder` differ from what the types give: one line per file, empty when level."""
    wanted = generate()
    present = {p.name: p.read_text("utf-8") for p in folder.glob("*.json")} if folder.is_dir() else {}
    out = [f"missing: {name}" for name in sorted(set(wanted) - set(present))]
    out += [f"stale (no such channel): {name}" for name in sorted(set(present) - set(wanted))]
    out += [f"changed: {name}" for name in sorted(set(wanted) & set(present)) if wanted[name] != present[name]]
    return out


def write(folder: Path = DEFAULT_DIR) -> list[str]:
    """Write the schemas, removing files of channels that no longer exist; returns the names written."""
    wanted = generate()
    folder.mkdir(parents=True, exist_ok=True)
    for path in folder.glob("*.json"):
        if path.name not in wanted:
            path.unlink()
    written = []
    for name, text in wanted.items():
        path = folder / name
        if not path.exists() or path.read_text("utf-8") != text:
            path.write_text(text, "utf-8", newline="\n")
            written.append(name)
    return written


# -- a small structural check, enough to hold real responses against the schemas in tests -----------


def check(instance: Any, schema: dict[str, Any], root: dict[str, Any] | None = None, where: str = "$") -> list[str]:
    """Where `instance` breaks `schema` (the subset the generator emits: $ref, type, enum, const,
    properties, required, additionalProperties, items, anyOf, oneOf); empty when it fits."""
    root = root if root is not None else schema
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return check(instance, root["$defs"][name], root, where)
    problems: list[str] = []
    if "const" in schema and instance != schema["const"]:
        problems.append(f"{where}: expected {schema['const']!r}")
    if "enum" in schema and instance not in schema["enum"]:
        problems.append(f"{where}: {instance!r} is not one of {schema['enum']}")
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_is(instance, k) for k in kinds):
            return problems + [f"{where}: expected {' or '.join(kinds)}, got {type(instance).__name__}"]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            results = [check(instance, s, root, where) for s in schema[key]]
            fits = sum(not r for r in results)
            if fits == 0 or (key == "oneOf" and fits > 1):
                problems.append(f"{where}: fits {fits} of the {key} alternatives "
                                f"({'; '.join(p for r in results for p in r[:1])})")
    if isinstance(instance, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in instance:
                problems.append(f"{where}: `{key}` is missing")
        for key, value in instance.items():
            if key in props:
                problems += check(value, props[key], root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where}: `{key}` is not in the schema")
            elif isinstance(schema.get("additionalProperties"), dict):
                problems += check(value, schema["additionalProperties"], root, f"{where}.{key}")
    if isinstance(instance, list) and "items" in schema:
        for i, value in enumerate(instance):
            problems += check(value, schema["items"], root, f"{where}[{i}]")
    return problems


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    raise SchemaError(f"unknown JSON type {kind}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m membank.shells.schema",
                                     description="Regenerate docs/schema/*.json from the channel types.")
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--check", action="store_true", help="exit 1 when the files differ; write nothing")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = drift(args.folder)
            for line in problems:
                print(line, file=sys.stderr)
            if problems:
                print("run `python -m membank.shells.schema` to regenerate", file=sys.stderr)
            return 1 if problems else 0
        written = write(args.folder)
    except SchemaError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{len(written)} schema file(s) written" if written else "schemas are up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
