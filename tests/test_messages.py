"""What a writer reads: diagnostics that name the bad item, and CLI views that fit the terminal (issue 31.6)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from membank.domains.cards.mapping import card_files
from membank.domains.cards.summary import card_summary
from membank.files.parse import parse_card, parse_memory
from membank.shells import render
from membank.shells.cells import cells, clip, pad


def test_a_pair_inside_tags_is_named_with_quotes_suggested_and_the_good_tags_kept() -> None:
    data = "---\ntype: note\ntags: [贾雨村, idea: 判案]\n---\n葫芦僧乱判葫芦案。\n".encode()
    parsed = parse_memory(data, ".writenow/memories/n.md", "notes/n.md", "project", 0)
    assert parsed.record is not None and parsed.record.tags == ("贾雨村",)
    (diagnostic,) = parsed.diagnostics
    assert diagnostic.severity == "warning" and diagnostic.line == 3
    assert "`idea: 判案`" in diagnostic.message and '("idea: 判案")' in diagnostic.message
    assert "item 2" in diagnostic.message and "other items are kept" in diagnostic.message
    assert "not a list" not in diagnostic.message


def test_a_card_keeps_its_good_keys_around_a_bad_one() -> None:
    data = "---\nname: 贾雨村\nkeys: [雨村, [a, b], ~]\n---\nBody.\n".encode()
    parsed = parse_card(data, ".writenow/characters/j.md", "characters", "j.md", 0)
    assert parsed.record is not None and parsed.record.keys == ("雨村",)
    assert [d.message.split(" is ")[0] for d in parsed.diagnostics] == ["`keys` item 2", "`keys` item 3"]


# -- terminal cells --------------------------------------------------------------------------------


def test_cells_count_wide_characters_twice_and_marks_not_at_all() -> None:
    assert cells("Lin Mo") == 6 and cells("林默") == 4 and cells("「听潮」") == 8 and cells("e\u0301") == 1
    assert clip("林默的剑名叫听潮", 7) == "林默的…" and cells(clip("林默的剑名叫听潮", 8)) <= 8
    assert clip("Lin Mo", 6) == "Lin Mo" and clip("Lin Mo's sword", 6) == "Lin M…"
    assert pad("林默", 6) == "林默  " and pad("Lin", 6) == "Lin   "


def test_clip_cuts_where_the_cells_run_out_whatever_the_text() -> None:
    assert cells("a\x1bb\x7f") == 2 and clip("a\x1bbc", 3) == "a\x1bbc" and clip("a\x1bbcd", 3) == "a\x1bb…"
    assert clip("林默的剑" + "x" * 500, 8) == "林默的…" and clip("林默x", 5) == "林默x" and clip("林默xy", 5) == "林默…"
    assert clip("x" * 70, 70) == "x" * 70 and clip("x" * 71, 70) == "x" * 69 + "…"
    assert clip("abc", 0) == "…" and clip("林", 0) == "…" and clip("", 0) == ""


def piped(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """`membank ARGS` piped, as a script or CI runs it: no terminal and no $COLUMNS."""
    env = {**os.environ, "WRITENOW_HOME": str(home)}
    for name in ("COLUMNS", "LINES", "FORCE_COLOR"):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "membank.shells.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_list_and_preview_columns_line_up_in_cells_with_chinese(sample: Path, home: Path) -> None:
    for command, last in (("list", ".writenow/"), ("preview", None)):
        lines = piped(command, cwd=sample, home=home).stdout.splitlines()
        rows = [line for line in lines if "m-fact-tingchao" in line or "m-fact-maren-father" in line]
        assert len(rows) == 2, lines
        if last:  # the source column starts at the same cell in every row
            assert len({cells(row[:row.index(last)]) for row in rows}) == 1
        for row in rows:  # the content was cut by cells: at most 70 (list) or 80 (preview) of them
            content = [part for part in row.split("  ") if "林默" in part or "Maren's" in part][0]
            assert cells(content.strip()) <= (70 if command == "list" else 80)


def test_the_demo_asks_its_question_and_its_tables_fit_without_a_terminal(tmp_path: Path, home: Path) -> None:
    result = piped("demo", cwd=tmp_path, home=home)
    assert result.returncode == 0, result.stderr
    assert 'the app asks: "is the hero injured?"' in result.stdout
    # one row per memory, not one word per line
    assert any("m-pref-linmo-zh-dialogue" in line and "preference" in line and "林默" in line
               for line in result.stdout.splitlines())
    assert max(cells(line) for line in result.stdout.splitlines() if "─" in line) >= 100  # the rules' width


def test_the_demo_prints_no_note_about_strong_vectors_it_could_never_have(tmp_path: Path, home: Path) -> None:
    """A one-shot process never fills the strong tier: the demo ranks with the static vectors and says nothing
    on stderr (the suite's own MEMBANK_STRONG_ENCODER=off is taken away, as a new user has none)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MEMBANK_STRONG_ENCODER", "COLUMNS", "LINES")}
    result = subprocess.run([sys.executable, "-m", "membank.shells.cli", "demo"], cwd=tmp_path,
                            env={**env, "WRITENOW_HOME": str(home)}, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "STRONG_VECTORS_PENDING" not in result.stderr and "m-fact-linmo-wounded" in result.stdout


# -- a W++ card's summary --------------------------------------------------------------------------

BLOCKS = ('[Seraphina\'s Personality= "caring", "protective", "compassionate", "healing", "nurturing", '
          '"magical", "watchful", "apologetic"]\n[Seraphina\'s body= "pink hair", "long hair", "amber eyes"]\n')
DIALOGUE = '<START>\n{{user}}: "Describe your traits?"\n{{char}}: *Seraphina smiles.* "I am a guardian."'
SERAPHINA = BLOCKS + DIALOGUE


def test_a_w_plus_plus_card_is_summarised_from_its_prose_not_its_first_block() -> None:
    prose = "{{char}} is the guardian of the forest of Eldoria. She heals the lost."
    assert card_summary(BLOCKS + prose + "\n" + DIALOGUE) == "Seraphina is the guardian of the forest of Eldoria."
    only_markup = card_summary(SERAPHINA)
    assert only_markup == "Seraphina: caring, protective, compassionate, healing, nurturing, magical…"
    w_classic = '[character("Lin Mo")\n{\nSpecies("human")\nMind("stubborn" + "loyal")\n}]'
    assert card_summary(w_classic) == "Lin Mo: human, stubborn, loyal"
    assert card_summary("A quiet keeper of the light. She never leaves.") == "A quiet keeper of the light."
    assert card_summary("{{char}} keeps the light.", "Maren") == "Maren keeps the light."
    assert card_summary("") == ""
    sensei = "[Coding Sensei = assists {{user}} with coding-related questions, and provides example codes.]"
    assert card_summary(sensei) == \
        "Coding Sensei: assists the user with coding-related questions, and provides example codes."
    # a bracketed aside in prose is not a W++ name
    assert card_summary("[Note: draft] {{char}} sails at dawn.") == "{{char}} sails at dawn."


def test_an_imported_w_plus_plus_card_gets_a_summary_made_of_words() -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Seraphina", "description": SERAPHINA, "personality": "", "scenario": ""}}
    meta = card_files(card, "v2", "seraphina.json")[0].meta
    assert meta["summary"] == "Seraphina: caring, protective, compassionate, healing, nurturing, magical…"


def test_a_name_with_a_backslash_is_put_for_char_as_written() -> None:
    """The name is text, not a replacement template: `Dr\\Who` once raised `bad escape` (INTERNAL)."""
    assert card_summary("{{char}} keeps the light.", "Dr\\Who") == "Dr\\Who keeps the light."
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Zero\\1", "description": "{{char}} sails at dawn.", "personality": "", "scenario": ""}}
    assert card_files(card, "v2", "zero.json")[0].meta["summary"] == "Zero\\1 sails at dawn."


# -- show and story ----------------------------------------------------------------------------------


def test_show_prints_yaml_values_not_python_reprs(sample: Path, home: Path) -> None:
    made = piped("add", "金陵的官场", "--type", "note", "--tag", "讽刺", "--tag", "idea: 判案", "--json", cwd=sample,
                 home=home)
    memory_id = json.loads(made.stdout)["data"]["id"]
    shown = piped("show", memory_id, cwd=sample, home=home).stdout.splitlines()
    assert "tags: [讽刺, 'idea: 判案']" in shown and "pinned: false" in shown
    assert not [line for line in shown if "['" in line or "False" in line or "True" in line]
    assert render.shown({"mood": "wistful", "weights": [1, 2.5]}) == "{mood: wistful, weights: [1, 2.5]}"
    assert render.shown(None) == "null" and render.shown(1.0) == "1.0" and render.shown("a: b") == "a: b"


def test_story_of_a_card_without_a_timeline_says_how_to_get_one(sample: Path, home: Path) -> None:
    (sample / ".writenow/characters/seraphina.md").write_text("---\nname: Seraphina\n---\nA healer.\n", "utf-8")
    result = piped("story", "Seraphina", cwd=sample, home=home)
    assert result.returncode == 0, result.stderr
    assert "no timeline yet: add progressions or run a capture" in result.stdout
    assert "timeline" not in result.stdout.replace("no timeline yet", "")  # no empty table
    assert "no timeline yet" not in piped("story", "Lin Mo", cwd=sample, home=home).stdout


def test_context_piped_keeps_the_skills_lines_whole_in_their_box(sample: Path, home: Path) -> None:
    """Without a terminal the boxes are as wide as the tables: the skill's 81-column lines are not cut in two."""
    result = piped("context", "continue", "--document", "chapters/ch05.md", "--selection", "He drew.", cwd=sample,
                   home=home)
    assert result.returncode == 0, result.stderr
    line = "stop at a natural pause. Match the point of view, tense, rhythm and vocabulary of"
    assert any(line in row for row in result.stdout.splitlines()), result.stdout
