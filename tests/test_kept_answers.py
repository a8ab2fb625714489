"""What prompts and checks keep between calls (per generation of the cards, per view of the index:
docs/performance.md) never answers for what has changed since: a card edited, a memory edited, deleted
or added for the document, another story position; and a caller changing an answer changes no later one."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from membank import Bank

CH01, CH05 = "chapters/ch01.md", "chapters/ch05.md"
SELECTION = "He drew. Steel rang."
QUERY = "Where is Lin Mo recovering from his wound?"


def _ok(bank: Bank, channel: str, **payload: Any) -> dict[str, Any]:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]  # type: ignore[no-any-return]


def _lin(bank: Bank, at: str) -> dict[str, Any]:
    checked = _ok(bank, "kg:consistency:check", documentId=at, text="Lin Mo stood in the door. Maren said nothing.")
    return next(e for e in checked["entities"] if e["id"] == "characters/lin-mo")


def _prompt(bank: Bank, **more: Any) -> str:
    data = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION}, **more)
    return data["userContent"]  # type: ignore[no-any-return]


def test_each_position_answers_its_own_state_and_an_edited_card_is_seen(bank: Bank, sample: Path) -> None:
    at5, at1 = _lin(bank, CH05), _lin(bank, CH01)
    assert at5["state"]["at"] == CH05 and at1["state"]["at"] == CH01 and at5["state"] != at1["state"]
    assert _lin(bank, CH05) == at5 and _lin(bank, CH01) == at1  # asked again, in turn: each its own
    assert "第五章受伤，在森林养伤" in _prompt(bank)
    card = sample / ".writenow" / "characters" / "lin-mo.md"
    card.write_text(card.read_text("utf-8").replace("state: 第五章受伤，在森林养伤", "state: 第五章重伤，高烧不退"), "utf-8")
    bank.sync()
    assert _lin(bank, CH05)["state"]["value"] == "第五章重伤，高烧不退"
    assert _lin(bank, CH01) == at1
    prompt = _prompt(bank)
    assert "第五章重伤，高烧不退" in prompt and "第五章受伤，在森林养伤" not in prompt


def test_changing_an_answer_changes_no_later_one(bank: Bank) -> None:
    first = copy.deepcopy(_lin(bank, CH05))
    again = _lin(bank, CH05)
    again["aliases"].append("x")
    again["facets"].clear()
    again["relations"][0]["type"] = "x"
    again["state"]["value"] = "x"
    again["mentions"].clear()
    assert _lin(bank, CH05) == first
    checked = _ok(bank, "kg:consistency:check", documentId=CH05, text="Lin Mo was wounded.")
    kept = copy.deepcopy(checked)
    assert checked["facts"]
    for fact in checked["facts"]:
        fact["entities"].clear()
        fact["content"] = "x"
    assert _ok(bank, "kg:consistency:check", documentId=CH05, text="Lin Mo was wounded.") == kept
    _ok(bank, "context:settings:update", patch={"layerTokens": {"preferences": 60}})  # some are dropped
    payload = {"skillId": "continue", "documentId": CH05, "selection": {"text": SELECTION}, "runId": "r-same"}
    data = _ok(bank, "context:assemble", **payload)
    kept = copy.deepcopy(data)
    assert any(d["layer"] == 3 for d in data["diagnostics"]["dropped"])
    for dropped in data["diagnostics"]["dropped"]:
        dropped["reason"] = "x"
    for item in data["items"]:
        item["reason"] = "x"
    later = _ok(bank, "context:assemble", **payload)
    later["diagnostics"]["tookMs"] = kept["diagnostics"]["tookMs"]
    assert later == kept


def test_a_memory_edited_deleted_or_added_is_seen_by_the_next_prompt(bank: Bank) -> None:
    assert "charcoal-burner's hut" in _prompt(bank, queryText=QUERY)
    _ok(bank, "memory:update", id="m-fact-linmo-wounded",
        patch={"content": "Lin Mo was wounded in chapter five and hides in the salt cellar under the light."})
    prompt = _prompt(bank, queryText=QUERY)
    assert "salt cellar" in prompt and "charcoal-burner's hut" not in prompt
    _ok(bank, "memory:delete", id="m-fact-linmo-wounded")
    assert "salt cellar" not in _prompt(bank, queryText=QUERY)
    _ok(bank, "memory:create", type="note", scope="document", documentId=CH05,
        content="In this chapter the fog never lifts.")
    assert "the fog never lifts" in _prompt(bank, queryText=QUERY)
    _ok(bank, "memory:restore", id="m-fact-linmo-wounded")
    assert "salt cellar" in _prompt(bank, queryText=QUERY)


def test_changing_an_item_s_reason_in_place_changes_no_later_prompt(bank: Bank) -> None:
    _ok(bank, "memory:create", type="note", scope="document", documentId=CH05, content="In this chapter the fog never lifts.")
    payload = {"skillId": "continue", "documentId": CH05, "selection": {"text": SELECTION}, "runId": "r-same"}
    data = _ok(bank, "context:assemble", **payload)
    kept = copy.deepcopy(data)
    assert {"preference", "memory"} <= {i["kind"] for i in data["items"] if isinstance(i["reason"], dict)}
    for item in data["items"]:  # kept pieces (preferences, the document's memories) must not lend their dicts
        if isinstance(item["reason"], dict):
            item["reason"].clear()
    later = _ok(bank, "context:assemble", **payload)
    later["diagnostics"]["tookMs"] = kept["diagnostics"]["tookMs"]
    assert later == kept
