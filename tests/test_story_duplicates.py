"""Near-duplicates (issue 33.6): `story:duplicates` and `membank doctor`'s suggestions: two cards answering
to one name or alias, two facts saying nearly the same thing, each with both sources; cards and facts that
differ are not."""

from __future__ import annotations

import copy
import threading
from pathlib import Path
from typing import Any

from membank.domains.story.duplicates import shared_names, similar_texts

from .helpers import membank
from .storykit import fits, ok, story

MORE = {
    ".writenow/characters/daiyu-2.md": "---\nname: 颦儿\nkind: character\naliases: [黛玉]\n---\n又一张卡。\n",
    ".writenow/memories/facts/a.md": "---\ntype: fact\n---\n林黛玉住在荣国府的碧纱橱里，由贾母照看。\n",
    ".writenow/memories/facts/b.md": "---\ntype: fact\n---\n林黛玉住在荣国府的碧纱橱里，由贾母照看着。\n",
    ".writenow/memories/facts/c.md": "---\ntype: fact\n---\n薛蟠打死冯渊，买走了英莲。\n",
}


def test_shared_names_and_similar_texts() -> None:
    assert shared_names([("a", ["林黛玉", "黛玉"]), ("b", ["黛玉 ", "颦儿"]), ("c", ["宝玉"])]) == [("黛玉", ("a", "b"))]
    assert shared_names([("a", ["Daiyu"]), ("b", ["daiyu"])]) == [("Daiyu", ("a", "b"))]  # case folded
    texts = {"x": "林黛玉住在荣国府的碧纱橱里，由贾母照看。", "y": "林黛玉住在荣国府的碧纱橱里，由贾母照看着。",
             "z": "薛蟠打死冯渊，买走了英莲。"}
    assert [(a, b) for a, b, _ in similar_texts(texts)] == [("x", "y")]
    edited = {"a": "Maren keeps the light at the Three Teeth and never leaves it.",
              "b": "Old Maren keeps the light at the Three Teeth and never leaves it.", "c": "Maren sleeps."}
    assert [(a, b) for a, b, _ in similar_texts(edited)] == [("a", "b")]  # the same end, a word added in front


def test_near_duplicates_with_both_sources(tmp_path: Path) -> None:
    bank = story(tmp_path, MORE)
    try:
        fits("story:duplicates", ok(bank, "story:duplicates"))
        found = ok(bank, "story:duplicates")["items"]
        card = next(i for i in found if i["kind"] == "card")
        assert card["name"] == "黛玉" and card["ids"] == ["characters/daiyu-2", "characters/lin-daiyu"]
        assert card["sources"] == [{"source": ".writenow/characters/daiyu-2.md", "line": 2},
                                   {"source": ".writenow/characters/lin-daiyu.md", "line": 2}]
        facts = [i for i in found if i["kind"] == "fact"]
        assert [f["sources"] for f in facts] == [[{"source": ".writenow/memories/facts/a.md", "line": 4},
                                                  {"source": ".writenow/memories/facts/b.md", "line": 4}]]
        assert len(found) == 2  # 贾宝玉, 贾母 and fact c have no twin
        assert not any(d["message"].startswith("near-duplicate") for d in bank.diagnostics()["items"])
    finally:
        bank.close()


def test_doctor_suggests_the_merges(tmp_path: Path, home: Path) -> None:
    story(tmp_path, MORE).close()
    shown = membank("doctor", str(tmp_path / "hlm"), cwd=tmp_path / "hlm", home=home)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "merge?" in shown.stdout and "characters/daiyu-2.md:2" in shown.stdout and "facts/b.md:4" in shown.stdout


SAME = {  # (issue 33.6) written twice in other words: the trigram rule misses each pair
    ".writenow/memories/facts/d1.md": "---\ntype: fact\n---\n林黛玉自幼体弱多病，常年服用人参养荣丸，身子单薄。\n",
    ".writenow/memories/facts/d2.md": "---\ntype: fact\n---\n林黛玉自幼十分体弱多病，常年服用人参养荣丸，身子单薄。\n",
    ".writenow/memories/facts/d3.md": "---\ntype: fact\n---\n林黛玉自幼体弱多病，后来病逝于潇湘馆。\n",  # a look-alike
    ".writenow/memories/facts/y1.md":
        "---\ntype: fact\n---\nYe Zhiqiu hides that her father is the harbour magistrate.\n",
    ".writenow/memories/facts/y2.md":
        "---\ntype: fact\n---\nYe Zhiqiu keeps secret that the harbour magistrate is her father.\n",
    ".writenow/memories/facts/y3.md": "---\ntype: fact\n---\nYe Zhiqiu's father is a fisherman who died at sea.\n",
    ".writenow/memories/facts/e1.md": "---\ntype: fact\n---\n🙂🙂\n",  # no known word: a zero vector, never stored
    ".writenow/memories/facts/e2.md": "---\ntype: fact\n---\n🙂🙂🙂\n",
}


