"""Cards and world entries by meaning (issue 35): the preview's search lists the characters and world entries a
query finds (with kind and source:line), and a card that asks for it (`match: meaning`, on the card or its
book) is activated in a prompt when the scanned text is close to its summary, in either language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from membank import Bank
from membank.domains.context.meaning import DEFAULT_MIN_SCORE, MEANING, centered_scores, chosen, scanned_text

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "cards"  # real cards nobody here wrote (README there)
CODING = "He asked the old programming teacher how to fix the bug in his Python code."
CODING_ZH = "她请教那位编程老师，怎么修好代码里的错误。"
UNRELATED = "The gulls went quiet over the harbour; the tide turned before dawn."


def _import_sensei(bank: Bank) -> None:
    envelope = bank.call("card:import", {"paths": [str(REAL / "default_CodingSensei.png"),
                                                   str(REAL / "default_FluxTheCat.png")]})
    assert envelope["ok"], envelope


def _card(sample: Path, rel: str, front: str, body: str = "") -> None:
    path = sample / ".writenow" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")


def _assemble(bank: Bank, selection: str) -> dict[str, Any]:
    envelope = bank.call("context:assemble", {"skillId": "rewrite", "documentText": selection,
                                              "selection": {"text": selection}})
    assert envelope["ok"], envelope
    return envelope["data"]  # type: ignore[no-any-return]


def _cards(data: dict[str, Any]) -> dict[str, Any]:
    return {i["id"]: i["reason"] for i in data["items"] if i["layer"] == 4 and i["kind"] in ("card", "state")}


def test_the_preview_finds_the_card_a_question_names_first(bank: Bank) -> None:
    _import_sensei(bank)
    found = bank.preview(query_text="Who is the Coding Sensei?")
    first = found["cards"][0]
    assert (first["id"], first["kind"], first["name"]) == ("characters/coding-sensei", "character", "Coding Sensei")
    assert first["source"] == ".writenow/characters/coding-sensei.md" and first["line"] == 2
    assert first["reason"]["rank"] == 1 and first["reason"]["score"]["vectorRank"] == 1
    assert all(i["id"] != first["id"] for i in found["items"])  # listed, never injected as a memory
    assert bank.preview()["cards"] == []  # no query, no search


def test_the_preview_finds_world_entries_and_leaves_unrelated_cards_out(bank: Bank) -> None:
    _import_sensei(bank)
    found = bank.preview(query_text="Who keeps the Saltmere light burning?")["cards"]
    assert found[0]["kind"] == "world" and found[0]["id"] == "world/saltmere-light"
    assert "characters/coding-sensei" not in [c["id"] for c in found]
    assert bank.preview(query_text="short sentences in a fight")["cards"] == []


def test_a_card_asking_for_meaning_is_activated_in_either_language(bank: Bank, sample: Path) -> None:
    _import_sensei(bank)
    assert "characters/coding-sensei" not in _cards(_assemble(bank, CODING))  # opt-in: words only by default
    card = sample / ".writenow" / "characters" / "coding-sensei.md"
    card.write_text(card.read_text(encoding="utf-8").replace("name: Coding Sensei\n",
                                                             "name: Coding Sensei\nmatch: meaning\n", 1), encoding="utf-8")
    bank.sync()
    for text in (CODING, CODING_ZH):
        reason = _cards(_assemble(bank, text))["characters/coding-sensei"]
        assert reason["reason"] == MEANING and reason["score"] >= reason["minScore"] == DEFAULT_MIN_SCORE
    assert "characters/coding-sensei" not in _cards(_assemble(bank, UNRELATED))
    assert "characters/flux-the-cat" not in _cards(_assemble(bank, CODING))  # it never asked


def test_meaning_comes_after_words_and_min_score_holds_it_back(bank: Bank, sample: Path) -> None:
    _import_sensei(bank)
    _card(sample, "characters/coding-sensei.md", "name: Coding Sensei\nmatch: meaning\nminScore: 0.99\n"
          "summary: assists the user with coding-related questions and example code")
    _card(sample, "characters/old-teacher.md", "name: Old Teacher\nmatch: meaning\n"
          "summary: teaches programming and fixes bugs in Python code")
    bank.sync()
    text = "Maren asked the old programming teacher how to fix the bug in his Python code."
    data = _assemble(bank, text)
    found = _cards(data)
    assert "characters/coding-sensei" not in found  # 0.99 is more than this text reaches
    assert list(found)[0] == "characters/maren-voss" and list(found)[-1] == "characters/old-teacher"  # words first
    assert found["characters/old-teacher"]["reason"] == MEANING
    assert [r.get("reason") for r in found.values()].count(MEANING) == 1
    again = _assemble(bank, text)
    assert [(i["id"], i["reason"]) for i in again["items"]] == [(i["id"], i["reason"]) for i in data["items"]]
    plain = _assemble(bank, UNRELATED)
    assert plain["stablePrefixHash"] == data["stablePrefixHash"]  # Layer 4 only: the prefix never moves


def test_a_book_asks_for_meaning_for_its_entries(bank: Bank, sample: Path) -> None:
    _card(sample, "world/lore/book.md", "name: Lore\nmatch: meaning")
    _card(sample, "world/lore/code-shrine.md", "name: The Shrine\nkind: place\n"
          "summary: where programmers pray for their Python code to compile without bugs")
    _card(sample, "world/lore/old-mill.md", "name: Old Mill\nkind: place\nmatch: words\n"
          "summary: a shrine for programmers where Python code is fixed")
    bank.sync()
    found = _cards(_assemble(bank, CODING))
    assert found["world/lore/code-shrine"]["reason"] == MEANING
    assert "world/lore/old-mill" not in found and "world/lore/book" not in found  # its own `match:` wins


def test_a_wrong_match_value_is_reported_where_it_is_written(bank: Bank, sample: Path) -> None:
    _card(sample, "characters/odd.md", "name: Odd\nmatch: meening\nminScore: 2")
    bank.sync()
    messages = [d for d in bank.call("index:diagnostics", {})["data"]["items"] if d["source"].endswith("odd.md")]
    assert any("`match` should be words or meaning" in d["message"] and d["line"] == 3 for d in messages)
    assert any("`minScore` should be a number from 0 to 1" in d["message"] and d["line"] == 4 for d in messages)


def test_meaning_ranks_by_score_then_name_and_skips_what_words_found() -> None:
    picked = chosen(["c", "b", "a", "d"], [0.5, 0.5000000001, 0.9, 0.2], {"a": None, "b": None, "c": None, "d": 0.1},
                    {"a": "Zed", "b": "Bea", "c": "Cy", "d": "Di"}, taken={"a"})
    assert picked == [("b", 0.5), ("c", 0.5), ("d", 0.2)]  # rounded: float noise never decides; then by name


def test_centering_takes_the_banks_common_direction_away() -> None:
    mean = np.array([1.0, 0.0, 0.0], np.float32)
    rows = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]], np.float32)
    scores = centered_scores(rows, np.array([1.0, 0.9, 0.0], np.float32), mean)
    assert scores[0] > 0.99 and abs(scores[1]) < 1e-6


def test_a_summary_that_embeds_to_nothing_is_never_close() -> None:
    # a card of only emoji (or an empty summary and a name the model lacks) is a zero row: less the mean,
    # it was the mean's opposite, and scored high against any text leaning away from the bank's mean
    mean = np.array([0.6, 0.0, 0.0], np.float32)
    rows = np.array([[0.0, 0.0, 0.0], [0.0, 1.0, 0.0]], np.float32)
    scores = centered_scores(rows, np.array([-0.8, 0.6, 0.0], np.float32), mean)
    assert scores[0] == 0.0 and scores[1] > 0.3 and not np.isnan(scores).any()


def test_a_card_with_nothing_to_compare_is_never_activated_by_meaning(bank: Bank, sample: Path) -> None:
    _card(sample, "characters/glyphs.md",  # only emoji: the model has no vector for it
          "name: \"\\U0001F525\\U0001F30A\"\nmatch: meaning\nminScore: 0\nsummary: \"\"")
    bank.sync()
    data = _assemble(bank, CODING)
    assert "characters/glyphs" not in _cards(data)


def test_the_cli_prints_the_card_above_the_memories(bank: Bank, sample: Path) -> None:
    from typer.testing import CliRunner

    from membank.shells.cli import app

    _import_sensei(bank)
    shown = CliRunner().invoke(app, ["preview", str(sample), "--query", "Who is the Coding Sensei?"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    card = next(n for n, line in enumerate(lines) if ".writenow/characters/coding-sensei.md:2" in line)
    assert lines[card].split()[:2] == ["1", "character"]
    assert card < next(n for n, line in enumerate(lines) if "injection preview" in line)


def test_the_query_is_the_selection_then_the_nearest_text_around_it() -> None:
    texts = {"selection": "SEL", "instruction": "INS", "before": "a" * 50 + "B" * 10, "after": "C" * 3 + "d" * 50}
    assert scanned_text(texts, 27) == "SEL\nINS\n" + "B" * 10 + "\n" + "C" * 3 + "d" * 7  # 7 + 20 around it
    assert scanned_text({"selection": "x" * 40, "before": "b"}, 10) == "x" * 10


def test_without_a_model_cards_are_found_by_their_words(bank: Bank) -> None:
    bank.update_embedding_settings({"model": "models/not-there"})
    found = bank.preview(query_text="Who keeps the Saltmere light?")
    assert found["diagnostics"]["reasons"][0]["code"] == "MODEL_UNAVAILABLE"
    assert found["cards"][0]["id"] == "world/saltmere-light"
    assert found["cards"][0]["reason"]["score"]["vectorRank"] is None


def test_a_card_found_by_meaning_gives_way_with_the_relevant_memories_by_score() -> None:
    from membank.domains.context.giveway import retrieved
    from membank.domains.context.layers import Piece

    named = Piece(4, "cards", "card", "named", "c-named", reason={"where": "selection"})
    around = Piece(4, "cards", "card", "around", "c-around", reason={"where": "before"})
    meant = Piece(4, "cards", "card", "meant", "c-meant", reason={"where": "meaning", "reason": MEANING}, score=0.4)
    memory = Piece(4, "memories", "memory", "memory", "m-1", reason={"mode": "semantic"}, score=0.5)
    least, rest, last = retrieved([named, around, meant, memory])
    assert least == [] and [p.id for p in rest] == ["c-meant", "m-1", "c-around"] and last == [named]


def test_match_and_min_score_travel_with_an_exported_card(bank: Bank, sample: Path, tmp_path: Path) -> None:
    import json

    from membank.domains.cards import own

    _import_sensei(bank)
    card = sample / ".writenow" / "characters" / "coding-sensei.md"
    card.write_text(card.read_text(encoding="utf-8").replace("name: Coding Sensei\n",
                                                             "name: Coding Sensei\nmatch: meaning\nminScore: 0.4\n", 1),
                    encoding="utf-8")
    out = tmp_path / "sensei.json"
    envelope = bank.call("card:export", {"source": "characters/coding-sensei.md", "format": "json", "output": str(out),
                                         "force": True})
    assert envelope["ok"], envelope
    carried = json.loads(out.read_bytes())["data"]["extensions"]["membank"]
    assert (carried["match"], carried["minScore"]) == ("meaning", 0.4)
    restored = own.restore(carried)
    assert (restored["match"], restored["minScore"]) == ("meaning", 0.4)  # back into the front matter on import
    assert own.restore({"match": "often", "minScore": 3}) == {}


def test_without_a_model_no_card_is_activated_by_meaning(bank: Bank, sample: Path) -> None:
    _card(sample, "characters/old-teacher.md", "name: Old Teacher\nmatch: meaning\n"
          "summary: teaches programming and fixes bugs in Python code")
    bank.sync()
    assert _cards(_assemble(bank, CODING))["characters/old-teacher"]["reason"] == MEANING
    bank.update_embedding_settings({"model": "models/not-there"})
    data = _assemble(bank, CODING)
    assert "characters/old-teacher" not in _cards(data)
    assert "MODEL_UNAVAILABLE" in [r["code"] for r in data["diagnostics"]["reasons"]]


def test_a_scoped_books_entry_needs_its_character_to_be_found_by_meaning(bank: Bank, sample: Path) -> None:
    _card(sample, "characters/sensei.md", "name: Sensei\nlorebook: world/sensei-lore\nsummary: an old man")
    _card(sample, "world/sensei-lore/book.md", "name: Sensei lore\nscope: character\nmatch: meaning")
    _card(sample, "world/sensei-lore/dojo.md", "name: Dojo\nkind: place\n"
          "summary: where programmers learn to fix the bugs in their Python code")
    bank.sync()
    assert "world/sensei-lore/dojo" not in _cards(_assemble(bank, CODING))
    found = _cards(_assemble(bank, "Sensei smiled. " + CODING))
    assert found["world/sensei-lore/dojo"]["reason"] == MEANING and "characters/sensei" in found
