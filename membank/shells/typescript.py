"""TypeScript declarations for every channel's payload and data, generated from the JSON Schemas.

The JSON Schemas (`membank.shells.schema`, the files in `docs/schema/`) are the input; the output is one
declaration file, `docs/types/membank.d.ts`, that the desktop app imports:

    python -m membank.shells.typescript            # writes docs/types/membank.d.ts
    python -m membank.shells.typescript --check    # exits 1 when the checked-in file has drifted

By default the schemas are the ones `membank.shells.schema` generates from the channel types (exactly the
text of `docs/schema/` when that is up to date, which tests/test_schema.py holds); `--schemas DIR` reads
them from a folder instead. tests/test_typescript.py fails when the file drifts, and the Node test runs
`tsc --noEmit --strict` on tests/node/types-check.ts, which imports it.

The mapping: a `$defs` entry becomes an exported interface (an object) or type alias under its own name
(the Python type's name, as in docs/channels.md). Entries of the same name in two schema files that
differ (their closure of referenced `$defs` included) are different types: each is then named after the
first channel (in sorted order) whose file holds it, e.g. `ContextAssembleReason`. Every channel also
gets `<Channel>Payload` and `<Channel>Data` aliases (`memory:injection:preview` ->
`MemoryInjectionPreviewPayload`), every notification `<Notification>Params`; these and the fixed names
(`Envelope`, `Channels`, ...) win over a `$defs` name, which is then qualified the same way.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import schema

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "docs" / "types" / "membank.d.ts"
COMMAND = "python -m membank.shells.typescript"


class TypeScriptError(Exception):
    """A schema the generator cannot express faithfully in TypeScript."""


# keywords that only annotate or bound a value: they change no TypeScript type
_ANNOTATIONS = frozenset({"title", "description", "default", "$comment", "examples", "deprecated", "readOnly",
                          "writeOnly", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                          "multipleOf", "minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems",
                          "minProperties", "maxProperties", "$schema", "$id"})
_STRUCTURE = frozenset({"$ref", "$defs", "type", "enum", "const", "anyOf", "oneOf", "properties", "required",
                        "additionalProperties", "items"})
_SCALARS = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}
_SHARED = re.compile(r"^The channel `[^`]*`: `payload` is what the caller sends .*?carries\.\s*")
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")

# names the file declares itself, and names a declaration must not shadow (TypeScript's own)
FIXED = ("Envelope", "Success", "Failure", "ErrorInfo", "ErrorCode", "Channels", "ChannelName", "ChannelPayload",
         "ChannelData", "Notifications", "NotificationName", "NotificationParams", "Call")
_BUILTIN = frozenset({"any", "unknown", "never", "string", "number", "boolean", "null", "undefined", "object",
                      "symbol", "bigint", "void", "Array", "ReadonlyArray", "Promise", "Record", "Partial",
                      "Readonly", "Object", "String", "Number", "Boolean", "Function", "Symbol", "Error",
                      "Date", "Map", "Set", "JSON", "Pick", "Omit", "Exclude", "Extract", "Required"})


def pascal(name: str) -> str:
    """`memory:injection:preview` -> `MemoryInjectionPreview` (each part's first letter raised)."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name) if part)


def _literal(value: Any) -> str:
    if value is None or isinstance(value, (bool, int, float, str)):
        return json.dumps(value)  # JSON's strings, numbers, true/false/null are TypeScript literals too
    raise TypeScriptError(f"no TypeScript literal for {value!r}")


def _key(name: str) -> str:
    return name if _IDENT.match(name) else json.dumps(name)


def _doc(text: str | None, indent: str, extra: tuple[str, ...] = ()) -> list[str]:
    """A JSDoc comment (empty when there is nothing to say)."""
    lines = [line.rstrip() for line in (text or "").strip().splitlines()] + list(extra)
    lines = [line.replace("*/", "*\\/") for line in lines]
    if not lines:
        return []
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**"] + [f"{indent} * {line}".rstrip() for line in lines] + [f"{indent} */"]


@dataclass(frozen=True)
class _Type:
    """A TypeScript type expression; `union` when it needs parentheses inside an array type."""

    text: str
    union: bool = False


def _union(parts: list[_Type]) -> _Type:
    texts = list(dict.fromkeys(p.text for p in parts))  # integer and number are both number: say it once
    if not texts:
        return _Type("never")
    if "unknown" in texts:
        return _Type("unknown")
    return _Type(" | ".join(texts), union=len(texts) > 1)


@dataclass
class _File:
    """One schema document and the TypeScript names of its `$defs`."""

    name: str  # the file name, e.g. memory.create.json
    doc: dict[str, Any]
    names: dict[str, str] = field(default_factory=dict)  # $defs name -> TypeScript name

    @property
    def defs(self) -> dict[str, Any]:
        return self.doc.get("$defs", {})


class _Renderer:
    """JSON Schema -> TypeScript, with the `$ref`s of one file resolved to their TypeScript names."""

    def __init__(self, file: _File) -> None:
        self.file = file

    def expr(self, s: Any, where: str, indent: str = "") -> _Type:
        if s is True:
            return _Type("unknown")
        if s is False:
            return _Type("never")
        if not isinstance(s, dict):
            raise TypeScriptError(f"{where}: a schema must be an object or a boolean, not {s!r}")
        unknown = set(s) - _ANNOTATIONS - _STRUCTURE
        if unknown:
            raise TypeScriptError(f"{where}: the keyword(s) {', '.join(sorted(unknown))} have no TypeScript mapping here")
        if "$ref" in s:
            if set(s) & (_STRUCTURE - {"$ref"}):
                raise TypeScriptError(f"{where}: `$ref` beside other type keywords is not supported")
            return _Type(self.ref(s["$ref"], where))
        if "const" in s:
            return _Type(_literal(s["const"]))
        if "enum" in s:
            return _union([_Type(_literal(v)) for v in s["enum"]])
        for key in ("anyOf", "oneOf"):
            if key in s:
                if set(s) & {"type", "properties", "items", "additionalProperties"}:
                    raise TypeScriptError(f"{where}: `{key}` beside `type` is not supported")
                return _union([self.expr(m, f"{where}|{i}", indent) for i, m in enumerate(s[key])])
        if "type" not in s:
            if set(s) & {"properties", "required", "additionalProperties", "items"}:
                raise TypeScriptError(f"{where}: object or array keywords without a `type`")
            return _Type("unknown")  # {} (or annotations only): any JSON value
        kinds = [s["type"]] if isinstance(s["type"], str) else list(s["type"])
        parts = []
        for kind in kinds:
            if kind in _SCALARS:
                parts.append(_Type(_SCALARS[kind]))
            elif kind == "array":
                item = self.expr(s.get("items", {}), f"{where}[]", indent)
                parts.append(_Type(f"({item.text})[]" if item.union else f"{item.text}[]"))
            elif kind == "object":
                parts.append(_Type(self.object_body(s, where, indent)))
            else:
                raise TypeScriptError(f"{where}: unknown JSON type {kind!r}")
        return _union(parts)

    def ref(self, ref: str, where: str) -> str:
        name = ref.removeprefix("#/$defs/")
        if not ref.startswith("#/$defs/") or name not in self.file.names:
            raise TypeScriptError(f"{where}: the reference {ref!r} is not to a `$defs` entry of {self.file.name}")
        return self.file.names[name]

    def members(self, s: dict[str, Any], where: str, indent: str) -> list[str]:
        """The lines inside an object type's braces, each indented by `indent`."""
        props: dict[str, Any] = s.get("properties", {})
        required = list(s.get("required", []))
        lines: list[str] = []
        for name, prop in props.items():
            extra = (f"@defaultValue {json.dumps(prop['default'], ensure_ascii=False)}",) \
                if isinstance(prop, dict) and "default" in prop else ()
            lines += _doc(prop.get("description") if isinstance(prop, dict) else None, indent, extra)
            mark = "" if name in required else "?"
            lines.append(f"{indent}{_key(name)}{mark}: {self.expr(prop, f'{where}.{name}', indent).text};")
        for name in required:
            if name not in props:  # required but undescribed: present, of any value
                lines.append(f"{indent}{_key(name)}: unknown;")
        extra = s.get("additionalProperties", True)
        if extra is not False:
            value = self.expr(extra, f"{where}{{}}", indent).text
            if props and value not in ("unknown",):
                # TypeScript wants every property assignable to the index signature's type
                value = _union([_Type(value)] + [self.expr(p, where, indent) for p in props.values()]
                               + ([_Type("undefined")] if set(props) - set(required) else [])).text
            lines.append(f"{indent}[key: string]: {value};")
        return lines

    def object_body(self, s: dict[str, Any], where: str, indent: str) -> str:
        if not s.get("properties") and not s.get("required"):
            extra = s.get("additionalProperties", True)
            value = "never" if extra is False else self.expr(extra, f"{where}{{}}", indent).text
            return f"{{ [key: string]: {value} }}"
        inner = indent + "  "
        return "{\n" + "\n".join(self.members(s, where, inner)) + f"\n{indent}}}"

    def declaration(self, def_name: str) -> list[str]:
        s = self.file.defs[def_name]
        name = self.file.names[def_name]
        where = f"{self.file.name}#/$defs/{def_name}"
        lines = _doc(s.get("description") if isinstance(s, dict) else None, "")
        if isinstance(s, dict) and s.get("type") == "object" and (s.get("properties") or s.get("required")) \
                and not (set(s) & {"anyOf", "oneOf", "enum", "const", "$ref"}):
            lines.append(f"export interface {name} {{")
            lines += self.members(s, where, "  ")
            lines.append("}")
        else:
            lines.append(f"export type {name} = {self.expr(s, where).text};")
        return lines


def _reachable(file: _File, start: str) -> list[str]:
    """The `$defs` names `start` refers to, itself included, in a stable order."""
    seen: list[str] = []
    todo = [start]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        if name not in file.defs:
            raise TypeScriptError(f"{file.name}: `$ref` to a missing `$defs` entry {name!r}")
        todo += sorted(set(re.findall(r'"\$ref": "#/\$defs/([^"]+)"', json.dumps(file.defs[name]))) - set(seen))
    return sorted(seen)


def _identity(file: _File, name: str) -> str:
    """What makes two `$defs` entries the same TypeScript type: their text and that of all they refer to."""
    return json.dumps({n: file.defs[n] for n in _reachable(file, name)}, sort_keys=True)


def _root_ref(doc: dict[str, Any], key: str, where: str) -> str:
    node = doc.get("properties", {}).get(key)
    if not isinstance(node, dict) or not str(node.get("$ref", "")).startswith("#/$defs/"):
        raise TypeScriptError(f"{where}: `properties.{key}` must be a `$ref` to a `$defs` entry")
    return node["$ref"].removeprefix("#/$defs/")


def _envelope(doc: dict[str, Any]) -> list[str]:
    """The envelope's declarations, from envelope.json."""
    defs = doc.get("$defs", {})
    try:
        success, failure, info = defs["Success"], defs["Failure"], defs["ErrorInfo"]
        codes = info["properties"]["code"]["enum"]
        ok = (success["properties"]["ok"], failure["properties"]["ok"], failure["properties"]["error"])
    except (KeyError, TypeError) as e:
        raise TypeScriptError(f"envelope.json: not the expected Success/Failure/ErrorInfo shape ({e})") from e
    if ok != ({"const": True}, {"const": False}, {"$ref": "#/$defs/ErrorInfo"}) \
            or [r.get("$ref") for r in doc.get("oneOf", [])] != ["#/$defs/Success", "#/$defs/Failure"] \
            or set(success["properties"]) != {"ok", "data"} or set(failure["properties"]) != {"ok", "error"}:
        raise TypeScriptError("envelope.json: not the expected `oneOf` Success/Failure shape")
    file = _File("envelope.json", {"$defs": {
        "ErrorCode": {"type": "string", "enum": codes},
        "ErrorInfo": {**info, "properties": {**info["properties"], "code": {"$ref": "#/$defs/ErrorCode"}}},
        "Failure": {"description": "A failed envelope.", **failure},
    }}, names={"ErrorCode": "ErrorCode", "ErrorInfo": "ErrorInfo", "Failure": "Failure"})
    render = _Renderer(file)
    lines = ["/** The stable error codes of a failed envelope (`error.code`); the message is for logs. */"]
    lines += render.declaration("ErrorCode")[-1:]
    lines += [""] + render.declaration("ErrorInfo")
    lines += ["", "/** A successful envelope: `data` is the channel's data. */",
              "export interface Success<D = unknown> {", "  ok: true;", "  data: D;", "}"]
    lines += [""] + render.declaration("Failure")
    lines += [""] + _doc(doc.get("description"), "") + ["export type Envelope<D = unknown> = Success<D> | Failure;"]
    return lines


def declarations(docs: dict[str, dict[str, Any]]) -> str:
    """The declaration file for a set of schema documents by file name (`index.json` lists them)."""
    listing = docs.get("index.json")
    if not isinstance(listing, dict) or "channels" not in listing or "envelope" not in listing:
        raise TypeScriptError("index.json (the list of channels and notifications) is missing")
    channels: dict[str, str] = dict(sorted(listing["channels"].items()))
    notifications: dict[str, str] = dict(sorted(listing.get("notifications", {}).items()))
    for name in [*channels.values(), *notifications.values(), listing["envelope"]]:
        if name not in docs:
            raise TypeScriptError(f"index.json lists {name}, which is missing")

    # every (file, $defs name), in the order of the sorted channels, then notifications
    owners = [(c, channels[c]) for c in channels] + [(n, notifications[n]) for n in notifications]
    files = {file_name: _File(file_name, docs[file_name]) for _, file_name in owners}
    variants: dict[str, dict[str, list[tuple[str, str]]]] = {}  # $defs name -> identity -> [(owner, file)]
    for owner, file_name in owners:
        file = files[file_name]
        for def_name in file.defs:
            variants.setdefault(def_name, {}).setdefault(_identity(file, def_name), []).append((owner, file_name))

    # the names the file promises: fixed ones, then the channels' and notifications' aliases
    aliases: list[tuple[str, str, str]] = []  # (alias, file, $defs name)
    for c, file_name in channels.items():
        doc = docs[file_name]
        aliases.append((f"{pascal(c)}Payload", file_name, _root_ref(doc, "payload", file_name)))
        aliases.append((f"{pascal(c)}Data", file_name, _root_ref(doc, "data", file_name)))
    for n, file_name in notifications.items():
        aliases.append((f"{pascal(n)}Params", file_name, _root_ref(docs[file_name], "params", file_name)))
    taken = set(FIXED) | _BUILTIN
    alias_names: dict[str, str] = {}  # wanted alias -> given alias
    for alias, _, _ in aliases:
        given, i = alias, 2
        while given in taken:
            given, i = f"{alias}{i}", i + 1
        taken.add(given)
        alias_names[alias] = given
    # an alias with the very name of the type it points to is that type (no `type X = X`)
    same: dict[tuple[str, str], str] = {}
    for alias, file_name, def_name in aliases:
        if alias_names[alias] == def_name:
            same[(file_name, def_name)] = def_name

    # the $defs' names: their own when unique and free, else qualified by their first owner
    for def_name in sorted(variants):
        groups = sorted(variants[def_name].values())
        for group in groups:
            first_owner, first_file = group[0]
            kept = next((same[(f, def_name)] for _, f in group if (f, def_name) in same), None)
            if kept is not None:
                ts_name = kept
            elif len(groups) == 1 and def_name not in taken:
                ts_name = def_name
            else:
                wanted = def_name if def_name.startswith(pascal(first_owner)) else pascal(first_owner) + def_name
                ts_name, i = wanted, 2
                while ts_name in taken:
                    ts_name, i = f"{wanted}{i}", i + 1
            if kept is None:
                taken.add(ts_name)
            for _, file_name in group:
                files[file_name].names[def_name] = ts_name

    out = [
        "// membank sidecar: TypeScript declarations for every channel's payload and data, the envelope and the",
        "// notifications. Generated from the JSON Schemas in docs/schema/; do not edit. Regenerate with",
        f"//   {COMMAND}",
        f"// (`{COMMAND} --check` exits 1 when this file is out of date; CI runs it).",
        "",
    ]
    out += ["// -- the envelope " + "-" * 90, ""] + _envelope(docs[listing["envelope"]])

    out += ["", "// -- the channels " + "-" * 90, "",
            "/** Every channel by method name: what it takes (`payload`, the JSON-RPC params) and what its",
            " * successful envelope carries (`data`). */",
            "export interface Channels {"]
    for c, file_name in channels.items():
        # the description less schema.py's sentence every channel shares (what payload and data are)
        said = _SHARED.sub("", docs[file_name].get("description", ""), count=1)
        out += _doc(f"{said}\nSchema: docs/schema/{file_name}", "  ")
        out.append(f"  {json.dumps(c)}: {{ payload: {alias_names[pascal(c) + 'Payload']}; "
                   f"data: {alias_names[pascal(c) + 'Data']} }};")
    out += ["}", "",
            "export type ChannelName = keyof Channels;",
            "export type ChannelPayload<K extends ChannelName> = Channels[K][\"payload\"];",
            "export type ChannelData<K extends ChannelName> = Channels[K][\"data\"];",
            "",
            "/** A typed call, as an app's JSON-RPC client offers it: the reply's `result` is the envelope. */",
            "export type Call = <K extends ChannelName>(method: K, params: ChannelPayload<K>) => "
            "Promise<Envelope<ChannelData<K>>>;",
            "",
            "/** The server's notifications (JSON-RPC messages without an `id`) by method name: their params. */",
            "export interface Notifications {"]
    for n, file_name in notifications.items():
        out += _doc(f"Schema: docs/schema/{file_name}", "  ")
        out.append(f"  {json.dumps(n)}: {alias_names[pascal(n) + 'Params']};")
    out += ["}", "",
            "export type NotificationName = keyof Notifications;",
            "export type NotificationParams<K extends NotificationName> = Notifications[K];",
            ""]
    for alias, file_name, def_name in aliases:
        target = files[file_name].names[def_name]
        if alias_names[alias] != target:
            out.append(f"export type {alias_names[alias]} = {target};")

    out += ["", "// -- the types the channels use " + "-" * 76]
    declared: dict[str, list[str]] = {}
    for file_name, file in files.items():
        render = _Renderer(file)
        for def_name in file.defs:
            ts_name = file.names[def_name]
            if ts_name not in declared:
                declared[ts_name] = render.declaration(def_name)
    for ts_name in sorted(declared):
        out += [""] + declared[ts_name]
    return "\n".join(out) + "\n"


def load(folder: Path) -> dict[str, dict[str, Any]]:
    """The schema documents in a folder (e.g. docs/schema/), by file name."""
    if not folder.is_dir():
        raise TypeScriptError(f"{folder} is not a folder of schemas")
    return {p.name: json.loads(p.read_text("utf-8")) for p in sorted(folder.glob("*.json"))}


def generate(schemas: Path | None = None) -> str:
    """The declaration file's text: from the schemas `membank.shells.schema` generates, or those in a folder."""
    if schemas is not None:
        return declarations(load(schemas))
    try:
        texts = schema.generate()
    except schema.SchemaError as e:
        raise TypeScriptError(f"the JSON Schemas cannot be generated: {e}") from e
    return declarations({name: json.loads(text) for name, text in texts.items()})


def drift(out: Path = DEFAULT_OUT, schemas: Path | None = None) -> list[str]:
    """How the file differs from what the schemas give: empty when it is up to date."""
    if not out.exists():
        return [f"missing: {out.name}"]
    if out.read_text("utf-8") != generate(schemas):
        return [f"changed: {out.name}"]
    return []


def write(out: Path = DEFAULT_OUT, schemas: Path | None = None) -> bool:
    """Write the file when it differs; whether it was written."""
    text = generate(schemas)
    if out.exists() and out.read_text("utf-8") == text:
        return False
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, "utf-8", newline="\n")
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description="Regenerate docs/types/membank.d.ts from the JSON Schemas.")
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT, help="the declaration file to write")
    parser.add_argument("--schemas", type=Path, default=None,
                        help="read the schemas from this folder (default: generate them from the channel types)")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs; write nothing")
    args = parser.parse_args(argv)
    try:
        if args.check:
            problems = drift(args.out, args.schemas)
            for line in problems:
                print(line, file=sys.stderr)
            if problems:
                print(f"run `{COMMAND}` to regenerate", file=sys.stderr)
            return 1 if problems else 0
        written = write(args.out, args.schemas)
    except TypeScriptError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"{args.out.name} written" if written else f"{args.out.name} is up to date", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