def test_close_pairs_and_centring() -> None:
    import numpy as np

    from membank.domains.story.meaning import centred, close_pairs, groups, merged

    unit = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]], np.float32)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-9)
    assert close_pairs(unit, 0.95) == [(0, 1, 0.99)]  # rounded to 2 places, as a Python float
    assert close_pairs(unit, 0.95, block=2) == close_pairs(unit, 0.95)  # blocks give the same pairs
    assert close_pairs(unit[:1], 0.5) == [] and close_pairs(unit, 1.01) == []
    # a language's mean removed: two Chinese rows alike only in what every Chinese row shares are not a pair
    zh_rows = np.array([[0.9, 0.3, 0], [0.9, -0.3, 0], [0.9, 0, 0.3], [0.9, 0, -0.3]] * 2, np.float32)
    zh_rows /= np.linalg.norm(zh_rows, axis=1, keepdims=True)
    assert (zh_rows @ zh_rows.T)[0, 2] > 0.8
    flat = centred(zh_rows, np.ones(8, bool))
    assert abs(float(flat[0] @ flat[2])) < 1e-5 and float(flat[0] @ flat[4]) > 0.999
    assert not centred(unit, np.zeros(5, bool))[4].any()  # no direction stays none
    rng = np.random.default_rng(7)
    base = rng.standard_normal((200, 16)).astype(np.float32)
    twins = np.vstack([base, base + 0.05 * rng.standard_normal(base.shape).astype(np.float32)])
    twins /= np.linalg.norm(twins, axis=1, keepdims=True)
    together = [set(g.tolist()) for g in groups(twins)]  # ~20 groups of 400 rows, not one
    assert len(together) > 5 and all(any({i, i + 200} <= g for g in together) for i in range(200))
    assert merged([("b", "a", 0.9)], [("a", "b", 0.95), ("a", "c", 0.9)]) == \
        [("a", "b", 0.9, "words"), ("a", "c", 0.9, "meaning")]


def test_language_of_a_fact_as_recall_tells_it() -> None:
    from membank.domains.story.meaning import is_chinese
    from membank.kernel.text import script_language

    for text in ("林黛玉自幼体弱多病", "Lin Daiyu 林黛玉 is sick", "abc 林", "", "123", "かな漢字 abc", "Ｆｕｌｌ 林黛玉"):
        assert is_chinese(text) == (script_language(text) == "zh"), text


def test_facts_the_same_by_meaning_in_a_bilingual_bank(tmp_path: Path, home: Path) -> None:
    bank = story(tmp_path, SAME)
    try:
        found = [i for i in ok(bank, "story:duplicates")["items"] if i["kind"] == "fact"]
        fits("story:duplicates", ok(bank, "story:duplicates"))
        pairs = {tuple(s["source"].rsplit("/", 1)[1] for s in f["sources"]): f for f in found}
        assert set(pairs) == {("d1.md", "d2.md"), ("y1.md", "y2.md")}, pairs  # not the look-alikes d3, y3
        assert all(f["by"] == "meaning" and "by meaning" in f["message"] and f["score"] >= 0.78 for f in found)
    finally:
        bank.close()
    shown = membank("doctor", str(tmp_path / "hlm"), cwd=tmp_path / "hlm", home=home)
    assert "facts/d2.md:4" in shown.stdout and "by meaning" in shown.stdout, shown.stdout


