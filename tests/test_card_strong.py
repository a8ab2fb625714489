"""Cards and world entries searched by the strong tier (issue 35): when the strong tier ranks a query, the
preview's card search scores the cards' strong vectors (calibrated across languages, as the memories), so a
question in either language finds the card it is about and an unrelated one lists none; a card without its
strong vector yet leaves the card search on the static tier. A bilingual fake encoder stands in for the model
(`load` below: a few Chinese words map to English ones, then words hashed, as tests/strongfake.py)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import membank
from membank import Bank
from membank.index.strong import StrongEncoder

from .sidecar import REPO, Sidecar
from .strongfake import filled, hashed

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "cards"  # real cards nobody here wrote (README there)
FAKE = "tests.test_card_strong:load"
SENSEI = "characters/coding-sensei"
WORDS = {"编程": "coding", "老师": "sensei", "代码": "code", "猫": "cat"}  # the fake's whole bilingual knowledge
DIM = 512
HOLD = threading.Event()  # clear: the background's batches wait (a card without its strong vector yet)
HOLD.set()
HELD = threading.Event()  # set when a batch waits


class _Bilingual:
    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        if not query and not HOLD.is_set():
            HELD.set()
            HOLD.wait(60)
        return hashed((_translated(text).lower().replace("-", " ").split() for text in texts), DIM)


def _translated(text: str) -> str:
    for zh, en in WORDS.items():
        text = text.replace(zh, f" {en} ")
    return text


def load() -> StrongEncoder:
    return StrongEncoder("fake-bilingual:1:512", DIM, _Bilingual())


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", FAKE)
    HOLD.set()
    HELD.clear()
    yield
    HOLD.set()


def _with_sensei(sample: Path) -> Bank:
    bank = membank.open(sample)
    envelope = bank.call("card:import", {"paths": [str(REAL / "default_CodingSensei.png"),
                                                   str(REAL / "default_FluxTheCat.png")]})
    assert envelope["ok"], envelope
    filled(bank)
    return bank


def test_a_question_in_either_language_finds_the_card_by_its_strong_vector(sample: Path) -> None:
    bank = _with_sensei(sample)
    try:
        for question in ("Who is the Coding Sensei?", "谁是编程老师？"):
            found = bank.preview(query_text=question)["cards"]
            assert found and found[0]["id"] == SENSEI, (question, found)
            assert found[0]["reason"]["score"]["tier"] == "strong"
            assert found[0]["reason"]["detail"].startswith("strong vector #1")
        assert bank.preview(query_text="The tax office closes early on Fridays.")["cards"] == []  # nothing about any card
    finally:
        bank.close()


def test_a_card_waiting_for_its_strong_vector_leaves_the_card_search_static(sample: Path) -> None:
    bank = _with_sensei(sample)
    try:
        HOLD.clear()
        (sample / ".writenow" / "world" / "quiet-harbour.md").write_text(
            "---\nname: Quiet Harbour\nkind: place\nsummary: where the coding sensei keeps a boat\n---\n", encoding="utf-8")
        bank.sync()
        assert HELD.wait(30)
        found = bank.preview(query_text="Who is the Coding Sensei?")["cards"]
        assert found[0]["id"] == SENSEI and {c["reason"]["score"]["tier"] for c in found} == {"static"}
        HOLD.set()
        filled(bank)  # a card with a summary and no body gets its strong vector too
        found = bank.preview(query_text="sensei boat harbour")["cards"]
        assert "world/quiet-harbour" in [c["id"] for c in found]
        assert {c["reason"]["score"]["tier"] for c in found} == {"strong"}
    finally:
        HOLD.set()
        bank.close()


def test_the_sidecar_lists_the_card_for_a_chinese_question(sample: Path, tmp_path: Path) -> None:
    bank = _with_sensei(sample)  # imported and filled here; the sidecar opens the same index
    bank.close()
    server = Sidecar("--project", str(sample), home=tmp_path / "home",
                     env={"MEMBANK_STRONG_ENCODER": FAKE, "PYTHONPATH": str(REPO)})
    try:
        server.wait_for(lambda: server.ok("index:status", {})["strong"]["state"] == "ready", "the strong tier ready")
        found = server.ok("memory:injection:preview", {"queryText": "谁是编程老师？"})["cards"]
        assert found[0]["id"] == SENSEI and found[0]["reason"]["score"]["tier"] == "strong"
    finally:
        server.close()


def test_the_cards_centred_cosines_are_the_banks_on_their_rows_alone() -> None:
    from membank.index.strongcopy import StrongVectors, quantize

    rng = np.random.default_rng(3)
    rows, scale = quantize(rng.standard_normal((1300, 16)).astype(np.float32))  # more than one scan block
    zh = np.arange(1300) % 3 == 0
    copy = StrongVectors("t", "m", np.arange(1, 1301, dtype=np.int64), rows, scale, zh=zh)
    query = rng.standard_normal(16).astype(np.float32)
    for at in (np.array([2, 3, 17, 30]), np.array([0]), np.arange(5, 1300, 7), np.arange(1300), np.zeros(0, np.int64)):
        for query_zh in (False, True):  # the very numbers of the whole pass (the cards and the memories alike)
            assert np.array_equal(copy.centred_cosines(query, query_zh, at), copy.centred_cosines(query, query_zh)[at])


def test_the_cards_are_scored_as_the_memories_are_and_word_matches_keep_their_centred_cosine(sample: Path) -> None:
    from membank.domains.recall import cards, tiers
    from membank.domains.recall.rank import strong_scores

    bank = _with_sensei(sample)
    try:
        text = "Who is the Coding Sensei?"
        query = tiers.strong_query(bank, text)
        model = bank.embedder()
        assert query is not None and model is not None
        vector = model.encode([text])[0]
        with bank.index.lock:
            index = bank.index
            copy = index.strong_copy()
            assert copy is not None
            every = sorted(cards.card_rowids(index))
            at = np.flatnonzero(np.isin(copy.rowids, every))
            centred = copy.centred_cosines(query.vector, query.zh)[at]  # the memories' whole pass, at the cards
            scores = strong_scores(centred, tiers.static_cosines(index, copy, vector)[at], copy.zh[at], query.zh,
                                   np.ones(len(at), bool))
            best = int(np.lexsort((copy.rowids[at], -scores))[0])
            got = cards.strong_cards(index, query, vector, 1, also=every)
        assert got is not None and len(every) > 2
        nearest, told = got
        assert nearest == [(int(copy.rowids[at][best]), float(1.0 - scores[best]))]
        # a card outside the k best that the words found still has its centred cosine for the floor
        assert told == {int(r): float(c) for r, c in zip(copy.rowids[at], centred)}
    finally:
        bank.close()


def test_the_memories_are_scored_on_their_competing_rows_alone(sample: Path) -> None:
    """The strong side scores only the rows that may compete (no card, here): the very scores, order and
    centred cosines of a pass over every row."""
    from membank.domains.recall import bridgebank, queries, tiers
    from membank.domains.recall.rank import strong_scores

    bank = _with_sensei(sample)
    try:
        model = bank.embedder()
        assert model is not None
        for text in ("Who is the Coding Sensei?", "谁是编程老师？", "the cat"):
            query = tiers.strong_query(bank, text)
            assert query is not None
            vector = model.encode([text])[0]
            with bank.index.lock:
                index = bank.index
                copy = index.strong_copy()
                assert copy is not None
                allowed = copy.mask(np.array(queries.eligible_rowids(index, None), np.int64)) & (copy.scale > 0)
                assert 0 < allowed.sum() < len(copy)  # the cards' rows are in the copy but do not compete
                centred = copy.centred_cosines(query.vector, query.zh)  # every row
                scores = strong_scores(centred, tiers.static_cosines(index, copy, vector), copy.zh, query.zh,
                                       allowed, bridgebank.evidence(index, copy, text)).astype(np.float32)
                side = tiers.strong_side(bank, query, 3, None, vector)
            best = sorted(np.flatnonzero(allowed), key=lambda i: (-scores[i], copy.rowids[i]))[:3]
            assert side.nearest == [(int(copy.rowids[i]), float(1.0 - scores[i])) for i in best]
            assert side.centred == {int(copy.rowids[i]): float(centred[i]) for i in best}
    finally:
        bank.close()
