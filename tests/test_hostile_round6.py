"""Hostile round 6 (this session's merges): each test is one attack, kept lean and fast."""

from __future__ import annotations

import queue
import random
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import membank
from membank.domains.recall import bridgebank, bridgenames
from membank.domains.story.cards import catalog
from membank.domains.story.matching import Keyed, Matcher, folded_text
from membank.index.store import reading

from .strongfake import filled

# ---- the name bridge's incremental names (bridgenames.py) against hostile spellings -----------------------

# names that look like patterns but are not /regex/, empty or blank ones, one CJK character, names that are
# substrings of others, Turkish İ, ß and ẞ, full-width, combining marks (composed and not), ligatures, a
# zero-width space, a NUL, the Kelvin and Ångström signs, a final sigma, a title-case digraph
SPELLINGS = ["", " ", "\t", "瑶", "苏瑶", "苏", "İstanbul", "istanbul", "i̇stanbul", "İ", "Straße", "STRASSE", "ẞ",
             "Ｓｈｅｎ", "Shen", "Shenzhen", "Zoe\u0301", "Zoé", "ﬁre", "fire", "a.b", "[x]", "(", "*", "\\d+", "/(/",
             "/sh[e]n/i", "Σίσυφος", "ǅ", "\u212a", "k", "\u212b", "Å", "\u200b", "x\0y", "Wen Yu", " Wen ", "Wen"]
WORDS = [*SPELLINGS, "İSTANBUL", "ıstanbul", "STRAẞE", "strasse", "zoe\u0301", "ｆｉｒｅ", "ΣΊΣΥΦΟΣ", "ǆ", "K",
         "the", "'s", "es", "的", "苏瑶的", "\r\n", "\r", "\n", ",", "x\0y", "shens", "shenzhen's", "a.bc", "[x]y"]
SHARED = "the envoy"  # an alias on 30 cards


def _text(rng: random.Random) -> str:
    return "".join(w + rng.choice(["", " ", "\n", ", "]) for w in rng.choices(WORDS, k=rng.randint(0, 14)))


def _from_scratch(cards: dict[str, Keyed], texts: dict[int, str]) -> dict[int, frozenset[str]]:
    matcher = Matcher.build(list(cards.values()))
    return {key: bridgenames.named(matcher, text) for key, text in texts.items()}


def _edit(rng: random.Random, cards: dict[str, Keyed], history: dict[str, list[Keyed]]) -> dict[str, Keyed]:
    out = dict(cards)
    card = rng.choice(sorted(out))
    what = rng.choice(["name", "alias", "back", "remove", "add", "shared"])
    if what == "name":
        out[card] = Keyed(card, rng.choice(SPELLINGS), out[card].aliases)
    elif what == "alias":
        out[card] = Keyed(card, out[card].name, (*out[card].aliases[-1:], rng.choice(SPELLINGS)))
    elif what == "back" and history.get(card):  # renamed back to a spelling it had before
        out[card] = rng.choice(history[card])
    elif what == "remove":
        del out[card]
    elif what == "add":
        new = f"n{rng.randrange(40)}"
        out[new] = Keyed(new, rng.choice(SPELLINGS), tuple(rng.sample(SPELLINGS, 2)))
    else:  # the shared alias taken off or put back on a card
        aliases = out[card].aliases
        out[card] = Keyed(card, out[card].name, tuple(a for a in aliases if a != SHARED) if SHARED in aliases
                          else (*aliases, SHARED))
    for c, k in cards.items():
        history.setdefault(c, []).append(k)
    return out


def test_hostile_spellings_rematched_for_the_changed_cards_equal_a_match_from_scratch() -> None:
    """Incremental names (rematched) and a question's names (Matchers) equal a from-scratch match whatever
    the cards are called: pattern-like, blank, one CJK character, names inside names, Unicode folds that
    change lengths, a NUL; a card renamed back and forth; one alias on 30 cards."""
    rng = random.Random(6)
    for _ in range(6):
        texts = {i: _text(rng) for i in range(30)}
        texts[30] = "Σ" * 3 + " " + SHARED.upper() + " " + "x" * 5000  # a long one
        folded = bridgenames.Folded()
        for i, t in texts.items():
            folded.add(i, folded_text(t))
        cards = {f"c{i}": Keyed(f"c{i}", rng.choice(SPELLINGS), (SHARED,) if i < 30 else ()) for i in range(34)}
        names = _from_scratch(cards, texts)
        matchers = bridgenames.Matchers.of(cards.values())
        history: dict[str, list[Keyed]] = {}
        for _ in range(14):
            after = _edit(rng, cards, history)
            last = bridgenames.spelled(cards.values())
            gone = bridgenames.changed(last, bridgenames.spelled(after.values()))
            cards = after
            matchers, small = matchers.changed(after.values(), gone)
            names, _ = bridgenames.rematched(last, gone, small, names, folded,
                                             lambda keys: [(k, texts[k]) for k in keys])
            scratch = _from_scratch(after, texts)
            assert names == scratch
            assert {k: matchers.named(t) for k, t in texts.items()} == scratch