def test_a_fact_is_cited_at_its_text(tmp_path: Path) -> None:
    """A fact's source line is the line its text starts on, below however much front matter."""
    long = "---\ntype: fact\ntags: [a, b]\nconfidence: 0.9\n---\n\n林黛玉住在荣国府的碧纱橱里，由贾母照看。\n"
    bank = story(tmp_path, {**MORE, ".writenow/memories/facts/a.md": long.replace("\n", "\r\n")})
    try:
        fact = next(i for i in ok(bank, "story:duplicates")["items"] if i["kind"] == "fact")
        assert fact["sources"] == [{"source": ".writenow/memories/facts/a.md", "line": 7},
                                   {"source": ".writenow/memories/facts/b.md", "line": 4}]
        (tmp_path / "hlm" / ".writenow" / "memories" / "facts" / "a.md").unlink()  # gone, not yet synced
        from membank.domains.story.duplicatefiles import text_line
        assert text_line(bank, ".writenow/memories/facts/a.md") == 1 and text_line(bank, "chapters/x.md") == 1
    finally:
        bank.close()


def test_a_write_proceeds_while_duplicates_runs(tmp_path: Path, monkeypatch: Any) -> None:
    """`story:duplicates` reads in a snapshot of its own, in Python and the CLI too: a write of another
    thread is not held up by its computation (it held the writer's lock for 0.5-0.8 s at 3,000 facts)."""
    from membank.domains.story import meaning

    bank = story(tmp_path, SAME)
    inside, written = threading.Event(), threading.Event()
    real = meaning.close_pairs

    waited: list[bool] = []

    def held(*args: Any, **kwargs: Any) -> Any:
        inside.set()
        waited.append(written.wait(30))  # without the fix the write below waits for this read: False, no hang
        return real(*args, **kwargs)

    monkeypatch.setattr(meaning, "close_pairs", held)
    answers: list[Any] = []
    reader = threading.Thread(target=lambda: answers.append(bank.call("story:duplicates", {})))
    try:
        reader.start()
        assert inside.wait(60)
        made = bank.call("memory:create", {"type": "fact", "scope": "project", "content": "薛蟠打死冯渊。"})
        written.set()
        reader.join()
        assert made["ok"] and answers[0]["ok"] and all(waited), (made, answers, waited)
        pairs = {tuple(s["source"].rsplit("/", 1)[1] for s in f["sources"]) for f in answers[0]["data"]["items"]}
        assert ("d1.md", "d2.md") in pairs  # the snapshot's answer, whole
    finally:
        written.set()
        reader.join()
        bank.close()


TWINS = {  # (issue 33.6) one physician written twice under two names, and a physician who is someone else
    ".writenow/characters/ye-zhiqiu.md":
        "---\nname: Ye Zhiqiu\nkind: character\naliases: [叶知秋, Doctor Ye]\nsummary: Physician from Hundred Herbs"
        " Valley working in Egret Harbour; Murong Lie's daughter, which she hides.\n---\nQuick, dry and exact. She"
        " counts everything: pulses, coins, days. She will treat anyone who comes to the Hall of Benevolence,"
        " Company marines included, and she has never told anyone why she left the Valley.\n",
    ".writenow/characters/zhiqiu-ye.md":
        "---\nname: Zhiqiu Ye\nkind: character\nsummary: A doctor from Hundred Herbs Valley practising in Egret"
        " Harbour; secretly Murong Lie's daughter.\n---\nPrecise, dry, quick. She counts pulses, coins and days."
        " She treats whoever walks into the Hall of Benevolence, even Company marines, and never says why she"
        " left the Valley.\n",
    ".writenow/characters/doctor-lan.md":
        "---\nname: Doctor Lan\nkind: character\nsummary: An old physician of Hundred Herbs Valley who taught Ye"
        " Zhiqiu and still writes to her.\n---\nSlow, kind and forgetful; he keeps his needles in a case carved"
        " with cranes.\n",
    **{f".writenow/characters/stub-{n}.md": f"---\nname: Stub {n}\nkind: character\n---\nAge: unknown. Height:"
       " average. Hair: brown.\n" for n in range(3)},  # a template's lines: nothing of their own
    ".writenow/characters/smile.md": "---\nname: Smile\nkind: character\n---\n🙂🙂🙂🙂🙂🙂🙂🙂. 🙂🙂🙂🙂🙂🙂🙂🙂!\n",
    ".writenow/characters/grin.md": "---\nname: Grin\nkind: character\n---\n🙂🙂🙂🙂🙂🙂🙂🙂. 🙂🙂🙂🙂🙂🙂🙂🙂!\n",
}


