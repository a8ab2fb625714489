"""A request's strong query (recall/tiers.py `asking`, `start`): a preview or an assembly embeds its query
once, on a worker thread, while the caller does the work that needs no strong vector; the answer is
the one the caller's own embedding gives; nothing is left running when the request ends."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import membank
from membank import Bank
from membank.domains.recall import tiers
from membank.index.strong import StrongEncoder

from . import strongfake

ASKED: list[tuple[str, str]] = []  # (query text, thread name) of each query the model embedded


class _Counting:
    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        if query:
            ASKED.extend((t, threading.current_thread().name) for t in texts)
        return strongfake._Model().encode(texts, query)


def load() -> StrongEncoder:
    encoder = StrongEncoder("fake-strong:1:32", strongfake.DIM, _Counting())
    encoder.cache.size = 0  # every query embedded, as the bench measures
    return encoder


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.test_strong_started:load")
    strongfake.GATE.set()
    ASKED.clear()
    yield


@pytest.fixture
def filled(sample: Path) -> Iterator[Bank]:
    bank = membank.open(sample)
    done = threading.Event()
    bank.listeners.append(lambda method, p: done.set() if method == "index:strong" and p["done"] == p["total"] else None)
    bank.sync()
    assert done.wait(30)
    ASKED.clear()
    try:
        yield bank
    finally:
        bank.close()


def test_a_preview_embeds_its_query_once_on_a_worker(filled: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    answer = filled.call("memory:injection:preview", {"queryText": "the harbour at night"})
    assert answer["ok"], answer
    assert ASKED == [("the harbour at night", "membank-strong-query")]
    assert answer["data"]["items"] and "strong" in str(answer["data"]["items"])
    # the same answer as when the caller embeds the query itself (nothing started)
    monkeypatch.setattr(tiers, "start", lambda bank, text: None)
    again = filled.call("memory:injection:preview", {"queryText": "the harbour at night"})
    assert ASKED[1] == ("the harbour at night", threading.current_thread().name)
    assert again["data"]["items"] == answer["data"]["items"]


def test_an_assembly_embeds_its_query_once_on_a_worker(filled: Bank) -> None:
    answer = filled.call("context:assemble", {"skillId": "continue", "queryText": "who keeps the lighthouse"})
    assert answer["ok"], answer
    layer4 = [i for i in answer["data"]["items"] if i["layer"] == 4 and i["reason"].get("mode") == "semantic"]
    assert layer4 and {i["reason"]["tier"] for i in layer4} == {"strong"}
    assert ASKED == [("who keeps the lighthouse", "membank-strong-query")]


def test_a_query_started_and_never_asked_is_done_with_its_request(filled: Bank) -> None:
    with tiers.asking():
        tiers.start(filled, "a question nobody reads")
        tiers.start(filled, "a question nobody reads")  # once per text
    assert ASKED == [("a question nobody reads", "membank-strong-query")]
    assert not [t for t in threading.enumerate() if t.name == "membank-strong-query"]


def test_outside_a_request_nothing_is_started(filled: Bank) -> None:
    tiers.start(filled, "no request")
    assert ASKED == []
    found = tiers.strong_query(filled, "no request")  # embedded by the caller
    assert found is not None and ASKED == [("no request", threading.current_thread().name)]
