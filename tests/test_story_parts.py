"""The pure parts of story time and of a prompt: story order, state at a position, the surrounding
text's cuts and the budget's order of giving way."""

from __future__ import annotations

from membank.domains.context.budget import fit
from membank.domains.context.layers import Piece, serialise
from membank.domains.context.surrounding import after, before, trim
from membank.domains.story.order import StoryOrder, natural_key
from membank.domains.story.state import state_at
from membank.kernel.text import estimate_tokens

CARD = {
    "id": "characters/lin", "name": "Lin", "source": ".writenow/characters/lin.md", "state": "resting",
    "stateAt": None, "lines": {"state": 5, "progressions": [8, 9, 10]},
    "progressions": [{"at": "ch/ch05.md", "state": "wounded", "set": {"location": "forest"}},
                     {"at": "ch/ch09.md", "state": "dead", "set": {"alive": False}},
                     {"at": "ch/ch03.md", "set": {"location": "lighthouse", "knows": ["the code"]}}],
}


def test_natural_order_and_globs() -> None:
    assert sorted(["ch10.md", "ch2.md", "Ch1.md"], key=natural_key) == ["Ch1.md", "ch2.md", "ch10.md"]
    files = ["ch/ch10.md", "ch/ch2.md", "ch/ch1.md", "prologue.md", "notes.txt"]
    order = StoryOrder.of(("prologue.md", "ch/*.md", "epilogue.md"), files, ())
    assert order.positions == ("prologue.md", "ch/ch1.md", "ch/ch2.md", "ch/ch10.md", "epilogue.md")
    natural = StoryOrder.of(None, ["ch/ch2.md"], ["ch/ch12.md", "ch/ch1.md"])
    assert natural.positions == ("ch/ch1.md", "ch/ch2.md", "ch/ch12.md")


def test_a_position_outside_the_order_is_after_everything() -> None:
    order = StoryOrder.of(("a.md", "b.md"), [], ())
    assert order.rank("zzz.md") == (2, 0) and not order.reached("zzz.md", "b.md")
    assert order.holds("a.md", None, "b.md") and not order.holds("b.md", None, "a.md")
    assert order.holds(None, "b.md", "a.md") and not order.holds(None, "b.md", "b.md")  # until is exclusive
    assert order.holds(None, None, None) and not order.holds("a.md", None, None)  # no position: timeless only


def test_state_at_a_position_never_sees_later() -> None:
    order = StoryOrder.of(None, ["ch/ch03.md", "ch/ch05.md", "ch/ch09.md"], ())
    at5 = state_at(CARD, order, "ch/ch05.md")
    assert at5.state.value == "wounded" and at5.state.line == 8
    assert {k: v.value for k, v in at5.facets.items()} == {"location": "forest", "knows": ["the code"]}
    assert at5.facets["knows"].line == 10 and at5.hidden == 1
    at3 = state_at(CARD, order, "ch/ch03.md")
    assert at3.state.value == "resting" and at3.facets["location"].value == "lighthouse" and at3.hidden == 2
    timeless = state_at(CARD, order, None)
    assert timeless.state.value == "resting" and not timeless.facets and timeless.hidden == 3


def test_surrounding_cuts_at_paragraph_then_sentence_then_hard() -> None:
    text = "Far away. Still far.\n\nNear one. Nearer two."
    assert before(text, 25) == before(text, 25).__class__("Near one. Nearer two.", "paragraph")
    assert before("One. Two three four", 16) == before(text, 1).__class__("Two three four", "sentence")
    assert before("abcdefghijklmnop", 5).text == "lmnop" and before("abcdefghijklmnop", 5).cut == "hard"
    assert after("他走了。她笑了。然后", 6).text == "他走了。" and after("short", 100).cut == "none"
    assert trim("A a. B b.\n\nC c. D d.", "before", 3, estimate_tokens) == ("C c. D d.", "paragraph")
    assert trim("A a. B b.", "after", 2, estimate_tokens) == ("A a.", "sentence")


def _pieces() -> list[Piece]:
    return [Piece(0, "", "identity", "id " * 10), Piece(1, "", "skill", "skill " * 10),
            Piece(2, "project", "project", "Title: T"),
            Piece(2, "characters", "card", "c1 " * 40, "c1"), Piece(2, "characters", "card", "c2 " * 40, "c2"),
            Piece(3, "preferences", "preference", "p " * 20, "p1"),
            Piece(4, "cards", "card", "m1 " * 40, "m1"), Piece(4, "memories", "memory", "m2 " * 40, "m2"),
            Piece(5, "instruction", "instruction", "go on"),
            Piece(5, "before", "before", "Old para. Old.\n\n" + "Near. " * 30),
            Piece(5, "selection", "selection", "The selection."), Piece(5, "after", "after", "After. " * 30)]