def test_cover_of_sentences() -> None:
    import numpy as np

    from membank.domains.story.meaning import cover, sentences, untemplated

    assert sentences("Dead. He keeps his promises. 他十七岁，爱吃桂花糕。练剑总是偷懒的。🙂🙂🙂🙂🙂🙂🙂. 1234567.") == \
        ["He keeps his promises.", "他十七岁，爱吃桂花糕。", "练剑总是偷懒的。"]  # too few letters to match
    assert untemplated([["Age: unknown.", "A"], ["age:  Unknown.", "B"], ["Age: unknown."], ["A"]]) == \
        [["A"], ["B"], [], ["A"]]  # in three cards: a template's
    a = np.eye(3, dtype=np.float32)
    assert cover(a[:2], a) == 1.0 and cover(a, a[:2]) == 1.0  # the shorter card is said again whole
    assert cover(a[:2], a[1:]) == 0.5 and cover(a[1:], a[:2]) == 0.5  # the same either way round
    assert cover(a[:0], a) == 0.0


def test_cards_the_same_by_meaning(tmp_path: Path, home: Path) -> None:
    bank = story(tmp_path, TWINS)
    try:
        answer = ok(bank, "story:duplicates")
        fits("story:duplicates", answer)
        cards = [i for i in answer["items"] if i["kind"] == "card" and i["by"] == "meaning"]
        assert [c["ids"] for c in cards] == [["characters/ye-zhiqiu", "characters/zhiqiu-ye"]], cards
        assert cards[0]["sources"] == [{"source": ".writenow/characters/ye-zhiqiu.md", "line": 5},
                                       {"source": ".writenow/characters/zhiqiu-ye.md", "line": 4}]
        assert cards[0]["score"] >= 0.8 and cards[0]["name"] is None  # not Doctor Lan, who taught her
    finally:
        bank.close()
    for command in ("duplicates", "doctor"):
        shown = membank(command, cwd=tmp_path / "hlm", home=home)
        assert "zhiqiu-ye.md:4" in shown.stdout and "say the same things" in shown.stdout, shown.stdout
        assert "doctor-lan.md" not in shown.stdout and "smile.md" not in shown.stdout
    from .sidecar import Sidecar

    server = Sidecar("--project", str(tmp_path / "hlm"), home=home)
    try:
        served = server.ok("story:duplicates", {})
        assert [i["ids"] for i in served["items"] if i["by"] == "meaning"] == [[c["ids"] for c in cards][0]]
        assert server.close() == 0
    finally:
        server.kill()


def _by_meaning(bank: Any, calls: list[int]) -> list[tuple[list[str], list[str], float]]:
    """The cards suggested by meaning (ids, sources, score), asserting the call loaded no model."""
    before = len(calls)
    found = [(i["ids"], [f"{s['source']}:{s['line']}" for s in i["sources"]], i["score"])
             for i in ok(bank, "story:duplicates")["items"] if i["kind"] == "card" and i["by"] == "meaning"]
    assert len(calls) == before, "story:duplicates asked for the model"
    return found


def _counting(bank: Any, monkeypatch: Any) -> list[int]:
    calls: list[int] = []
    real = bank.embedder
    monkeypatch.setattr(bank, "embedder", lambda: calls.append(1) or real())
    return calls


def test_cards_kept_in_step_without_a_model(tmp_path: Path, monkeypatch: Any) -> None:
    """Each card's sentence vectors are kept in the index as it is embedded: story:duplicates loads no
    model, and a card edited, renamed or deleted changes its suggestion at the next sync."""
    bank = story(tmp_path, TWINS)
    calls = _counting(bank, monkeypatch)
    cards = tmp_path / "hlm" / ".writenow" / "characters"
    twin = (cards / "zhiqiu-ye.md").read_text("utf-8")
    try:
        assert [ids for ids, _, _ in _by_meaning(bank, calls)] == [["characters/ye-zhiqiu", "characters/zhiqiu-ye"]]
        (cards / "zhiqiu-ye.md").write_text("---\nname: Zhiqiu Ye\nkind: character\nsummary: A smuggler who"
                                            " runs salt past the customs boats at night.\n---\nLoud, generous and"
                                            " always in debt to someone.\n", "utf-8")
        assert ok(bank, "index:sync")["updated"] == 1 and calls  # the sync embeds the card (and its sentences)
        assert _by_meaning(bank, calls) == []  # edited away
        (cards / "zhiqiu-ye.md").unlink()
        (cards / "zq.md").write_text(twin, "utf-8")  # back, under another file name
        ok(bank, "index:sync")
        found = _by_meaning(bank, calls)
        assert [(ids, sources[1]) for ids, sources, _ in found] == \
            [(["characters/ye-zhiqiu", "characters/zq"], ".writenow/characters/zq.md:4")]
        (cards / "ye-zhiqiu.md").unlink()
        ok(bank, "index:sync")
        assert _by_meaning(bank, calls) == []  # deleted: gone from the suggestions
    finally:
        bank.close()


