"""docs/types/membank.d.ts is generated from the JSON Schemas and must not drift from them; the mapping."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from membank.domains.contract import Channel, ProjectOnly
from membank.domains.settings.channels import Settings
from membank.runtime.catalog import CATALOG as CHANNELS
from membank.shells import schema, typescript

ROOT = Path(__file__).resolve().parent.parent
DECLARATIONS = ROOT / "docs" / "types" / "membank.d.ts"
TSC = ROOT / "tests" / "node" / "node_modules" / ".bin" / "tsc"


def test_checked_in_declarations_match_the_schemas() -> None:
    problems = typescript.drift(DECLARATIONS)
    assert not problems, f"docs/types/membank.d.ts is out of date; run `{typescript.COMMAND}`:\n" + "\n".join(problems)


def test_every_channel_and_notification_is_declared() -> None:
    text = DECLARATIONS.read_text("utf-8")
    for name in CHANNELS:
        alias = typescript.pascal(name)
        assert f'  "{name}": {{ payload: {alias}Payload; data: {alias}Data }};' in text, name
        assert f"export type {alias}Payload = " in text or f"export interface {alias}Payload " in text, name
    for name in schema.NOTIFICATIONS:
        assert f'  "{name}": {typescript.pascal(name)}Params;' in text, name
    assert text.startswith("// membank sidecar: TypeScript declarations") and "do not edit" in text


def test_the_checked_in_schema_files_give_the_same_file(tmp_path: Path) -> None:
    schema.write(tmp_path)
    assert typescript.generate(tmp_path) == typescript.generate()


def test_write_then_check_round_trips(tmp_path: Path) -> None:
    out = tmp_path / "types" / "membank.d.ts"
    assert typescript.main([str(out), "--check"]) == 1  # missing
    assert typescript.main([str(out)]) == 0 and out.read_text("utf-8") == DECLARATIONS.read_text("utf-8")
    assert typescript.write(out) is False and typescript.main([str(out), "--check"]) == 0
    out.write_text(out.read_text("utf-8").replace("ok: true;", "ok: boolean;"), "utf-8")
    assert typescript.drift(out) == ["changed: membank.d.ts"]
    assert typescript.main([str(out), "--check"]) == 1


def test_a_new_channel_shows_as_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CHANNELS, "memory:extra", Channel("memory:extra", ProjectOnly, Settings, lambda bank: {}, "read",
                                                          "extra", "A channel.", "extra"))
    assert typescript.drift(DECLARATIONS) == ["changed: membank.d.ts"]
    text = typescript.generate()
    assert '"memory:extra": { payload: MemoryExtraPayload; data: MemoryExtraData };' in text
    assert "export type MemoryExtraData = Settings;" in text


def test_a_channel_without_a_data_type_fails_with_the_schema_error(monkeypatch: pytest.MonkeyPatch) -> None:
    lonely = Channel("memory:lonely", ProjectOnly, None, lambda bank: {}, "read", "lonely", "A channel.", "lonely")
    monkeypatch.setitem(CHANNELS, "memory:lonely", lonely)
    with pytest.raises(typescript.TypeScriptError, match="memory:lonely"):
        typescript.generate()
    assert typescript.main([str(DECLARATIONS), "--check"]) == 1


# -- the mapping, on schemas made by hand --------------------------------------------------------------


def _channel(name: str, payload: str, data: str, defs: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": schema.DIALECT, "title": f"{name} channel",
            "description": f"The channel `{name}`: `payload` is what the caller sends (the JSON-RPC params), "
                           "`data` what a successful envelope carries.",
            "type": "object",
            "properties": {"method": {"const": name}, "payload": {"$ref": f"#/$defs/{payload}"},
                           "data": {"$ref": f"#/$defs/{data}"}},
            "required": ["method", "payload", "data"], "additionalProperties": False, "$defs": defs}


def _obj(props: dict[str, Any], required: list[str] = (), description: str | None = None, **rest: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if description:
        out["description"] = description
    if required:
        out["required"] = list(required)
    return {**out, "additionalProperties": False, **rest}


REASON_A = _obj({"code": {"type": "string"}}, ["code"])
REASON_B = _obj({"rank": {"type": "integer"}}, ["rank"])
THING = _obj({
    "id": {"type": "string"},
    "kind": {"type": "string", "enum": ["a", "b"]},
    "mode": {"type": ["string", "null"], "enum": ["x", "y", None]},
    "count": {"type": "integer", "default": 3},
    "ratio": {"type": ["number", "null"]},
    "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
    "mixed": {"type": "array", "items": {"type": ["string", "integer"]}},
    "free": {},
    "extra": {"type": ["object", "null"]},
    "table": {"type": "object", "additionalProperties": {"type": "integer"}},
    "closed": {"type": "object", "additionalProperties": False},
    "reason": {"$ref": "#/$defs/Reason"},
    "self": {"anyOf": [{"$ref": "#/$defs/Thing"}, {"type": "null"}]},
    "fixed": {"const": "yes"},
    "kebab-key": {"type": "boolean"},
}, ["id", "kind", "table"], description="A thing. Not */ a comment end.")


def _docs() -> dict[str, dict[str, Any]]:
    docs = {
        "envelope.json": schema.envelope_schema(),
        "a.get.json": _channel("a:get", "AGetPayload", "Thing", {
            "AGetPayload": _obj({"id": {"type": "string"}}, ["id"]), "Thing": THING, "Reason": REASON_A}),
        "b.get.json": _channel("b:get", "Channels", "Reason", {
            "Channels": _obj({"open": {"type": "object"}}), "Reason": REASON_B}),
        "c.get.json": _channel("c:get", "Open", "Reason", {
            "Open": _obj({"name": {"type": "string"}, "size": {"type": "integer"}}, ["name"],
                         additionalProperties={"type": "string"}),
            "Reason": REASON_A}),
        "ping.json": {"title": "ping notification", "type": "object",
                      "properties": {"method": {"const": "ping"}, "params": {"$ref": "#/$defs/Ping"}},
                      "$defs": {"Ping": _obj({"at": {"type": "integer"}}, ["at"])}},
    }
    docs["index.json"] = {"envelope": "envelope.json", "notifications": {"ping": "ping.json"},
                          "channels": {"c:get": "c.get.json", "a:get": "a.get.json", "b:get": "b.get.json"}}
    return json.loads(json.dumps(docs))  # a copy each time: a test may change it


def test_json_schema_maps_to_typescript() -> None:
    text = typescript.declarations(_docs())
    thing = text[text.index("export interface Thing {"):]
    thing = thing[:thing.index("\n}\n") + 3]
    assert thing.splitlines() == [
        "export interface Thing {",
        "  id: string;",
        '  kind: "a" | "b";',
        '  mode?: "x" | "y" | null;',
        "  /** @defaultValue 3 */",
        "  count?: number;",
        "  ratio?: number | null;",
        "  tags?: string[] | null;",
        "  mixed?: (string | number)[];",
        "  free?: unknown;",
        "  extra?: { [key: string]: unknown } | null;",
        "  table: { [key: string]: number };",
        "  closed?: { [key: string]: never };",
        "  reason?: AGetReason;",
        "  self?: Thing | null;",
        '  fixed?: "yes";',
        '  "kebab-key"?: boolean;',
        "}",
    ]
    assert "/** A thing. Not *\\/ a comment end. */\nexport interface Thing {" in text


def test_names_are_kept_qualified_or_aliased_deterministically() -> None:
    text = typescript.declarations(_docs())
    # the same Reason in a:get and c:get is one type, named after a:get; b:get's different one after b:get
    assert text.count("export interface AGetReason {") == 1 and "export interface BGetReason {" in text
    assert "export interface Reason " not in text and "export type CGetData = AGetReason;" in text
    # a $defs name the file uses itself (Channels) is qualified; a payload already named as its alias is kept
    assert "export interface BGetChannels {" in text and "export type BGetPayload = BGetChannels;" in text
    assert "export interface AGetPayload {" in text and "export type AGetPayload =" not in text
    # channels sorted, the notification declared, an open object with properties keeps them assignable
    assert text.index('"a:get"') < text.index('"b:get"') < text.index('"c:get"')
    assert '  "ping": PingParams;' in text and "export type PingParams = Ping;" in text
    assert "  [key: string]: string | number | undefined;" in text  # an index signature admits every property
    assert typescript.declarations(_docs()) == text  # deterministic
    shuffled = dict(reversed(list(_docs().items())))
    assert typescript.declarations(shuffled) == text


def test_the_envelope_is_generic_with_the_codes_as_a_union() -> None:
    text = typescript.declarations(_docs())
    codes = " | ".join(json.dumps(c) for c in schema.envelope_schema()["$defs"]["ErrorInfo"]["properties"]["code"]["enum"])
    assert f"export type ErrorCode = {codes};" in text
    assert "export type Envelope<D = unknown> = Success<D> | Failure;" in text
    assert "  code: ErrorCode;\n  message: string;\n  details?: { [key: string]: unknown };" in text


@pytest.mark.parametrize("bad, match", [
    ({"allOf": [{"type": "string"}]}, "allOf"),
    ({"$ref": "#/$defs/Nowhere"}, "Nowhere"),
    ({"type": "tuple"}, "tuple"),
    ({"properties": {"a": {}}}, "without a `type`"),
])
def test_what_cannot_be_mapped_faithfully_is_an_error(bad: dict[str, Any], match: str) -> None:
    docs = _docs()
    docs["a.get.json"]["$defs"]["Thing"]["properties"]["bad"] = bad
    with pytest.raises(typescript.TypeScriptError, match=match):
        typescript.declarations(docs)


@pytest.mark.skipif(not TSC.exists(), reason="TypeScript is not installed: run `npm ci --prefix tests/node`")
def test_the_hand_made_mapping_compiles(tmp_path: Path) -> None:
    (tmp_path / "made.d.ts").write_text(typescript.declarations(_docs()), "utf-8")
    (tmp_path / "use.ts").write_text(
        'import type { Call, Thing } from "./made";\n'
        "declare const call: Call;\n"
        'export async function f(): Promise<Thing | null> {\n'
        '  const got = await call("a:get", { id: "x" });\n'
        "  // @ts-expect-error: table holds numbers\n"
        '  const bad: Thing = { id: "x", kind: "a", table: { n: "one" } };\n'
        "  return got.ok ? got.data : bad;\n"
        "}\n", "utf-8")
    done = subprocess.run([str(TSC), "--noEmit", "--strict", "--skipLibCheck", "false", "--types", "",
                           "--lib", "es2022", "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
                           str(tmp_path / "use.ts")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
