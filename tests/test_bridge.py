"""The name bridge (issue 35, recall/bridge.py): a memory in the other language that names a card the
question names gains its evidence in the calibrated ranking. Pure parts tested directly; then a small
bilingual bank, with a fake strong encoder that knows no translation at all (words hashed; a Chinese
memory shares no dimension with an English question), so only the bridge can cross."""

from __future__ import annotations

import math
import random
import threading
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

import membank
from membank import Bank
from membank.domains.recall import bridgebank, bridgenames
from membank.domains.recall.bridge import Bridge
from membank.domains.recall.calibrate import LIFT, Candidate, calibrate, calibrated_arrays
from membank.domains.story.matching import Keyed, Matcher, folded_text
from membank.index.strong import StrongEncoder

from .strongfake import filled, hashed

DIM = 512


def _pool(language: str, n: int, base: float, step: float = 0.01, start: int = 0) -> list[Candidate]:
    return [Candidate(f"{language}{start + i}", base + step * i, base + step * i, language) for i in range(n)]


def test_a_cards_evidence_is_its_rarity_in_each_language_pool() -> None:
    zh = np.array([False] * 4 + [True] * 4)
    named = [{"shen"}, {"shen"}, {"shen"}, set(), {"shen", "wen"}, set(), set(), set()]
    bridge = Bridge.of(named, zh)
    # English: 3 of 4 name Shen; Chinese: 1 of 4 names each
    assert bridge.evidence(["shen"]) == pytest.approx([math.log(4 / 3) / math.log(4)] * 3 + [0, 1, 0, 0, 0])
    assert bridge.evidence(["wen", "shen"])[4] == 1.0  # the most any named card is worth
    assert bridge.evidence(["nobody"]) is None and bridge.evidence([]) is None
    flat = Bridge.of(named, zh, rarity=False).evidence(["shen"])
    assert flat is not None and list(flat) == [1, 1, 1, 0, 1, 0, 0, 0]


def test_rows_that_do_not_count_do_not_dilute_a_cards_rarity() -> None:
    zh = np.zeros(4, bool)
    named = [{"a"}, set(), set(), set()]
    every = Bridge.of(named, zh).evidence(["a"])
    two = Bridge.of(named, zh, counted=np.array([True, True, False, False])).evidence(["a"])
    assert every is not None and two is not None
    assert every[0] == pytest.approx(1.0) and two[0] == pytest.approx(1.0)  # 1 of 4, 1 of 2: log n / log n
    half = Bridge.of([{"a"}, {"a"}, set(), set()], zh).evidence(["a"])
    assert half is not None and half[0] == pytest.approx(0.5)


def test_a_patched_bridge_is_the_bridge_of_the_patched_rows() -> None:
    # a save: the rows written are dropped and come back after the kept ones (strongcopy.py `patched`)
    before = Bridge.of([{"a"}, set(), {"b"}, {"a", "b"}], np.array([False, False, True, True]))
    after = before.patched(np.array([True, False, True, False]), [{"a"}, set()], np.array([False, True, False, True]),
                           np.ones(4, bool))
    fresh = Bridge.of([{"a"}, {"b"}, {"a"}, set()], np.array([False, True, False, True]))
    for cards in (["a"], ["b"], ["a", "b"]):
        assert list(after.evidence(cards)) == pytest.approx(list(fresh.evidence(cards)))  # type: ignore[arg-type]
    assert list(before.evidence(["a"])) == pytest.approx([1, 0, 0, 1])  # type: ignore[arg-type]  # unchanged


def test_a_renamed_bridge_is_the_bridge_of_the_rows_naming_their_new_cards() -> None:
    zh = np.array([False, False, True, True])
    before = Bridge.of([{"a"}, set(), {"b"}, {"a", "b"}], zh)
    after = before.renamed(np.array([1, 3]), [{"c"}, {"b"}])
    fresh = Bridge.of([{"a"}, {"c"}, {"b"}, {"b"}], zh)
    for cards in (["a"], ["b"], ["c"], ["a", "c"]):
        assert list(after.evidence(cards)) == pytest.approx(list(fresh.evidence(cards)))  # type: ignore[arg-type]
    assert list(before.evidence(["c"]) or []) == []  # unchanged