def test_budget_gives_way_in_order_and_lists_every_dropped_piece() -> None:
    pieces = _pieces()
    total = sum(p.tokens for p in pieces if p.layer >= 2)
    roomy = fit(pieces, {}, total)
    assert not roomy.dropped and not roomy.over_budget
    less_l4 = fit(pieces, {}, total - 20)
    assert [d.id for d in less_l4.dropped] == ["m2"]  # Layer 4's least relevant first (a memory of no known rank)
    no_l4 = fit(pieces, {}, total - 70)  # the sides are under 500 code points: no far half to give
    assert [d.id for d in no_l4.dropped][:1] == ["m2"] and {d.kind for d in no_l4.dropped[1:]} == {"before", "after"}
    assert sum(p.tokens for p in no_l4.pieces if p.layer >= 2) == total - 70  # cut back exactly, not over
    tight = fit(pieces, {}, 60)
    kinds = [(d.kind, d.id) for d in tight.dropped]
    assert kinds[0] == ("memory", "m2") and {k for k, _ in kinds[1:3]} == {"before", "after"}
    assert kinds[3:] == [("card", "c2"), ("card", "c1")]  # then Layer 2, its last card first
    assert all(d.reason and d.tokens > 0 for d in tight.dropped)
    kept = {p.kind for p in tight.pieces}
    assert {"identity", "skill", "instruction", "selection"} <= kept and "m1" in {p.id for p in tight.pieces}


def test_what_is_never_cut_is_over_budget_not_cut() -> None:
    pieces = _pieces() + [Piece(5, "selection", "selection", "word " * 500)]
    result = fit(pieces, {}, 100)
    assert result.over_budget and sum(p.kind == "selection" for p in result.pieces) == 2


def test_layer_caps_drop_the_last_pieces_of_a_layer() -> None:
    result = fit(_pieces(), {"project": 20}, 100_000)
    assert [d.id for d in result.dropped] == ["c2", "c1"] and "project layer" in result.dropped[0].reason


def test_serialisation_masks_empty_sections_and_is_lf_nfc() -> None:
    a = serialise([Piece(0, "", "identity", "Caf\u0065\u0301\r\nline")])
    b = serialise([Piece(0, "", "identity", "Café\nline")])
    assert a.system_prompt == b.system_prompt and a.prefix_hash == b.prefix_hash
    assert "\r" not in a.system_prompt and a.system_prompt.count("(none)") == 5  # skill + 3 + 1 sections


def test_scene_positions_order_inside_their_document() -> None:
    order = StoryOrder(("ch04.md", "ch05.md", "ch06.md"), True, (("ch05.md", ("灯塔", "雨夜", "#3")),))
    assert order.rank("ch05.md") < order.rank("ch05.md#灯塔") < order.rank("ch05.md#雨夜") == order.rank("ch05.md#2")
    assert order.rank("ch05.md#3") < order.rank("ch06.md") and order.rank("ch04.md#9") < order.rank("ch05.md")
    assert order.knows("ch05.md#雨夜") and not order.unknown_scene("ch05.md#雨夜")
    # an unknown scene counts as the end of its document, never after the next one
    assert order.unknown_scene("ch05.md#nowhere") and order.rank("ch05.md#3") < order.rank("ch05.md#nowhere")
    assert order.rank("ch05.md#nowhere") < order.rank("ch06.md")
    # a death in mid-chapter is not true at the chapter's first scene; something dated to the chapter is
    assert not order.reached("ch05.md#雨夜", "ch05.md#1") and order.reached("ch05.md#雨夜", "ch05.md#3")
    assert order.reached("ch05.md", "ch05.md#1") and not order.holds("ch05.md#雨夜", None, "ch05.md#灯塔")
    assert order.holds(None, "ch05.md#雨夜", "ch05.md#1") and not order.holds(None, "ch05.md#雨夜", "ch05.md#2")
    # natural order never takes a scene position for a document of its own
    assert StoryOrder.of(None, ["a.md"], ["b.md#2", "a.md#x"]).positions == ("a.md", "b.md")
