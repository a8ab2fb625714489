"""The story graph (story.md): state at every position against a plain reference, the kg:* channels,
writing a progression into a hand-commented card, CONFLICT, the consistency check, and no spoilers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings, strategies as st

from membank import Bank
from membank.domains.story.order import StoryOrder
from membank.domains.story.state import state_at

from .helpers import membank

CH = [f"chapters/ch{i:02d}.md" for i in range(1, 8)]


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


# -- state at a position, against a plain reference --------------------------------------------------

def _reference(items: list[tuple[str, str | None, dict[str, Any]]], order: list[str], position: str
               ) -> tuple[str | None, dict[str, Any]]:
    """The spec read literally: the last progression with at ≤ P (list order breaks ties) gives the
    state; every progression with at ≤ P sets its facets, in that order."""
    rank = {p: i for i, p in enumerate(order)}
    reached = [(rank[at], i, state, facets) for i, (at, state, facets) in enumerate(items)
               if at in rank and rank[at] <= rank[position]]
    state: str | None = None
    facets: dict[str, Any] = {}
    for _, _, s, f in sorted(reached):
        if s is not None:
            state = s
        facets.update(f)
    return state, facets


progression = st.tuples(st.sampled_from(CH), st.one_of(st.none(), st.sampled_from(["hurt", "healed", "lost", "home"])),
                        st.dictionaries(st.sampled_from(["alive", "location", "knows"]),
                                        st.sampled_from([True, False, "cliffs", "woods"]), max_size=2))


@settings(max_examples=150, deadline=None)
@given(st.lists(progression, min_size=5, max_size=5), st.permutations(CH))
def test_state_at_every_position_matches_the_reference(items: list[tuple[str, str | None, dict[str, Any]]],
                                                       order: list[str]) -> None:
    card = {"source": "c.md", "progressions": [{"at": at, **({"state": s} if s else {}), "set": f}
                                               for at, s, f in items],
            "lines": {"progressions": list(range(10, 15))}}
    story = StoryOrder(tuple(order), True)
    for position in order:
        got = state_at(card, story, position)
        state, facets = _reference(items, order, position)
        assert (got.state.value if got.state else None) == state
        assert {k: v.value for k, v in got.facets.items()} == facets
        assert all(v.at is not None and story.reached(v.at, position) for v in got.facets.values())


# -- the channels --------------------------------------------------------------------------------------

def test_a_list_at_a_position_leaves_out_who_enters_later(bank: Bank) -> None:
    def ids(**at: Any) -> set[str]:
        return {e["id"] for e in _ok(bank, "kg:entity:list", **at)["items"]}
    assert "characters/su-yao" not in ids(at="chapters/ch05.md")  # introduced: chapters/ch09.md
    assert "characters/su-yao" in ids(at="chapters/ch09.md") and "characters/su-yao" in ids()
    assert "characters/lin-mo" in ids(at="chapters/ch01.md")  # introduced there: listed from that chapter on
    assert _ok(bank, "kg:entity:get", name="Su Yao", at="chapters/ch05.md")["id"] == "characters/su-yao"  # asked by name


def test_entities_state_relations_and_links(bank: Bank) -> None:
    items = _ok(bank, "kg:entity:list", at="chapters/ch05.md")["items"]
    lin = next(e for e in items if e["id"] == "characters/lin-mo")
    assert lin["state"]["value"] == "第五章受伤，在森林养伤" and lin["facets"]["location"]["value"] == "北方森林"
    assert lin["facets"]["wounded"]["line"] == 18 and lin["facets"]["wounded"]["source"].endswith("lin-mo.md")
    state = _ok(bank, "kg:state", name="Lin Mo", at="chapters/ch03.md")
    assert state["state"] == "在灯塔里养好体力，帮玛伦修灯" and state["since"] == "chapters/ch03.md"
    assert state["facets"]["location"]["value"] == "灯塔"
    light = _ok(bank, "kg:entity:get", name="the lighthouse")
    link = next(r for r in light["relations"] if r["type"] == "mentions")
    assert link["to"] == "characters/maren-voss" and link["line"] == 13  # [[Maren Voss]] in its body
    edges = _ok(bank, "kg:relations", name="Maren", at="chapters/ch05.md", depth=2)["edges"]
    assert {e["depth"] for e in edges} == {1, 2}
    assert len({(e["source"], e["line"]) for e in edges}) == len(edges)  # a relation once, from its nearer end
    assert ("characters/lin-mo", "characters/edric-thorne", 2) in {(e["from"], e["to"], e["depth"]) for e in edges}
    tam = next(e for e in edges if e["name"] == "Tam")
    assert tam["to"] is None  # a name no card has
    doctor = bank.diagnostics()["items"]
    assert any(d["source"].endswith("maren-voss.md") and "Tam" in d["message"] and d["line"] == 13 for d in doctor)


def test_names_are_resolved_or_refused(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "characters" / "maren-twin.md").write_text(
        "---\nname: Maren Hale\naliases: [Maren]\n---\nAnother Maren.\n", "utf-8")
    bank.sync()
    ambiguous = bank.call("kg:state", {"name": "maren", "at": "chapters/ch05.md"})
    assert ambiguous["error"]["code"] == "CONFLICT"
    assert {c["id"] for c in ambiguous["error"]["details"]["candidates"]} == {"characters/maren-voss",
                                                                               "characters/maren-twin"}
    assert bank.call("kg:entity:get", {"name": "Nobody"})["error"]["code"] == "NOT_FOUND"
    assert bank.call("kg:state", {"id": "characters/lin-mo", "at": "chapters/ch99.md"})["error"]["details"] == \
        {"field": "at"}
    assert _ok(bank, "kg:mentions", text="MAREN met 阿默.")["items"] == [
        {"id": "characters/maren-twin", "name": "Maren Hale", "match": "MAREN", "offset": 0, "length": 5},
        {"id": "characters/maren-voss", "name": "Maren Voss", "match": "MAREN", "offset": 0, "length": 5},
        {"id": "characters/lin-mo", "name": "林默", "match": "阿默", "offset": 10, "length": 2}]


# -- writing a progression -------------------------------------------------------------------------------

HAND = """---
# Thorne, as I see him
name: Edric Thorne      # the harbourmaster
kind: character
aliases: [Thorne]
mood: ominous           # a key membank does not know
progressions:   # oldest first
  - {at: chapters/ch01.md, state: leads the salvage}   # the eastern ship

  # (more to come)
