"""The budget's order of giving way (context.md, Budgets), tested directly on pieces: by relevance to
this moment, not by layer. Chinese text, where a code point is about a token."""

from __future__ import annotations

from membank.domains.context import giveway
from membank.domains.context.budget import fit
from membank.domains.context.layers import Piece
from membank.domains.context.surrounding import Cut, cuts, kept_text, near_floor
from membank.kernel.text import estimate_tokens

SENTENCE = "黛玉进了荣国府，只见屋里坐着许多人．"  # 18 code points, 18 tokens
FAR = "雨村在远处做官，这些旧事与此刻无关．"


def _paragraphs(n: int, sentence: str = SENTENCE, per: int = 5) -> str:
    return "\n\n".join(sentence * per for _ in range(n))


def _card(card_id: str, where: str, body: str = "林黛玉，贾母的外孙女，体弱多病，聪慧敏感。" * 3) -> Piece:
    return Piece(4, "cards", "card", body, card_id, f".writenow/characters/{card_id}.md",
                 reason={"match": card_id, "where": where, "offset": 0, "depth": 0 if ":" not in where else 1})


def _memory(memory_id: str, score: float | None) -> Piece:
    reason = {"mode": "semantic", "score": score} if score is not None else {"mode": "deterministic", "rank": 1}
    return Piece(4, "memories", "memory", f"- [fact] {memory_id}：荣国府的规矩很多。", memory_id,
                 f".writenow/memories/{memory_id}.md", reason=reason, score=score)


def _prompt(before: str, after: str) -> list[Piece]:
    return [Piece(0, "", "identity", "identity"), Piece(1, "", "skill", "continue"),
            Piece(2, "project", "project", "Title: 红楼梦"),
            Piece(2, "characters", "card", "贾宝玉，衔玉而生。" * 4, "always-baoyu"),
            _card("lin-daiyu", "selection"),  # the selection names her
            _card("jia-mu", "before"),  # found in the text before (nearer)
            _card("jia-yucun", "after"),  # found in the text after (farther)
            _memory("rules-of-the-house", 0.71), _memory("unranked", None),
            _card("zhen-shiyin", "card:characters/jia-yucun"),  # reached only through another card
            Piece(4, "episodes", "episode", "- continue, action: accepted", "e-1", ".writenow/journal/2026-11.jsonl#L1"),
            Piece(5, "session", "working", "- [note] 这一场要写黛玉的谨慎", "w-2", "session:s1"),
            Piece(5, "session", "working", "- [selection] 次要的旧选段", "w-1", "session:s1"),
            Piece(5, "instruction", "instruction", "续写"),
            Piece(5, "before", "before", before), Piece(5, "selection", "selection", "黛玉方进入房时"),
            Piece(5, "after", "after", after)]


def _total(pieces: list[Piece]) -> int:
    return sum(p.tokens for p in pieces if p.layer >= 2)


def test_near_floor_keeps_the_near_half_and_never_less_than_500_code_points() -> None:
    assert near_floor("字" * 4000) == 2000
    assert near_floor("字" * 601) == 500 and near_floor("字" * 1200) == 600
    assert near_floor("字" * 300) == 300 and near_floor("") == 0


def test_cuts_take_far_paragraphs_then_sentences_never_closer_than_keep() -> None:
    text = _paragraphs(4)  # 4 paragraphs of 90 code points (5 sentences), a blank line between each
    before = list(cuts(text, "before", 100))
    assert [c.how for c in before] == ["paragraph"] * 2 + ["sentence"] * 4
    assert [c.kept for c in before] == [274, 182, 164, 146, 128, 110] and all(c.kept >= 100 for c in before)
    assert kept_text(text, "before", 182) == _paragraphs(2)
    assert kept_text(text, "before", 110) == SENTENCE + "\n\n" + SENTENCE * 5
    after = list(cuts(text, "after", 0))
    assert [c.how for c in after] == ["paragraph"] * 3 + ["sentence"] * 4 + ["all"]
    assert kept_text(text, "after", after[2].kept) == SENTENCE * 5 and after[-1].kept == 0
    assert [c.tokens for c in after] == [estimate_tokens(kept_text(text, "after", c.kept)) for c in after]
    assert list(cuts("一句话没有句号", "before", 0)) == [Cut(0, "all", 0)]
    mixed = "Lin Mo 拔剑。He ran.\n\n林黛玉 came in. 她笑了！"
    for side in ("before", "after"):  # each cut's tokens are those of what it keeps, blank space at the cut left out
        assert [c.tokens for c in cuts(mixed, side, 0)] == [estimate_tokens(kept_text(mixed, side, c.kept))
                                                            for c in cuts(mixed, side, 0)]
    assert list(cuts(text, "before", len(text))) == []


def test_layer4_gives_way_least_relevant_first_and_the_selections_cards_last() -> None:
    layer4 = [p for p in _prompt("", "") if p.layer == 4]
    least, rest, last = giveway.retrieved(layer4)
    assert [p.id for p in least] == ["unranked", "zhen-shiyin"]  # below the floor, then through a card only
    assert [p.id for p in rest] == ["e-1", "rules-of-the-house", "jia-yucun", "jia-mu"]  # the farthest card first
    assert [p.id for p in last] == ["lin-daiyu"]
    instructed = _card("wang-xifeng", "instruction")
    assert giveway.retrieved(layer4 + [instructed])[2] == [instructed, layer4[0]]