def test_kept_sentences_answer_as_encoding_on_the_fly(tmp_path: Path, monkeypatch: Any) -> None:
    """The kept vectors give the answer the model gives on the fly (an index without them: a card embedded
    before they were kept is said by the model), and they come back with the index: an index made before
    them re-reads its cards at the next sync; `index --rebuild` (a large sync's embedding beside its writes
    too); the index deleted."""
    from membank.domains.indexing import intakes

    import membank

    bank = story(tmp_path, TWINS)
    calls = _counting(bank, monkeypatch)
    try:
        kept = _by_meaning(bank, calls)
        assert kept and kept[0][2] >= 0.8
        with bank.index.lock:  # a card rewritten without its rows (an older membank's sync): not read
            bank.index.db.execute("UPDATE entries SET hash = 'x' || hash WHERE id = 'characters/zhiqiu-ye'")
        before = len(calls)
        assert [(i["ids"], i["score"]) for i in ok(bank, "story:duplicates")["items"] if i["by"] == "meaning"
                and i["kind"] == "card"] == [(kept[0][0], kept[0][2])] and len(calls) > before  # said on the fly
        with bank.index.lock:  # as an index made before the table, opened without a sync
            bank.index.db.execute("DELETE FROM story_sentences")
        before = len(calls)
        assert [(i["ids"], i["score"]) for i in ok(bank, "story:duplicates")["items"] if i["by"] == "meaning"
                and i["kind"] == "card"] == [(kept[0][0], kept[0][2])] and len(calls) > before  # said on the fly
        with bank.index.lock:
            bank.index.db.execute("DROP TABLE story_sentences; DELETE FROM meta WHERE key = 'schema:story.sentences'")
    finally:
        bank.close()
    root = tmp_path / "hlm"
    bank = membank.open(root)  # the table made again, the cards forgotten and read again by the sync
    calls = _counting(bank, monkeypatch)
    try:
        assert _by_meaning(bank, calls) == kept
        monkeypatch.setattr(intakes, "PARALLEL_FROM", 1)  # the embedding beside a large sync's writes
        ok(bank, "index:sync", rebuild=True)
        assert _by_meaning(bank, calls) == kept
    finally:
        bank.close()
    import shutil

    shutil.rmtree(root / ".writenow" / ".index")
    bank = membank.open(root)
    calls = _counting(bank, monkeypatch)
    try:
        assert _by_meaning(bank, calls) == kept
    finally:
        bank.close()


def test_a_card_of_thousands_of_sentences_is_bounded() -> None:
    """A card's first CARD_SENTENCES sentences are compared and kept: two 300,000-character twins of 30,000
    sentences each made a 3.6 GB product (9 s) and 30 MB of kept vectors each."""
    from membank.domains.story.cardsentences import card_sentences
    from membank.domains.story.meaning import CARD_SENTENCES

    said = card_sentences({"summary": "A physician of the Valley.", "content": "林黛玉自幼体弱多病。" * 30000})
    assert len(said) == CARD_SENTENCES and said[:2] == ["A physician of the Valley.", "林黛玉自幼体弱多病。"]


def test_a_damaged_row_fails_nothing(tmp_path: Path) -> None:
    """Kept vectors that do not fit their sentences (a damaged index) leave that card out; doctor answers."""
    bank = story(tmp_path, TWINS)
    try:
        with bank.index.lock:
            bank.index.db.execute("UPDATE story_sentences SET vectors = x'0102'")
        assert ok(bank, "story:duplicates")["total"] >= 0
    finally:
        bank.close()


