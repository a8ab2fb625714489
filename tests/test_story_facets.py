"""Facet schemas (story.md, Facet schemas; issue 33.1): settings.yaml `story.facets`; doctor reports a
progression value that breaks its schema (source, line, the facet, what is allowed), and a functional
facet is checked against scenes like `location`."""

from __future__ import annotations

from pathlib import Path

from membank.domains.story.facets import allowed, breaks, schema_problem

from .helpers import membank
from .storykit import ok, story

SETTINGS = """story:
  facets:
    location: {type: text, functional: true}
    alive: {type: bool}
    age: {type: int, min: 0, max: 200}
    rank: {type: enum, values: [丫鬟, 小姐]}
    knows: {type: list}
    court: {type: text, functional: true}
    mood: {type: colour}
"""

CARD = """---
name: 紫鹃
kind: character
progressions:
  - {at: chapters/ch02.md, set: {age: 14, rank: 丫鬟, alive: true, knows: [a]}}
  - {at: chapters/ch03.md, set: {age: -1, rank: 太太, alive: maybe, knows: a}}
  - {at: chapters/ch04.md, set: {court: 荣国府}}
---
"""


def test_a_value_against_its_schema() -> None:
    assert not breaks({"type": "int", "min": 0}, 3) and breaks({"type": "int", "min": 0}, -1)
    assert breaks({"type": "int"}, True) and breaks({"type": "bool"}, "yes") and not breaks({"type": "bool"}, False)
    assert breaks({"type": "enum", "values": ["a"]}, "b") and not breaks({"type": "enum", "values": ["a"]}, "a")
    assert breaks({"type": "list"}, "a") and not breaks({"type": "text"}, "荣国府") and breaks({"type": "text"}, [1])
    assert schema_problem("mood", {"type": "colour"}) is not None and not breaks({"type": "colour"}, 1)
    assert allowed({"type": "int", "min": 0, "max": 200}) == "a whole number from 0 to 200"


def test_doctor_reports_the_values_that_break_their_schema(tmp_path: Path) -> None:
    bank = story(tmp_path, {".writenow/settings.yaml": SETTINGS, ".writenow/characters/zijuan.md": CARD})
    try:
        found = [d for d in bank.diagnostics()["items"] if "story.facets" in d["message"]]
        on_card = {(d["line"], d["message"].split("`")[1]) for d in found if d["source"].endswith("zijuan.md")}
        assert on_card == {(6, "age"), (6, "rank"), (6, "alive"), (6, "knows")}  # line 5 keeps to the schema
        age = next(d for d in found if "`age`" in d["message"])
        assert "a whole number from 0 to 200" in age["message"] and "read as written" in age["message"]
        assert any(d["source"].endswith("settings.yaml") and d["line"] == 2 and "mood" in d["message"] for d in found)
        # the value is still read as written
        assert ok(bank, "kg:state", name="紫鹃", at="chapters/ch03.md")["facets"]["age"]["value"] == -1
    finally:
        bank.close()


def test_doctor_checks_again_after_the_schema_or_a_card_changed(tmp_path: Path) -> None:
    bank = story(tmp_path, {".writenow/settings.yaml": SETTINGS, ".writenow/characters/zijuan.md": CARD})
    try:
        def broken() -> set[str]:
            return {d["message"].split("`")[1] for d in bank.diagnostics()["items"]
                    if "story.facets" in d["message"] and d["source"].endswith("zijuan.md")}
        assert broken() == {"age", "rank", "alive", "knows"}
        settings = bank.root / ".writenow" / "settings.yaml"
        settings.write_text(SETTINGS.replace("max: 200", "max: 10"), "utf-8")  # 14 is now too old
        assert broken() == {"age", "rank", "alive", "knows"} and any(
            "age" in d["message"] and "from 0 to 10" in d["message"] for d in bank.diagnostics()["items"])
        card = bank.root / ".writenow" / "characters" / "zijuan.md"
        card.write_text(CARD.replace("age: -1, rank: 太太, alive: maybe, knows: a", "age: 5"), "utf-8")
        bank.sync()
        assert broken() == {"age"}  # line 5's 14 only
    finally:
        bank.close()


def test_a_functional_facet_is_checked_against_the_scene(tmp_path: Path) -> None:
    bank = story(tmp_path, {".writenow/settings.yaml": SETTINGS, ".writenow/characters/zijuan.md": CARD,
                            ".writenow/scenes/chapters/ch04.md.md": "---\npresent: [紫鹃]\ncourt: 宁国府\n---\n",
                            ".writenow/scenes/chapters/ch05.md.md": "---\npresent: [紫鹃]\ncourt: 荣国府\n---\n"})
    try:
        flags = ok(bank, "kg:consistency:check", documentId="chapters/ch04.md")["flags"]
        assert [(f["code"], f["entity"]) for f in flags if "court" in f["message"]] == \
            [("LOCATION_MISMATCH", "characters/zijuan")]
        later = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md")["flags"]
        assert not any(f["code"] == "LOCATION_MISMATCH" for f in later)
    finally:
        bank.close()


def test_the_timeline_shows_each_change_as_old_to_new(tmp_path: Path, home: Path) -> None:
    story(tmp_path, {".writenow/characters/zijuan.md": CARD}).close()
    shown = membank("story", "紫鹃", cwd=tmp_path / "hlm", home=home)
    assert shown.returncode == 0, shown.stderr
    assert "age: 14 → -1" in shown.stdout and "rank: 丫鬟 → 太太" in shown.stdout
    assert "zijuan.md:6" in shown.stdout  # the change's evidence, on its row