# ---- the name bridge in a bank: what it kept equals what it makes from nothing ---------------------------

QUERIES = ["苏瑶晚上住在哪里？", "what does Su Yao keep hidden in her sleeve?", "林默的伤", "Lin Mo and the envoy",
           "Maren", "nothing named here"]


def _checked(compared: list[int]) -> Any:
    """`bridgebank.evidence`, checked against the evidence a bridge made from nothing gives (the cards'
    generations, the memories' names and folded texts, the bridge, all forgotten for that call)."""
    real = bridgebank.evidence

    def evidence(index: Any, copy: Any, text: str) -> Any:
        got = real(index, copy, text)
        state = catalog(index).memo("recall.bridge", kept=1)
        kept_state = dict(state)
        kept = {k: index.caches.pop(k) for k in [k for k in index.caches if str(k).startswith("recall.bridge")]}
        state.clear()
        try:
            fresh = real(index, copy, text)
        finally:
            state.clear()
            state.update(kept_state)
            for k in [k for k in index.caches if str(k).startswith("recall.bridge")]:
                del index.caches[k]
            index.caches.update(kept)
        assert (got is None) == (fresh is None), text
        if got is not None:
            assert np.array_equal(got, fresh), text
            compared[0] += 1
        return got

    return evidence


def test_the_bridge_kept_across_card_and_memory_edits_equals_one_made_from_nothing(
        sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card's alias renamed and back, a card switched off (include: never), a memory edited, deleted, a card
    removed, a second card taking the same alias, a generation of the cards no question saw: at each step the
    evidence the kept bridge gives is the evidence of one made from nothing."""
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.test_bridge:load")
    compared = [0]
    monkeypatch.setattr(bridgebank, "evidence", _checked(compared))
    bank = membank.open(sample)
    chars = sample / ".writenow" / "characters"
    su = chars / "su-yao.md"

    def edit(path: Path, before: str, after: str) -> None:
        text = path.read_text("utf-8")
        assert before in text
        path.write_text(text.replace(before, after), "utf-8")

    def asked() -> None:
        bank.sync()
        filled(bank)
        for query in QUERIES:
            bank.preview(query_text=query)

    try:
        ids = [bank.create_memory(type_="fact", scope="project", content=t)["id"] for t in (
            "苏瑶把一封密信缝在袖口的夹层里。", "Su Yao lodges above the chandler's shop.", "林默在第五章左臂受了刀伤。",
            "The envoy watched Lin Mo from the quay.", "马伦的父亲是个老水手。", "Maren Voss keeps the light.")]
        asked()
        steps: list[Any] = [
            lambda: edit(su, "[Su Yao, the envoy]", "[Su-Yao, the envoy]"),
            lambda: edit(su, "[Su-Yao, the envoy]", "[Su Yao, the envoy]"),  # renamed back
            lambda: edit(su, "include: auto", "include: never"),  # switched off: still a name
            lambda: bank.update_memory(ids[3], {"content": "Nobody watched Lin Mo; Su Yao slept."}),
            lambda: bank.delete_memory(ids[0]),
            lambda: (chars / "lin-mo.md").unlink(),  # a card removed
            lambda: (chars / "envoy-two.md").write_text(
                "---\nname: 第二使者\nkind: character\naliases: [the envoy]\n---\nAnother envoy.\n", "utf-8"),
        ]
        for step in steps:
            step()
            asked()
        edit(su, "[Su Yao, the envoy]", "[苏, the envoy]")  # one CJK character, and a generation no question saw
        bank.sync()
        edit(su, "[苏, the envoy]", "[Su Yao, 瑶]")
        bank.create_memory(type_="fact", scope="project", content="瑶 and Su Yao, once more.")
        asked()
        assert compared[0] >= 10
    finally:
        bank.close()


def test_two_threads_asking_while_a_card_is_saved_find_what_a_bridge_made_from_nothing_finds(
        sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.test_bridge:load")
    compared = [0]
    monkeypatch.setattr(bridgebank, "evidence", _checked(compared))
    bank = membank.open(sample)
    su = sample / ".writenow" / "characters" / "su-yao.md"
    failed: list[BaseException] = []
    stop = threading.Event()

    def asking() -> None:
        try:
            while not stop.is_set():
                for query in QUERIES[:4]:
                    bank.preview(query_text=query)
        except BaseException as e:  # noqa: BLE001 (reported below)
            failed.append(e)

    try:
        for t in ("苏瑶把一封密信缝在袖口的夹层里。", "Su Yao lodges above the chandler's shop.", "The envoy waits."):
            bank.create_memory(type_="fact", scope="project", content=t)
        bank.sync()
        filled(bank)
        threads = [threading.Thread(target=asking) for _ in range(2)]
        for t in threads:
            t.start()
        for i in range(8):
            text = su.read_text("utf-8")
            su.write_text(text.replace("[Su Yao, the envoy]", "[Su-Yao]") if i % 2 == 0
                          else text.replace("[Su-Yao]", "[Su Yao, the envoy]"), "utf-8")
            bank.sync()
            bank.create_memory(type_="fact", scope="project", content=f"Su Yao, entry {i}. 苏瑶。")
        stop.set()
        for t in threads:
            t.join()
        assert not failed, failed
        filled(bank)
        for query in QUERIES[:4]:
            bank.preview(query_text=query)
        assert compared[0] >= 4
    finally:
        stop.set()
        bank.close()


def test_a_memory_read_by_an_older_view_while_a_card_is_renamed_is_matched_against_the_new_name(
        sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two read threads (the sidecar's: a snapshot each, no lock): A, on the view before a card's alias was
    added, reads a memory saved since (its names by the old cards) while B, on the view after, matches the
    memories again for that alias. The memory names the card at the next question, as a bridge made from
    nothing says."""
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.test_bridge:load")
    compared = [0]
    checked = _checked(compared)
    armed, go_a, a_done, a_in = threading.Event(), threading.Event(), threading.Event(), threading.Event()
    real_evidence, real_rematched = bridgebank.evidence, bridgenames.rematched

    def evidence(index: Any, copy: Any, text: str) -> Any:
        if armed.is_set() and threading.current_thread().name == "A":
            a_in.set()
            assert go_a.wait(20)
            try:
                return real_evidence(index, copy, text)
            finally:
                a_done.set()
        if threading.current_thread().name == "A":  # A's warm-up, before the race is set up
            return real_evidence(index, copy, text)
        return checked(index, copy, text)  # B's (the gates hold A still while B checks)

    def rematched(*args: Any) -> Any:  # in B, its copy of the memories' names taken: A reads now
        if armed.is_set():
            go_a.set()
            assert a_done.wait(20)
        return real_rematched(*args)

    monkeypatch.setattr(bridgebank, "evidence", evidence)
    monkeypatch.setattr(bridgenames, "rematched", rematched)
    bank = membank.open(sample)
    su = sample / ".writenow" / "characters" / "su-yao.md"
    jobs: dict[str, queue.Queue[Any]] = {"A": queue.Queue(), "B": queue.Queue()}
    failed: list[BaseException] = []

    def worker(name: str) -> None:
        while (query := jobs[name].get()) is not None:
            try:
                with reading():  # a connection and snapshot of its own, as the sidecar's read threads
                    bank.preview(query_text=query[0])
            except BaseException as e:  # noqa: BLE001 (reported below)
                failed.append(e)
            query[1].set()

    def ask(name: str, query: str) -> threading.Event:
        done = threading.Event()
        jobs[name].put((query, done))
        return done

    threads = [threading.Thread(target=worker, args=(n,), name=n) for n in jobs]
    for t in threads:
        t.start()
    try:
        for t in ("苏瑶把一封密信缝在袖口的夹层里。", "Su Yao lodges above the chandler's shop.", "The quay is quiet."):
            bank.create_memory(type_="fact", scope="project", content=t)
        filled(bank)
        assert ask("A", QUERIES[0]).wait(20) and ask("B", QUERIES[0]).wait(20)  # their connections open
        bank.preview(query_text=QUERIES[1])  # the cards' first generation, its bridge
        bank.create_memory(type_="fact", scope="project", content="Envoy-Su sleeps by day.")  # names none yet
        filled(bank)
        armed.set()
        a = ask("A", QUERIES[1])
        assert a_in.wait(20)  # A stands on the view before the alias
        su.write_text(su.read_text("utf-8").replace("[Su Yao, the envoy]", "[Su Yao, the envoy, Envoy-Su]"), "utf-8")
        bank.sync()
        filled(bank)
        assert ask("B", "Where does Envoy-Su sleep?").wait(30) and a.wait(30)
        assert go_a.is_set() and not failed, failed
        armed.clear()
        bank.preview(query_text="Where does Envoy-Su sleep?")  # checked against a bridge made from nothing
        assert compared[0] >= 2
    finally:
        go_a.set()
        a_done.set()
        for q in jobs.values():
            q.put(None)
        for t in threads:
            t.join(30)
        bank.close()
