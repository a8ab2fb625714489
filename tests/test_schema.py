"""docs/schema/ is generated from the channel types and must not drift from them."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NotRequired, TypedDict

import pytest


from membank.shells import schema
from membank.domains.contract import Channel, ProjectOnly
from membank.domains.settings.channels import Settings
from membank.kernel.payload import build
from membank.kernel import payload, shapes
from membank.runtime.catalog import CATALOG as CHANNELS
from membank.kernel.errors import MembankError

SCHEMAS = Path(__file__).resolve().parent.parent / "docs" / "schema"


def test_checked_in_schemas_match_the_types() -> None:
    problems = schema.drift(SCHEMAS)
    assert not problems, "docs/schema/ has drifted from the types; run `python -m membank.shells.schema`:\n" + "\n".join(problems)


def test_every_channel_has_a_schema_file_with_payload_and_data() -> None:
    listing = json.loads((SCHEMAS / "index.json").read_text("utf-8"))
    assert set(listing["channels"]) == set(CHANNELS)
    for name, channel in CHANNELS.items():
        assert channel.data is not None, f"{name} declares no data type"
        doc = json.loads((SCHEMAS / listing["channels"][name]).read_text("utf-8"))
        assert doc["properties"]["method"] == {"const": name}
        assert doc["properties"]["payload"]["$ref"] == f"#/$defs/{channel.payload.__name__}"
        assert doc["properties"]["data"]["$ref"] == f"#/$defs/{channel.data.__name__}"
        assert doc["$schema"] == schema.DIALECT


def test_a_channel_without_a_data_type_fails_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    lonely = Channel("memory:lonely", ProjectOnly, None, lambda bank: {}, "read", "lonely", "A channel.", "lonely")
    monkeypatch.setitem(CHANNELS, "memory:lonely", lonely)
    with pytest.raises(schema.SchemaError, match="memory:lonely"):
        schema.generate()
    with pytest.raises(schema.SchemaError):
        schema.drift(SCHEMAS)


def test_a_new_channel_shows_as_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(CHANNELS, "memory:extra", Channel("memory:extra", ProjectOnly, Settings, lambda bank: {}, "read",
                                                          "extra", "A channel.", "extra"))
    assert "missing: memory.extra.json" in schema.drift(SCHEMAS)


def test_write_then_check_round_trips(tmp_path: Path) -> None:
    (tmp_path / "memory.gone.json").write_text("{}")  # a channel that no longer exists
    written = schema.write(tmp_path)
    assert "memory.create.json" in written and not (tmp_path / "memory.gone.json").exists()
    assert schema.drift(tmp_path) == [] and schema.write(tmp_path) == []
    assert schema.main([str(tmp_path), "--check"]) == 0
    (tmp_path / "memory.get.json").write_text("{}\n")
    assert schema.main([str(tmp_path), "--check"]) == 1


# -- the mapping from Python types ------------------------------------------------------------------


@dataclass(frozen=True)
class _Inner:
    flag: bool | None = None


@dataclass(frozen=True)
class _Outer:
    name: str
    kind: Literal["a", "b"]
    count: int = 3
    ratio: float | None = None
    tags: list[str] | None = None
    extra: dict[str, Any] | None = None
    inner: _Inner | None = None
    anything: Any = None
    mode: Literal["x", "y"] | None = None


class _Data(TypedDict):
    id: str
    items: list[_Inner]
    maybe: NotRequired[int]
    table: dict[str, int]


def test_dataclass_fields_map_to_json_schema() -> None:
    builder = schema._Builder()
    assert builder.of(_Outer, "t") == {"$ref": "#/$defs/_Outer"}
    outer = builder.defs["_Outer"]
    assert outer["required"] == ["name", "kind"] and outer["additionalProperties"] is False
    props = outer["properties"]
    assert props["name"] == {"type": "string"}
    assert props["kind"] == {"type": "string", "enum": ["a", "b"]}
    assert props["count"] == {"type": "integer", "default": 3}
    assert props["ratio"] == {"type": ["number", "null"]}
    assert props["tags"] == {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}
    assert props["extra"] == {"type": ["object", "null"]}
    assert props["inner"] == {"anyOf": [{"$ref": "#/$defs/_Inner"}, {"type": "null"}]}
    assert props["anything"] == {}
    assert props["mode"] == {"type": ["string", "null"], "enum": ["x", "y", None]}
    assert builder.defs["_Inner"]["properties"]["flag"] == {"type": ["boolean", "null"]}


def test_typeddict_required_keys_are_read_from_the_hints() -> None:
    builder = schema._Builder()
    builder.of(_Data, "t")
    data = builder.defs["_Data"]
    assert data["required"] == ["id", "items", "table"]  # NotRequired honoured under PEP 563
    assert data["properties"]["items"] == {"type": "array", "items": {"$ref": "#/$defs/_Inner"}}
    assert data["properties"]["table"] == {"type": "object", "additionalProperties": {"type": "integer"}}


def test_unsupported_types_are_refused() -> None:
    with pytest.raises(schema.SchemaError):
        schema._Builder().of(set[str], "t")
    with pytest.raises(schema.SchemaError):
        schema._Builder().of(dict[int, str], "t")


def test_equal_annotations_keep_their_written_order() -> None:
    # typing holds Literal["a", "b"] == Literal["b", "a"] and str | None == None | str; the shapes do not
    assert shapes.shape_of(Literal["a", "b"]) == shapes.Enum(("a", "b"))
    assert shapes.shape_of(Literal["b", "a"]) == shapes.Enum(("b", "a"))
    assert payload.type_name(Literal["b", "a"]) == "'b' or 'a'"
    assert shapes.shape_of(str | None).members == (shapes.Scalar("str"), shapes.Scalar("null"))
    assert shapes.shape_of(None | str).members == (shapes.Scalar("null"), shapes.Scalar("str"))


# -- the schemas agree with what the channels accept and return -----------------------------------------


def _doc(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / schema.file_name(name)).read_text("utf-8"))


@pytest.mark.parametrize("name, payload", [
    ("memory:create", {"type": "note", "scope": "project", "content": "x", "tags": ["a"], "confidence": 0.5}),
    ("memory:update", {"id": "m-1", "patch": {"content": "y", "documentId": None}, "expectedRevision": 2}),
    ("memory:list", {"scope": "global", "includeDeleted": True}),
    ("memory:settings:update", {"patch": {"injectionMaxItems": 3}, "scope": "global"}),
    ("index:sync", {"rebuild": True, "projectId": None}),
])
def test_payloads_build_accepts_fit_the_schema(name: str, payload: dict[str, Any]) -> None:
    build(CHANNELS[name].payload, payload)
    doc = _doc(name)
    assert schema.check(payload, doc["properties"]["payload"], doc) == []


@pytest.mark.parametrize("name, payload", [
    ("memory:create", {"type": "note", "scope": "world", "content": "x"}),
    ("memory:create", {"type": "note", "scope": "project"}),
    ("memory:create", {"type": "note", "scope": "project", "content": "x", "colour": "red"}),
    ("memory:update", {"id": "m-1", "patch": {"content": 3}}),
    ("memory:list", {"includeDeleted": "yes"}),
    ("index:sync", {"rebuild": 1}),
])
def test_payloads_build_refuses_break_the_schema(name: str, payload: dict[str, Any]) -> None:
    with pytest.raises(MembankError):
        build(CHANNELS[name].payload, payload)
    doc = _doc(name)
    assert schema.check(payload, doc["properties"]["payload"], doc) != []


def test_real_answers_fit_their_data_schemas(bank: Any) -> None:
    created = bank.call("memory:create", {"type": "preference", "scope": "project", "content": "Fewer adverbs."})
    answers = {
        "index:status": bank.call("index:status"),
        "index:sync": bank.call("index:sync"),
        "index:diagnostics": bank.call("index:diagnostics"),
        "memory:create": created,
        "memory:list": bank.call("memory:list", {"includeDeleted": True}),
        "memory:settings:get": bank.call("memory:settings:get"),
        "memory:injection:preview": bank.call("memory:injection:preview", {"queryText": "adverbs"}),
        "memory:delete": bank.call("memory:delete", {"id": created["data"]["id"]}),
    }
    answers["memory:injection:preview (deterministic)"] = bank.call("memory:injection:preview")
    for name, envelope in answers.items():
        assert envelope["ok"], (name, envelope)
        doc = _doc(name.split(" ")[0])
        assert schema.check(envelope["data"], doc["properties"]["data"], doc) == [], name
        env = json.loads((SCHEMAS / "envelope.json").read_text("utf-8"))
        assert schema.check(envelope, env) == []
    failure = bank.call("memory:get", {"id": "nope"})
    assert schema.check(failure, json.loads((SCHEMAS / "envelope.json").read_text("utf-8"))) == []


def test_check_reports_what_is_wrong() -> None:
    doc = _doc("memory:get")
    memory = {"id": "m", "type": "note", "scope": "project", "origin": "manual", "content": "c", "source": "s",
              "documentId": None, "tags": [], "confidence": 1.0, "evidence": [], "metadata": {}, "pinned": False,
              "revision": 1, "createdAt": None, "updatedAt": "2026-01-01T00:00:00Z", "deletedAt": None,
              "since": None, "until": None}
    data = doc["properties"]["data"]
    assert schema.check(memory, data, doc) == []
    assert schema.check({**memory, "revision": "1"}, data, doc) == ["$.revision: expected integer, got str"]
    assert schema.check({**memory, "scope": "galaxy"}, data, doc)
    assert schema.check({**memory, "surprise": 1}, data, doc) == ["$: `surprise` is not in the schema"]
    assert schema.check({k: v for k, v in memory.items() if k != "id"}, data, doc) == ["$: `id` is missing"]
    assert dataclasses.is_dataclass(CHANNELS["memory:get"].payload)
