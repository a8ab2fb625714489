"""Payloads out of bounds are INVALID_ARGUMENT naming the field, before anything is written: lone
surrogates, null patches, over-long strings, deep nesting, out-of-range settings (Python API too)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from membank import Bank
from membank.shells.cli import app
from membank.kernel.errors import MembankError

MEMORY = "m-fact-linmo-wounded"


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


def files(sample: Path) -> list[str]:
    return sorted(p.relative_to(sample).as_posix() for p in (sample / ".writenow").rglob("*")
                  if ".index" not in p.parts)


def create(**fields: Any) -> dict[str, Any]:
    return {"type": "fact", "scope": "project", "content": "A fact.", **fields}


@pytest.mark.parametrize("channel, payload, field", [
    ("memory:create", create(content="a\ud800b"), "content"),
    ("memory:create", create(tags=["ok", "\udc00"]), "tags[1]"),
    ("memory:create", create(type="fa\ud800ct"), "type"),
    ("memory:create", create(metadata={"mood": {"deep": ["\ud83d"]}}), "metadata.mood.deep[0]"),
    ("memory:create", create(metadata={"m\ud800": 1}), "metadata.m\\ud800"),  # named sendably
    ("memory:create", create(evidence=["run:1", {"quote": "\udfff"}]), "evidence[1].quote"),
    ("memory:create", create(type="x" * 300), "type"),
    ("memory:create", create(tags=["t" * 129]), "tags[0]"),
    ("memory:create", create(tags=[f"t{i}" for i in range(101)]), "tags"),
    ("memory:create", create(metadata={"deep": nested(600)}), "metadata"),
    ("memory:create", create(evidence=[nested(40)]), "evidence[0]"),
    ("memory:create", create(documentId="d" * 2000, scope="document"), "documentId"),
    ("memory:update", {"id": MEMORY, "patch": None}, "patch"),
    ("memory:update", {"id": MEMORY, "patch": {"content": "\ud800"}}, "patch.content"),
    ("memory:update", {"id": MEMORY, "patch": {"metadata": {"deep": nested(600)}}}, "patch.metadata"),
    ("memory:update", {"id": MEMORY, "patch": {"type": "y" * 300}}, "patch.type"),
    ("memory:get", {"id": "m-\ud800"}, "id"),
    ("memory:preferences:ingest", {"runId": "r\ud800", "skillId": "s", "action": "accept", "evidenceRef": "ok"}, "runId"),
    ("memory:preferences:ingest", {"runId": "r", "skillId": "s", "action": "accept", "evidenceRef": "o\udc00k"},
     "evidenceRef"),
    ("memory:injection:preview", {"queryText": "hero\ud800"}, "queryText"),
    ("memory:settings:update", {"patch": {"injectionMaxItems": 99999999999999999999}}, "patch.injectionMaxItems"),
    ("memory:settings:update", {"patch": {"injectionTokenBudget": 1_000_001}}, "patch.injectionTokenBudget"),
    ("memory:settings:update", {"patch": {"preferenceLearningThreshold": 1001}}, "patch.preferenceLearningThreshold"),
])
def test_out_of_bounds_is_invalid_argument_and_writes_nothing(bank: Bank, sample: Path, channel: str,
                                                               payload: dict[str, Any], field: str) -> None:
    before = files(sample)
    envelope = bank.call(channel, payload)
    assert envelope["ok"] is False and envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
    assert envelope["error"]["details"]["field"] == field
    assert files(sample) == before
    assert bank.call("memory:injection:preview", {"queryText": "is the hero injured?"})["ok"]


@pytest.mark.parametrize("call, field", [
    (lambda b: b.update_memory(MEMORY, None), "patch"),
    (lambda b: b.update_memory(MEMORY, {"metadata": {"deep": nested(600)}}), "patch.metadata"),
    (lambda b: b.update_memory(MEMORY, {"tags": "abc"}), "patch.tags"),
    (lambda b: b.update_memory(MEMORY, {"pinned": "yes"}), "patch.pinned"),
    (lambda b: b.update_memory(MEMORY, {"contents": "typo"}), "patch.contents"),
    (lambda b: b.create_memory("fact", "project", "A fact.", tags="abc"), "tags"),
    (lambda b: b.create_memory("x" * 300, "project", "A fact."), "type"),
    (lambda b: b.create_memory("fact", "project", "A fact.", metadata={"deep": nested(600)}), "metadata"),
    (lambda b: b.create_memory("fact", "project", "A fact.", evidence=[float("nan")]), "evidence[0]"),
    (lambda b: b.create_memory("fact", "project", None), "content"),
    (lambda b: b.ingest_feedback("run", "skill", "accept", "ok", tags=[1]), "tags[0]"),
    (lambda b: b.preview(document_id=5), "documentId"),
    (lambda b: b.update_settings({"injectionMaxItems": 10 ** 20}), "patch.injectionMaxItems"),
])
def test_the_python_api_checks_the_same(bank: Bank, sample: Path, call: Any, field: str) -> None:
    before = files(sample)
    with pytest.raises(MembankError) as caught:
        call(bank)
    assert caught.value.code == "INVALID_ARGUMENT" and caught.value.details["field"] == field
    assert files(sample) == before


def test_a_setting_out_of_range_in_the_file_is_a_diagnostic_and_the_default(bank: Bank, sample: Path) -> None:
    settings = sample / ".writenow/settings.yaml"
    settings.write_text("memory:\n  injectionMaxItems: 99999999999999999999\n  injectionTokenBudget: 2000000\n", "utf-8")
    assert bank.settings()["injectionMaxItems"] == 20 and bank.settings()["injectionTokenBudget"] == 1200
    problems = [d for d in bank.diagnostics()["items"] if d["source"] == ".writenow/settings.yaml"]
    assert [(d["line"], d["severity"]) for d in problems] == [(2, "error"), (3, "error")]
    assert "from 0 to 1,000" in problems[0]["message"]
    assert bank.call("memory:injection:preview", {})["ok"]
    assert bank.call("memory:injection:preview", {"queryText": "is the hero injured?"})["ok"]


def test_the_cli_refuses_a_setting_out_of_range(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(sample)  # WRITENOW_HOME is the test's own (conftest)
    result = CliRunner().invoke(app, ["settings", "set", "memory.injectionMaxItems=99999999999999999999", "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["error"]["code"] == "INVALID_ARGUMENT"
    preview = CliRunner().invoke(app, ["preview", "--json"])  # the refused value was not written
    assert preview.exit_code == 0 and json.loads(preview.stdout)["ok"] is True