---
Body text, kept.
"""


def test_a_progression_lands_in_the_card_and_nothing_else_moves(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow" / "characters" / "edric-thorne.md"
    path.write_text(HAND, "utf-8")
    bank.sync()
    entity = _ok(bank, "kg:state:update", name="Thorne", at="chapters/ch05.md", state="wounded at the cove",
                 set={"alive": True, "knows": ["Lin Mo lives"]})
    after = path.read_text("utf-8").splitlines(keepends=True)
    before = HAND.splitlines(keepends=True)
    added = [line for line in after if line not in before]
    assert [line for line in before if line not in after] == []  # every written line stays, byte for byte
    assert added[0] == "  - {at: chapters/ch05.md, state: wounded at the cove, set: {alive: true, knows: [Lin Mo lives]}}\n"
    assert after.index(added[0]) == before.index("  - {at: chapters/ch01.md, state: leads the salvage}   # the eastern ship\n") + 1
    assert {line.split(":")[0] for line in added[1:]} == {"state", "state_at", "revision", "updated"}
    assert entity["state"]["value"] == "wounded at the cove" and entity["facets"]["knows"]["value"] == ["Lin Mo lives"]
    assert _ok(bank, "kg:state", name="Thorne", at="chapters/ch01.md")["state"] == "leads the salvage"
    earlier = _ok(bank, "kg:state:update", name="Thorne", at="chapters/ch03.md", state="grows suspicious",
                  expectedRevision=2)
    assert earlier["state"]["value"] == "grows suspicious"  # at ch03; the top-level state stays at ch05
    assert "state: wounded at the cove\n" in path.read_text("utf-8")


def test_a_card_changed_underneath_is_conflict(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow" / "characters" / "lin-mo.md"
    revision = 1
    stale = bank.call("kg:state:update", {"name": "Lin Mo", "at": "chapters/ch05.md", "state": "x",
                                          "expectedRevision": revision + 1})
    assert stale["error"]["code"] == "CONFLICT" and stale["error"]["details"]["revision"] == revision
    original = path.read_text("utf-8")
    path.write_text(original.replace("沉默寡言", "寡言"), "utf-8")  # the writer saves; no sync yet
    changed = bank.call("kg:state:update", {"name": "Lin Mo", "at": "chapters/ch05.md", "state": "x"})
    assert changed["error"]["code"] == "CONFLICT"
    assert path.read_text("utf-8") == original.replace("沉默寡言", "寡言")  # the writer's version stays
    assert _ok(bank, "kg:state:update", name="Lin Mo", at="chapters/ch05.md", state="x")["state"]["value"] == "x"


# -- the consistency check and no spoilers -----------------------------------------------------------------

def test_the_check_flags_what_the_cards_contradict(bank: Bank, sample: Path) -> None:
    _ok(bank, "kg:state:update", name="Edric Thorne", at="chapters/ch05.md", set={"alive": False})
    text = "Su Yao watched Thorne from the cliff, and Maren lit the lamp."
    checked = _ok(bank, "kg:consistency:check", documentId="chapters/ch05.md", text=text)
    flags = {(f["code"], f["entity"]) for f in checked["flags"]}
    assert flags == {("NOT_YET_INTRODUCED", "characters/su-yao"), ("NOT_ALIVE", "characters/edric-thorne")}
    su = next(f for f in checked["flags"] if f["code"] == "NOT_YET_INTRODUCED")
    assert su["evidence"] == [{"source": ".writenow/characters/su-yao.md", "line": 7}]
    assert [e["id"] for e in checked["entities"]] == ["characters/su-yao", "characters/edric-thorne",
                                                       "characters/maren-voss"]  # in the order they appear
    assert all(f["id"].startswith("m-") and f["entities"] for f in checked["facts"])
    clean = _ok(bank, "kg:consistency:check", documentId="chapters/ch05.md", text="Maren lit the lamp.")
    assert clean["flags"] == [] and clean["positionKnown"] is True


def test_nothing_later_through_any_story_channel(bank: Bank, sample: Path) -> None:
    wb = sample / ".writenow"
    (wb / "project.yaml").write_text((wb / "project.yaml").read_text("utf-8") + "chapters: [chapters/ch01.md, "
                                     "chapters/ch03.md, chapters/ch05.md, chapters/ch09.md]\n", "utf-8")
    _ok(bank, "kg:state:update", name="Lin Mo", at="chapters/ch09.md", state="被背叛", set={"knows": ["王叔是叛徒"]})
    card = wb / "characters" / "lin-mo.md"
    card.write_text(card.read_text("utf-8").replace(
        "relations:\n", "relations:\n  - {to: Edric Thorne, type: 仇人之子, since: chapters/ch09.md}\n", 1), "utf-8")
    (wb / "memories" / "facts" / "traitor.md").write_text(
        "---\ntype: fact\nsince: chapters/ch09.md\n---\n林默 learns that Uncle Wang is the traitor.\n", "utf-8")
    bank.sync()
    later = ("被背叛", "王叔是叛徒", "仇人之子", "Uncle Wang")
    at3 = "chapters/ch03.md"
    answers = [
        bank.call("kg:entity:list", {"at": at3}), bank.call("kg:entity:get", {"name": "Lin Mo", "at": at3}),
        bank.call("kg:relations", {"name": "Lin Mo", "at": at3, "depth": 3}),
        bank.call("kg:relations", {"name": "Edric Thorne", "at": at3, "depth": 3}),
        bank.call("kg:state", {"name": "Lin Mo", "at": at3}), bank.call("kg:mentions", {"text": "林默 and Thorne"}),
        bank.call("kg:consistency:check", {"documentId": at3, "text": "林默 and Thorne, the traitor."}),
    ]
    for answer in answers:
        assert answer["ok"], answer
        assert not any(word in json.dumps(answer, ensure_ascii=False) for word in later), answer
    at9 = json.dumps(bank.call("kg:consistency:check", {"documentId": "chapters/ch09.md", "text": "林默 and Thorne"}),
                     ensure_ascii=False)
    assert all(word in at9 for word in later)


def test_story_and_check_on_the_command_line(sample: Path, home: Path) -> None:
    timeline = membank("story", "Lin Mo", cwd=sample, home=home)
    assert timeline.returncode == 0 and "chapters/ch03.md" in timeline.stdout and "location: 北方森林" in timeline.stdout
    (sample / "chapters" / "ch02.md").write_text("Su Yao came to the door.\n", "utf-8")
    flagged = membank("check", "chapters/ch02.md", cwd=sample, home=home)
    assert flagged.returncode == 1 and "NOT_YET_INTRODUCED" in flagged.stdout and "su-yao.md:7" in flagged.stdout
    clean = membank("check", "chapters/ch01.md", "--json", cwd=sample, home=home)
    assert clean.returncode == 0 and json.loads(clean.stdout)["data"]["flags"] == []
    moved = membank("progress", "Lin Mo", "--at", "chapters/ch05.md", "--set", "wounded=false", "--set",
                    "knows=[the cove, Thorne]", "--json", cwd=sample, home=home)
    facets = json.loads(moved.stdout)["data"]["facets"]
    assert facets["wounded"]["value"] is False and facets["knows"]["value"] == ["the cove", "Thorne"]
    assert "set: {wounded: false, knows: [the cove, Thorne]}}" in \
        (sample / ".writenow" / "characters" / "lin-mo.md").read_text("utf-8")


def test_a_position_outside_the_chapter_list_is_a_warning_where_it_is_written(bank: Bank, sample: Path) -> None:
    wb = sample / ".writenow"
    (wb / "project.yaml").write_text((wb / "project.yaml").read_text("utf-8") + "chapters: [chapters/ch*.md]\n",
                                     "utf-8")
    (wb / "memories" / "facts" / "later.md").write_text("---\ntype: fact\n# a comment\nuntil: chapters/epilogue.md\n"
                                                        "---\nThe light burns.\n", "utf-8")
    bank.sync()
    warnings = {(d["source"], d["line"]) for d in bank.diagnostics()["items"] if "not in project.yaml" in d["message"]}
    # su-yao: introduced ch09, progressions ch09, ch10, ch12, state_at ch10, relations since ch10/ch12: none are files
    assert (".writenow/characters/su-yao.md", 7) in warnings
    assert (".writenow/memories/facts/later.md", 4) in warnings
    assert not any(source.endswith("lin-mo.md") and line == 16 for source, line in warnings)  # ch01 is a file