def test_evidence_lifts_an_other_language_candidate_over_the_gate() -> None:
    # the English answer stands far out; the Chinese memory naming the card stands out a little in its
    # pool, under the gate: only its evidence lets it compete, and it then outranks the rest of the pool
    english = _pool("en", 10, 0.30) + [Candidate("en-best", 0.50, 0.40, "en")]
    chinese = _pool("zh", 10, 0.20, step=0.02)
    named = Candidate("bridged", 0.40, 0.32, "zh", evidence=1.0)
    plain = calibrate(english + chinese + [Candidate("bridged", 0.40, 0.32, "zh")], "en")
    assert [c.key for c in plain if c.language == "zh" and c.competes] == []
    lifted = calibrate(english + chinese + [named], "en")
    assert [c.key for c in lifted if c.language == "zh" and c.competes] == ["bridged"]
    assert lifted[0].key == "en-best"
    # a same-language candidate's evidence counts for nothing (its words already match the question)
    same = calibrate([Candidate(c.key, c.strong, c.static, c.language, 1.0) for c in english] + chinese, "en")
    assert [(c.key, c.score) for c in same] == [(c.key, c.score) for c in calibrate(english + chinese, "en")]


def test_the_array_form_applies_the_same_evidence() -> None:
    english = _pool("en", 10, 0.30) + [Candidate("en-best", 0.50, 0.40, "en")]
    chinese = _pool("zh", 10, 0.20, step=0.02) + [Candidate("bridged", 0.40, 0.32, "zh", evidence=0.7)]
    every = english + chinese
    scores, competes = calibrated_arrays(np.array([c.strong for c in every]), np.array([c.static for c in every]),
                                         np.array([c.language == "zh" for c in every]), False,
                                         evidence=np.array([c.evidence for c in every]))
    by_key = {c.key: (c.score, c.competes) for c in calibrate(every, "en")}
    for c, s, k in zip(every, scores, competes):
        assert by_key[c.key] == (pytest.approx(s), bool(k))
    assert LIFT > 0


# ---- a small bilingual bank --------------------------------------------------------------------------

class _NoTranslation:
    """Words hashed into DIM dimensions; a CJK character is a word: the two languages share nothing."""

    def encode(self, texts: list[str], query: bool = False) -> np.ndarray:
        return hashed(("".join(f" {ch} " if "\u4e00" <= ch <= "\u9fff" else ch for ch in text.lower()).split()
                       for text in texts), DIM)


def load() -> StrongEncoder:
    return StrongEncoder("fake-no-translation:1:512", DIM, _NoTranslation())


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.test_bridge:load")
    yield


CHINESE = ["林默在第五章左臂受了刀伤。", "灯塔的灯在风暴夜里熄灭了。", "码头的渔夫每天清晨出海。", "林默不喜欢喝酒。",
           "港口的钟楼每到正午敲十二下。", "马伦的父亲是个老水手。", "风暴过后海滩上全是海草。", "客栈老板娘会说三种方言。",
           "林默的剑是他师父留下的。", "城里的集市逢五开市。"]
ANSWER = "苏瑶把一封密信缝在袖口的夹层里。"
ENGLISH = "Su Yao lodges above the chandler's shop and watches the lighthouse at night."


def _ids(bank: Bank, query: str) -> list[str]:
    return [i["id"] for i in bank.preview(query_text=query)["items"]]