def test_a_card_switched_off_is_not_suggested(tmp_path: Path) -> None:
    """A twin with `include: never`, or in a book switched off (its book.md `include: never`), takes no part in
    the story (context.md, Books): it is not suggested by meaning; switched on again, it is."""
    bank = story(tmp_path, TWINS)
    cards = tmp_path / "hlm" / ".writenow" / "characters"
    twin = (cards / "zhiqiu-ye.md").read_text("utf-8")
    pair = [["characters/ye-zhiqiu", "characters/zhiqiu-ye"]]

    def meaning() -> list[list[str]]:
        return [i["ids"] for i in ok(bank, "story:duplicates")["items"] if i["kind"] == "card" and i["by"] == "meaning"]
    try:
        assert meaning() == pair
        (cards / "zhiqiu-ye.md").write_text(twin.replace("kind: character\n", "kind: character\ninclude: never\n", 1),
                                            "utf-8")
        ok(bank, "index:sync")
        assert meaning() == []
        (cards / "zhiqiu-ye.md").unlink()
        book = tmp_path / "hlm" / ".writenow" / "world" / "drafts"
        book.mkdir(parents=True)
        (book / "book.md").write_text("---\nname: Old drafts\ninclude: never\n---\n", "utf-8")
        (book / "zhiqiu-ye.md").write_text(twin, "utf-8")
        ok(bank, "index:sync")
        assert meaning() == []
        (book / "book.md").write_text("---\nname: Old drafts\n---\n", "utf-8")
        ok(bank, "index:sync")
        assert meaning() == [["characters/ye-zhiqiu", "world/drafts/zhiqiu-ye"]]
    finally:
        bank.close()


def test_changing_an_answer_changes_no_later_one(tmp_path: Path) -> None:
    bank = story(tmp_path, MORE)
    try:
        first = ok(bank, "story:duplicates")
        kept = copy.deepcopy(first)
        for item in first["items"]:  # the caller's own, to the lists inside
            item["ids"].clear()
            item["sources"].clear()
        assert ok(bank, "story:duplicates") == kept
    finally:
        bank.close()


def test_a_global_fact_is_cited_at_its_text(tmp_path: Path, home: Path) -> None:
    for name, text in (("a", MORE[".writenow/memories/facts/a.md"]), ("b", MORE[".writenow/memories/facts/b.md"])):
        (home / "memories" / "facts").mkdir(parents=True, exist_ok=True)
        (home / "memories" / "facts" / f"{name}.md").write_text(text, "utf-8")
    bank = story(tmp_path)
    try:
        facts = [i for i in ok(bank, "story:duplicates")["items"] if i["kind"] == "fact"]
        assert [f["sources"] for f in facts] == [[{"source": "global:memories/facts/a.md", "line": 4},
                                                  {"source": "global:memories/facts/b.md", "line": 4}]]
    finally:
        bank.close()


def test_a_row_of_another_width_fails_nothing(tmp_path: Path) -> None:
    """Kept vectors that divide into rows of another width than the index's (a damaged index) leave that card
    out, as every other damaged row: the other cards are still compared, doctor answers."""
    bank = story(tmp_path, TWINS)
    try:
        with bank.index.lock:
            bank.index.db.execute("UPDATE story_sentences SET vectors = substr(vectors, 1, length(vectors) / 2)"
                                  " WHERE entry = (SELECT rowid FROM entries WHERE id = 'characters/doctor-lan')")
        found = ok(bank, "story:duplicates")
        assert [i["ids"] for i in found["items"] if i["by"] == "meaning"] == \
            [["characters/ye-zhiqiu", "characters/zhiqiu-ye"]]
    finally:
        bank.close()


def test_a_card_said_on_the_fly_by_another_model_fails_nothing(tmp_path: Path, monkeypatch: Any) -> None:
    """Settings that name another model than the index's (EMBEDDING_DIM_MISMATCH until `index --rebuild`):
    a card with no kept sentences is not said by it beside the kept rows of the index's model."""
    import numpy as np

    bank = story(tmp_path, TWINS)

    class Other:  # another model, of another width
        name, dim = "other", 7

        def encode(self, texts: list[str]) -> Any:
            return np.ones((len(texts), 7), np.float32) / np.sqrt(7)

    try:
        with bank.index.lock:  # a card rewritten without its rows (an older membank's sync)
            bank.index.db.execute("UPDATE entries SET hash = 'x' || hash WHERE id = 'characters/zhiqiu-ye'")
        monkeypatch.setattr(bank, "embedder", lambda: Other())
        found = ok(bank, "story:duplicates")
        assert [i for i in found["items"] if i["by"] == "meaning" and i["kind"] == "card"] == []
    finally:
        bank.close()
