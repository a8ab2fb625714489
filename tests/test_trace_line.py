"""The run's trace line (domains/context/trace.py, files/journal.py `encode`): parts encoded ahead give
the bytes the whole event encoded at once gives."""

from __future__ import annotations

import json

import pytest

from membank.domains.context import trace
from membank.files import journal


def _whole(event: dict) -> str:
    return json.dumps(event, ensure_ascii=False, sort_keys=True, allow_nan=False)


@pytest.mark.parametrize("event, raw_key", [
    ({"event": "run", "runId": "r-1", "skillId": "s", "documentId": None, "stablePrefixHash": "sha256:ab"}, "pieces"),
    ({"zeta": 1, "alpha": "é 山 \u2028", "mid": [1.5, None, {"b": 2, "a": 1}]}, "beta"),
    ({"a": 1}, "zz"),
    ({"b": 1}, "a"),
])
def test_raw_fields_land_where_sorting_the_whole_event_puts_them(event: dict, raw_key: str) -> None:
    value = [{"score": 0.25, "id": "m-1", "kind": "memory"}, {"id": None, "kind": "card", "score": -0.0}, "“q”"]
    whole = _whole({**event, raw_key: value})
    assert journal.encode(event, {raw_key: _whole(value)}) == whole
    assert journal.encode({**event, raw_key: value}) == whole


def _item(score: object, tokens: object = 3) -> dict:
    return {"layer": 4, "kind": "memory", "id": "m-1", "source": ".writenow/memories/a.md", "tokens": tokens,
            "reason": {"mode": "semantic"}, "score": score}


@pytest.mark.parametrize("first, second", [(1, 1.0), (0.0, -0.0), (None, 0.5), (True, 1)])
def test_a_kept_trace_entry_is_never_one_for_an_equal_but_other_value(first: object, second: object) -> None:
    """1 and 1.0, 0.0 and -0.0 are equal keys in a dict but not the same JSON: each keeps its own."""
    for score in (first, second, first):
        expected = _whole({k: v for k, v in _item(score).items() if k != "reason"})
        assert trace.entry(_item(score)) == expected
    assert trace.entry(_item(0.5, True)) == _whole({k: v for k, v in _item(0.5, True).items() if k != "reason"})
    assert trace.entry(_item(0.5, 1)) == _whole({k: v for k, v in _item(0.5, 1).items() if k != "reason"})


def test_a_trace_entry_with_no_score_lists_score_null() -> None:
    item = _item(None)
    del item["score"]  # items leave out a score they do not have
    assert json.loads(trace.entry(item)) == {"layer": 4, "kind": "memory", "id": "m-1",
                                                     "source": ".writenow/memories/a.md", "tokens": 3, "score": None}