def test_a_question_naming_a_card_finds_the_other_languages_memory_naming_it(sample: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    bank = membank.open(sample)  # the sample's card 苏瑶 has the alias Su Yao
    try:
        for text in CHINESE:
            bank.create_memory(type_="fact", scope="project", content=text)
        english = bank.create_memory(type_="fact", scope="project", content=ENGLISH)["id"]
        filled(bank)
        # Chinese question, English answer; asked before a Chinese memory names 苏瑶: one in the question's
        # language would stand out of its own pool and hold the gate up (the bridge is evidence, not a rule)
        asked = {"苏瑶晚上住在哪里？": english}
        _found(bank, monkeypatch, asked)
        # English question, Chinese answer
        asked = {"what does Su Yao keep hidden in her sleeve?":
                 bank.create_memory(type_="fact", scope="project", content=ANSWER)["id"]}
        filled(bank)
        _found(bank, monkeypatch, asked)
    finally:
        bank.close()


def _found(bank: Bank, monkeypatch: pytest.MonkeyPatch, asked: dict[str, str]) -> None:
    for query, answer in asked.items():
        assert answer in _ids(bank, query)[:5], query
    with monkeypatch.context() as m:
        m.setattr(bridgebank, "evidence", lambda *_: None)  # the rule without the bridge
        for query, answer in asked.items():
            assert answer not in _ids(bank, query)[:5], query


def test_a_name_added_to_a_card_bridges_at_the_next_question(sample: Path) -> None:
    """The names a memory holds are matched again when the cards change (once per generation of them)."""
    bank = membank.open(sample)
    try:
        for text in CHINESE:
            bank.create_memory(type_="fact", scope="project", content=text)
        answer = bank.create_memory(type_="fact", scope="project", content=ANSWER)["id"]
        card = sample / ".writenow" / "characters" / "su-yao.md"
        card.write_text(card.read_text("utf-8").replace("aliases: [Su Yao, the envoy]", "aliases: [the envoy]"), "utf-8")
        bank.sync()
        filled(bank)
        query = "what does Su Yao keep hidden in her sleeve?"
        assert answer not in _ids(bank, query)[:5]  # no card is called Su Yao: nothing to bridge
        card.write_text(card.read_text("utf-8").replace("aliases: [the envoy]", "aliases: [Su Yao, the envoy]"), "utf-8")
        bank.sync()
        filled(bank)
        assert answer in _ids(bank, query)[:5]
    finally:
        bank.close()


# ---- the names memories hold as the cards change (bridgenames.py) -------------------------------------

LATIN = ["Shen", "Shenzhen", "Wen", "Wen Yu", "Yu", "Lin Mo", "Mo", "the envoy", "Rover1", "Zoë", "Strauß", "Ａda"]
CJK = ["苏瑶", "瑶", "林默", "默", "温玉", "小师弟", "师弟", "温玉lake"]
FILLER = ["the", "a", "s", "'s", "es", "_x", "zhen", "of", "shens", "shen's", "wen-yu", "WEN", "yu's", "MOes", "zoe",
          "strauss", "STRAUSS", "ada", "ＳＨＥＮ", "envoys", "里", "的", "在", "苏", "温", "\n", ",", ".", "rover10",
          "林默的", "小师", "弟"]


def _text(rng: random.Random) -> str:
    parts = rng.choices(LATIN + CJK + FILLER, k=rng.randint(0, 12))
    return "".join(p + rng.choice(["", " ", " ", "\n", ", "]) for p in parts)


def _keyed(rng: random.Random, card: str) -> Keyed:
    every = LATIN + CJK + (["/sh[e]n/i"] if rng.random() < 0.05 else [])
    return Keyed(card, rng.choice(every), tuple(rng.sample(every, rng.randint(0, 2))))


def _edited(rng: random.Random, cards: dict[str, Keyed]) -> dict[str, Keyed]:
    out = dict(cards)
    card = rng.choice(sorted(out)) if out else ""
    what = rng.choice(["name", "alias+", "alias-", "add", "remove", "body"] if out else ["add"])
    if what == "name":
        out[card] = Keyed(card, rng.choice(LATIN + CJK), out[card].aliases, out[card].keys)
    elif what == "alias+":
        out[card] = Keyed(card, out[card].name, (*out[card].aliases, rng.choice(LATIN + CJK)), out[card].keys)
    elif what == "alias-":
        out[card] = Keyed(card, out[card].name, out[card].aliases[1:], out[card].keys)
    elif what == "add":
        new = f"c{rng.randrange(1000)}"
        out[new] = _keyed(rng, new)
    elif what == "remove":
        del out[card]
    else:  # a key, a body, a state: no name or alias
        out[card] = Keyed(card, out[card].name, out[card].aliases, (f"k{rng.randrange(99)}",))
    return out


def _from_scratch(cards: dict[str, Keyed], texts: dict[int, str]) -> dict[int, frozenset[str]]:
    matcher = Matcher.build([Keyed(k.id, k.name, k.aliases) for k in cards.values()])
    return {key: bridgenames.named(matcher, text) for key, text in texts.items()}


def test_names_matched_again_for_the_changed_cards_are_the_names_matched_from_scratch() -> None:
    rng = random.Random(35)
    for _ in range(12):
        texts = {i: _text(rng) for i in range(40)}
        folded = bridgenames.Folded()
        for i, t in texts.items():
            folded.add(i, folded_text(t))
        cards = {f"c{i}": _keyed(rng, f"c{i}") for i in range(6)}
        names = _from_scratch(cards, texts)
        matchers = bridgenames.Matchers.of(cards.values())
        for _ in range(12):
            after = _edited(rng, cards)
            last = bridgenames.spelled(cards.values())
            gone = bridgenames.changed(last, bridgenames.spelled(after.values()))
            cards = after
            if not gone:  # a key, a body or a state changed: nothing to do (bridgebank keeps what it had)
                continue
            read: list[int] = []

            def reader(keys: list[int]) -> list[tuple[int, str]]:
                read.extend(keys)
                return [(k, texts[k]) for k in keys]

            matchers, small = matchers.changed(after.values(), gone)
            before = names
            names, picked = bridgenames.rematched(last, gone, small, names, folded, reader)
            scratch = _from_scratch(after, texts)
            assert names == scratch
            assert sorted(read) == (sorted(picked) if small.cards else [])  # a card removed: no text read
            assert {k for k in texts if before[k] != names[k]} <= set(picked)
            assert {k: matchers.named(t) for k, t in texts.items()} == scratch  # a question's names too


def test_only_the_texts_holding_a_changed_word_are_read() -> None:
    texts = {1: "Rover9 sailed at dawn.", 2: "ROVER9S were seen", 3: "rover90 is someone else", 4: "苏瑶与林默",
             5: "Nobody here."}
    folded = bridgenames.Folded()
    for k, t in texts.items():
        folded.add(k, folded_text(t))
    before = [Keyed("lin", "林默"), Keyed("su", "苏瑶", ("Su Yao",))]
    names = _from_scratch({k.id: k for k in before}, texts)
    read: list[int] = []

    def reader(keys: list[int]) -> list[tuple[int, str]]:
        read.extend(keys)
        return [(k, texts[k]) for k in keys]

    after = [*before, Keyed("rover", "Rover9")]
    again, _ = bridgenames.rematched(bridgenames.spelled(before), frozenset({"rover"}), Matcher.build(after[2:]), names,
                                     folded, reader)
    assert sorted(read) == [1, 2, 3]  # a Latin word's texts (the matcher then keeps its whole words)
    assert again == _from_scratch({k.id: k for k in after}, texts)
    assert again[1] == again[2] == {"rover"} and again[3] == frozenset() and again[4] == {"lin", "su"}
    read.clear()
    su = Keyed("su", "苏瑶")  # an alias removed
    assert bridgenames.rematched(bridgenames.spelled(after), frozenset({"su"}), Matcher.build([su]), again, folded,
                                 reader)[0][4] == {"lin", "su"}
    assert read == [4]  # the texts holding 苏瑶 or Su Yao (its card changed), none of the others
    assert bridgenames.words([Keyed("x", "/x+/")]) is None  # a regex: every text is read


def test_a_memory_names_a_card_by_its_alias_as_the_alias_is_added_renamed_or_removed(sample: Path) -> None:
    """The names memories hold follow an edit of a card's aliases at the next question (matched again for
    that card alone), and a card edit that changes no name or alias leaves them as they were."""
    bank = membank.open(sample)
    try:
        card = sample / ".writenow" / "characters" / "su-yao.md"
        card.write_text(card.read_text("utf-8").replace("[Su Yao, the envoy]", "[the envoy]"), "utf-8")
        bank.sync()
        for text in CHINESE:
            bank.create_memory(type_="fact", scope="project", content=text)
        answer = bank.create_memory(type_="fact", scope="project", content=ENGLISH)["id"]  # "Su Yao lodges …"
        filled(bank)
        query = "苏瑶晚上住在哪里？"
        assert answer not in _ids(bank, query)[:5]  # no card is called Su Yao: the memory names none
        for before, after, bridged in (("[the envoy]", "[Su Yao, the envoy]", True),
                                       ("state: Lodging", "state: Still lodging", True),  # no name changed
                                       ("[Su Yao,", "[Su-Yao,", False),  # the memory's words are no alias now
                                       ("[Su-Yao,", "[Su Yao,", True), ("[Su Yao, the envoy]", "[the envoy]", False)):
            card.write_text(card.read_text("utf-8").replace(before, after), "utf-8")
            bank.sync()
            filled(bank)
            assert (answer in _ids(bank, query)[:5]) == bridged, after
    finally:
        bank.close()
