"""A journal line with a value membank never writes (NaN, a text weight, a list for a key) is a
damaged line: skipped with a warning, never a poison for later feedback on its signal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membank import Bank
from membank.files import journal


def _feedback(bank: Bank, run: str) -> dict:
    envelope = bank.call("memory:preferences:ingest", {"runId": run, "skillId": "polish", "action": "accept",
                                                       "evidenceRef": "more dialogue"})
    assert envelope["ok"], envelope
    return envelope["data"]


def _line(key: str, **fields: str) -> str:
    """A feedback line as JSON text, with some values given as raw JSON (NaN, 1e400 …)."""
    values = {"event": '"feedback"', "at": '"2099-01-01T00:00:00.000000Z"', "signalKey": json.dumps(key),
              "weight": "1.0", "runId": '"hand"', "tags": "[]", **fields}
    return "{" + ", ".join(f'"{k}": {v}' for k, v in values.items()) + "}"


@pytest.mark.parametrize("field, raw", [
    ("weight", "NaN"), ("weight", "Infinity"), ("weight", "-Infinity"), ("weight", "1e400"), ("weight", "1" + "0" * 400),
    ("weight", '"1"'), ("weight", "true"), ("weight", "[1]"), ("weight", "-5"), ("signalKey", '["a"]'),
    ("runId", '{"a": 1}'), ("evidence", "[1, 2]"), ("tags", '[1, {"a": 2}]'), ("at", "20990101"),
    ("evidence", '"lone \\ud800"'), ("tags", '["lone \\udfff"]'),
])
def test_a_damaged_value_skips_its_line_and_feedback_still_counts(bank: Bank, sample: Path, field: str, raw: str) -> None:
    key = _feedback(bank, "r1")["signalKey"]
    extra = sample / ".writenow/journal/2099-01.jsonl"
    extra.write_text(_line(key, **{field: raw}) + "\n", "utf-8")
    bank.sync()
    warnings = [d for d in bank.diagnostics()["items"] if d["source"] == ".writenow/journal/2099-01.jsonl"]
    assert [(d["line"], d["severity"]) for d in warnings] == [(1, "warning")]
    data = _feedback(bank, "r2")
    assert data["count"] == 2.0 and "learned" in data  # the sample project learns after 2


def test_a_line_nested_past_the_parser_limit_is_damaged_not_fatal() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    events, problems = journal.read(deep + b"\n" + b'{"event": "preferences-cleared", "at": "2026-11-01T00:00:00Z"}\n', "j")
    assert [e.line for e in events] == [2] and [p.line for p in problems] == [1]