def test_the_far_text_goes_before_the_card_the_selection_names() -> None:
    """Issue 31: 2,000 code points each side must not push out the card of the character the selection
    names: the far halves go first, then Layer 4's least relevant, the rest of the text, Layer 2, the
    rest of Layer 4, the session's entries, and her card last of all."""
    before, after = _paragraphs(20, FAR), _paragraphs(20)  # 1,838 code points each side
    pieces = _prompt(before, after)
    total = _total(pieces)
    daiyu = next(p for p in pieces if p.id == "lin-daiyu")

    first = fit(pieces, {}, total - 300)  # the far halves alone make room
    assert {d.kind for d in first.dropped} <= {"before", "after"} and first.dropped
    assert all("far half" in d.reason for d in first.dropped)
    kept = {p.kind: p for p in first.pieces}
    assert before.endswith(kept["before"].text) and len(kept["before"].text) >= near_floor(before)
    assert after.startswith(kept["after"].text) and len(kept["after"].text) >= near_floor(after)
    assert sum(p.tokens for p in first.pieces if p.layer >= 2) <= total - 300

    halves = sum(d.tokens for d in fit(pieces, {}, 0).dropped if "far half" in d.reason)
    fixed = sum(p.tokens for p in pieces if p.kind in ("project", "instruction", "selection"))
    order = fit(pieces, {}, daiyu.tokens + fixed)  # room for her card and what is never cut, nothing more
    ids = [d.id or d.kind for d in order.dropped]
    assert set(ids[:2]) == {"before", "after"} and sum(d.tokens for d in order.dropped[:2]) == halves
    assert ids[2:4] == ["unranked", "zhen-shiyin"]  # Layer 4's least relevant
    assert set(ids[4:6]) == {"before", "after"} and "far half" not in order.dropped[4].reason  # the rest of the text
    assert ids[6:] == ["always-baoyu", "e-1", "rules-of-the-house", "jia-yucun", "jia-mu", "w-1", "w-2"]
    assert daiyu in order.pieces and not order.over_budget

    tight = fit(pieces, {}, total - halves - 100)  # the far halves and Layer 4's least relevant, some text
    ids = [d.id or d.kind for d in tight.dropped]
    assert ids[2:4] == ["unranked", "zhen-shiyin"] and set(ids[4:]) <= {"before", "after"}
    assert {"instruction", "selection", "before", "after", "working"} <= {p.kind for p in tight.pieces}

    nothing = fit(pieces, {}, 20)
    assert "lin-daiyu" == nothing.dropped[-1].id  # last of all
    assert not any(p.layer == 4 for p in nothing.pieces)


def test_a_short_side_keeps_its_500_nearest_code_points_until_layer4_is_gone() -> None:
    before = _paragraphs(5)  # 458 code points: no far half to give
    pieces = _prompt(before, "")
    result = fit(pieces, {}, _total(pieces) - 50)
    assert [d.id for d in result.dropped] == ["unranked", "zhen-shiyin"]  # Layer 4's least relevant, not the text
    assert next(p for p in result.pieces if p.kind == "before").text == before


def test_the_retrieved_layers_cap_drops_by_relevance_too() -> None:
    pieces = _prompt("", "")
    daiyu = next(p for p in pieces if p.id == "lin-daiyu")
    result = fit(pieces, {"retrieved": daiyu.tokens}, 100_000)
    assert [p.id for p in result.pieces if p.layer == 4] == ["lin-daiyu"]
    assert [d.id for d in result.dropped][:2] == ["unranked", "zhen-shiyin"]
    assert all("retrieved layer's cap" in d.reason for d in result.dropped)


def test_the_immediate_layers_cap_cuts_far_halves_then_session_then_text() -> None:
    pieces = _prompt(_paragraphs(20, FAR), _paragraphs(20))
    layer5 = sum(p.tokens for p in pieces if p.layer == 5)
    halves = sum(d.tokens for d in fit(pieces, {}, 0).dropped if "far half" in d.reason)
    cap = layer5 - halves - 30
    result = fit(pieces, {"immediate": cap}, 100_000)
    kinds = [d.id or d.kind for d in result.dropped]
    assert kinds[:2] in (["before", "after"], ["after", "before"]) and "far half" in result.dropped[1].reason
    assert kinds[2:] in (["before"], ["after"]) and "far half" not in result.dropped[2].reason  # before the session
    assert [p.id for p in result.pieces if p.kind == "working"] == ["w-2", "w-1"]
    last = fit(pieces, {"immediate": sum(p.tokens for p in pieces if p.kind in ("instruction", "selection")) + 13},
               100_000)
    assert [d.id for d in last.dropped if d.kind == "working"] == ["w-1"]  # the least important, after all the text
    assert sum(p.tokens for p in result.pieces if p.layer == 5) <= cap and not result.over_budget


def test_span_tokens_is_estimate_tokens_of_the_span() -> None:
    from membank.kernel.text import span_tokens

    for text in ("Lin Mo 拔剑。He ran.\n\n林黛玉 came in. 她笑了！𠀀x", "plain ascii text here", "林黛玉"):
        measure = span_tokens(text)
        for a in range(len(text) + 1):
            for b in range(a, len(text) + 1):
                assert measure(a, b) == estimate_tokens(text[a:b]), (text, a, b)
