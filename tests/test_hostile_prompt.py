"""Hostile checks of issue 31's prompt, working memory, watcher and displays, and issue 29's book scoping:
what a hostile writer or a demanding app developer would try. Each test failed before its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.table import Table
from rich.text import Text

from membank import Bank
from membank.domains.cards.summary import card_summary
from membank.domains.context import surrounding
from membank.domains.context.budget import fit
from membank.domains.context.layers import Piece, serialise
from membank.shells import render
from membank.kernel.limits import MAX_LISTED
from membank.shells.cells import clip, visible
from membank.shells.watchreport import Report, lines, listed

from .helpers import membank


def _layer2_prompt(session: list[str]) -> list[Piece]:
    return [Piece(0, "", "identity", "identity"), Piece(1, "", "skill", "continue"),
            Piece(2, "project", "project", "Title: T"),
            Piece(2, "characters", "card", "Maren Voss, harbour pilot. " * 20, "maren"),
            *[Piece(5, "session", "working", text, f"w-{i}", "session:s1") for i, text in enumerate(session)],
            Piece(5, "instruction", "instruction", "Continue"),
            Piece(5, "selection", "selection", "He drew. " * 30)]


def test_working_memory_never_moves_the_system_prompt() -> None:
    """A session's entries gave way after Layer 2, so a large working memory pushed an always-on card out
    of the systemPrompt: the provider's prefix cache missed on every add."""
    plain = serialise(fit(_layer2_prompt([]), {}, 250).pieces)
    held = serialise(fit(_layer2_prompt(["- [note] " + "word " * 300, "- [note] short"]), {}, 250).pieces)
    assert held.system_prompt == plain.system_prompt and held.prefix_hash == plain.prefix_hash
    assert "Maren Voss" in held.system_prompt


CRLF = "First paragraph, line one\r\nline two\r\n\r\nSecond paragraph with words and no end"


def test_crlf_text_is_cut_at_its_blank_lines() -> None:
    """A Windows editor's document: a blank line is \\r\\n\\r\\n, which the paragraph cut did not see, so
    every cut was a hard one (or a sentence) in the middle of a paragraph."""
    assert surrounding.before(CRLF, 60) == surrounding.Side("Second paragraph with words and no end", "paragraph")
    assert surrounding.after(CRLF, 45) == surrounding.Side("First paragraph, line one\r\nline two", "paragraph")
    assert [c.how for c in surrounding.cuts(CRLF, "before", 1)] == ["paragraph"]


def test_a_hard_cut_never_splits_a_character() -> None:
    """Offsets are code points, so a hard cut could start the text with a lone combining accent, a skin
    tone without its hand, or end it on a zero-width joiner (half a family emoji)."""
    assert surrounding.before("A" * 10 + "e\u0301" + "B" * 5, 6).text == "B" * 5
    assert surrounding.before("x👍🏽y", 2).text == "y"
    assert surrounding.after("x👨\u200d👩\u200d👧y", 3).text == "x"
    assert surrounding.after("abcdef", 3) == surrounding.Side("abc", "hard")  # plain text: as before


ESCAPES = "\x1b[2J\x1b]0;pwned\x07\x9b31m"  # clear the screen, retitle the window, a C1 CSI


def test_the_writers_text_is_shown_never_run_by_the_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """A card, memory or file named with escape sequences: list/show/story/doctor/watch printed them raw,
    so a shared project could clear the writer's screen or retitle the window."""
    render.plain_columns(("id", "source"), [(f"m-{ESCAPES}", f"memories/{ESCAPES}.md")], title=ESCAPES)
    render.diagnostic_lines([{"severity": "warning", "source": ESCAPES, "line": 3, "message": ESCAPES}])
    render.out.print(Text(f"made elsewhere {ESCAPES}"))
    table = Table("name")
    table.add_row(f"林{ESCAPES}")
    render.out.print(table)
    shown = capsys.readouterr().out
    assert not any(c in shown for c in "\x1b\x07\x9b"), repr(shown)
    assert "\u241b[2J" in shown  # shown as the control picture of ESC
    assert visible("plain 林 text\n\ttabbed") == "plain 林 text\n\ttabbed"


def test_story_shows_a_card_named_with_escapes(sample: Path, home: Path) -> None:
    (sample / ".writenow" / "characters" / "evil.md").write_text(
        '---\nname: "Evil\\e[2J"\nkind: character\nstate: "\\e]0;pwned\\a"\n---\nbody\n', "utf-8")
    done = membank("story", cwd=sample, home=home)
    assert done.returncode == 0 and "Evil\u241b[2J" in done.stdout and "\x1b" not in done.stdout


def _problem(i: int) -> dict[str, object]:
    return {"source": f".writenow/memories/b{i:05d}.md", "line": 3, "severity": "error", "message": f"broken {i}"}


def test_a_diagnostic_flood_is_bounded() -> None:
    """A checkout that breaks 10,000 files: index:changed carried every problem (~5 MB on one line, over
    the 4 MiB a line may hold) and `membank watch` printed thousands of lines a batch."""
    report = Report(["a.md"], [_problem(i) for i in range(1000)], [_problem(i) for i in range(3)])
    sent = listed(report)
    assert len(sent["diagnostics"]) == MAX_LISTED and sent["diagnosticsTotal"] == 1000
    assert sent["fixed"] == report.fixed and sent["fixedTotal"] == 3
    shown = lines(report)
    assert len(shown) == 20 + 1 + 3 and shown[20].startswith("… and 980 more new")
    assert shown[-1] == "fixed .writenow/memories/b00002.md:3: broken 2"


def _skill(root: Path, max_tokens: int) -> None:
    (root / ".writenow" / "skills" / "t.md").write_text(
        "---\nid: t\nname: T\ncontext_rules:\n  surrounding: 400\n  characters: true\n  project-settings: true\n"
        f"  preferences: true\n  memories: 8\n  max_tokens: {max_tokens}\n---\nDo it.\n", "utf-8")


def test_nothing_disappears_silently_under_a_tiny_budget(bank: Bank, sample: Path) -> None:
    """Every piece of a roomy prompt is kept or listed in `dropped` with its own kind: an always-on card's
    story-time state found after Layer 4 was full was listed as a `card`, so an app matching kept and
    dropped pieces by kind lost it."""
    def prompt(max_tokens: int) -> dict[str, Any]:
        _skill(sample, max_tokens)
        bank.sync()
        envelope = bank.call("context:assemble", {"skillId": "t", "documentId": "chapters/ch05.md",
                                                  "documentText": "林默看着 Maren Voss。" * 50,
                                                  "selection": {"start": 96, "end": 100}, "instruction": "Maren"})
        assert envelope["ok"], envelope
        return envelope["data"]  # type: ignore[no-any-return]

    def key(piece: dict[str, Any]) -> tuple[Any, ...]:
        return piece["layer"], piece["kind"], piece["id"], piece["source"]

    roomy, tiny = prompt(200_000), prompt(100)
    assert {key(i) for i in roomy["items"]} <= {key(i) for i in tiny["items"] + tiny["diagnostics"]["dropped"]}
    assert any(i["kind"] == "state" for i in roomy["items"])


COMMAS = "雨村看着远处的山，" * 500  # no blank line, no sentence end: 4,500 code points, ~4,000 tokens


def test_text_without_sentence_ends_gives_its_far_half_not_a_whole_side() -> None:
    """A run of commas had no cut but "all": the budget left out the whole text after the selection, then
    the card the selection names, while ~3,700 tokens of text before it stayed (issue 31.1 again)."""
    assert [(c.kept, c.how) for c in surrounding.cuts(COMMAS, "before", 2250)] == [(2250, "hard")]
    assert [c.how for c in surrounding.cuts(COMMAS, "after", 0)] == ["all"]
    card = Piece(4, "cards", "card", "林默，沉默寡言的剑客。" * 5, "lin-mo",
                 reason={"match": "林默", "where": "selection", "offset": 0, "depth": 0})
    pieces = [Piece(0, "", "identity", "identity"), Piece(1, "", "skill", "continue"), card,
              Piece(5, "before", "before", COMMAS), Piece(5, "selection", "selection", "林默"),
              Piece(5, "after", "after", COMMAS)]
    fitted = fit(pieces, {}, 6000)
    kept = {p.kind: p for p in fitted.pieces}
    assert "card" in kept and not fitted.over_budget
    assert kept["before"].text and kept["after"].text  # both sides keep their near halves
    assert all("cut back hard" in d.reason for d in fitted.dropped)
    one_end = "远。" + COMMAS  # a single sentence end at the far edge: no better
    assert [(c.kept, c.how) for c in surrounding.cuts(one_end, "before", 2250)] == [(4500, "sentence"), (2250, "hard")]


def test_a_clipped_column_never_ends_on_a_joiner() -> None:
    assert clip("👨\u200d👩\u200d👧 family", 3) == "👨…"
    assert clip("林黛玉进了荣国府", 5) == "林黛…" and clip("e\u0301tude", 3) == "e\u0301t…"


def _around(bank: Bank, document: str, selected: str) -> dict[str, Any]:
    envelope = bank.call("context:assemble", {"skillId": "continue", "documentText": document,
                                              "selection": {"text": selected}})
    assert envelope["ok"], envelope
    return envelope["data"]  # type: ignore[no-any-return]


def test_a_selection_not_in_the_document_says_so(bank: Bank) -> None:
    """A selection by text the document does not hold (a typo, another version) got no surrounding text
    and no reason: the app could not tell a lost selection from an empty document."""
    lost = _around(bank, "The tide came in.\n\nMaren waited.", "Maren ran")
    assert "SELECTION_NOT_FOUND" in [r["code"] for r in lost["diagnostics"]["reasons"]]
    found = _around(bank, "The tide came in.\r\n\r\nMaren waited.\r\nThe gulls cried.", "Maren waited.\nThe gulls")
    assert "The tide came in." in found["userContent"]  # the app's LF selection in a CRLF document is found
    assert "SELECTION_NOT_FOUND" not in [r["code"] for r in found["diagnostics"]["reasons"]]


def test_a_hostile_w_plus_plus_description_costs_one_scan() -> None:
    """Nested brackets were taken out one level a pass over the whole text, and `{` followed by colons
    backtracked once per colon: 30,000 of either cost ~35 s and ~7 s per summary (an import makes it
    three times, on the sidecar's write lane). Now the first 10,000 code points, 64 levels at most."""
    assert card_summary("[" * 30_000 + "x" + "]" * 30_000 + " Prose.") == ""
    assert card_summary("{" + ":" * 30_000) == ""
    assert card_summary('[Sera\'s Personality= "caring", "shy"] She guards the glade. More.') == "She guards the glade."
    assert card_summary('[Sera\'s Personality= "caring", "shy"]') == "Sera: caring, shy"
    assert card_summary('{see [x="1"]} Prose here.') == "Prose here."


def test_a_tag_written_true_is_the_word_true(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "memories" / "odd-tags.md").write_text(
        "---\nid: m-odd-tags\ntype: fact\ntags: [yes, true, 3, 贾雨村]\n---\nbody\n", "utf-8")
    bank.sync()
    memory = bank.call("memory:get", {"id": "m-odd-tags"})["data"]
    assert memory["tags"] == ["true", "true", "3", "贾雨村"]  # YAML 1.1 reads yes as true too


def test_session_entries_over_working_n_are_listed_as_dropped(bank: Bank, sample: Path) -> None:
    """`working: N` chose the entries that fit and left the others out of the prompt without a word."""
    (sample / ".writenow" / "skills" / "w.md").write_text(
        "---\nid: w\nname: W\ncontext_rules:\n  surrounding: 100\n  working: 20\n---\nGo on.\n", "utf-8")
    bank.sync()
    for content, importance in (("short", 0.9), ("a long entry " * 10, 0.8), ("tiny", 0.1)):
        assert bank.call("memory:working:add", {"sessionId": "s1", "kind": "note", "content": content,
                                                "importance": importance})["ok"]
    data = bank.call("context:assemble", {"skillId": "w", "documentText": "x", "selection": {"text": "x"},
                                          "sessionId": "s1"})["data"]
    kept = [i["reason"]["importance"] for i in data["items"] if i["kind"] == "working"]
    dropped = [d for d in data["diagnostics"]["dropped"] if d["kind"] == "working"]
    assert kept == [0.9, 0.1] and len(dropped) == 1 and dropped[0]["layer"] == 5
    assert dropped[0]["source"] == "session:s1" and "context_rules.working" in dropped[0]["reason"]
    assert data["diagnostics"]["truncated"] == len(data["diagnostics"]["dropped"])


def test_init_bare_into_an_existing_project_adds_only_what_is_missing(sample: Path, home: Path) -> None:
    before = sorted(p.relative_to(sample) for p in (sample / ".writenow").rglob("*") if p.is_file())
    done = membank("init", "--bare", cwd=sample, home=home)
    after = sorted(p.relative_to(sample) for p in (sample / ".writenow").rglob("*") if p.is_file())
    assert done.returncode == 0 and set(before) <= set(after)  # nothing of the writer's removed or replaced
    made = len(after) - len(before)
    assert (f"{made} file created" if made == 1 else f"{made} files created" if made else "already set up") \
        in done.stdout, done.stdout


RULES = "GAME RULES: roll a d20 before every action."


def _role_play_card() -> dict[str, Any]:
    """A V2 card whose own book holds always-on game rules (the shape of real role-play cards)."""
    rules = {"id": 0, "keys": ["rules"], "content": RULES, "comment": "Rules", "constant": True, "enabled": True,
             "insertion_order": 100, "selective": False, "secondary_keys": [], "extensions": {}}
    data = {"name": "Seraphine Vale", "description": "A forest guardian. She heals travellers.",
            "personality": "Kind.", "scenario": "", "first_mes": "Welcome.", "mes_example": "",
            "creator_notes": "", "system_prompt": "", "post_history_instructions": "", "alternate_greetings": [],
            "tags": [], "creator": "", "character_version": "", "extensions": {},
            "character_book": {"name": "Vale Rules", "entries": [rules]}}
    return {"spec": "chara_card_v2", "spec_version": "2.0", "data": data}


def test_a_world_only_skill_gets_no_book_of_a_character_it_leaves_out(bank: Bank, sample: Path,
                                                                      tmp_path: Path) -> None:
    """A character-scoped book takes part only with its character in the prompt; an always-on character
    that a skill's rules leave out (`characters` not asked for) still brought its game rules in."""
    path = tmp_path / "seraphine.json"
    path.write_text(json.dumps(_role_play_card()), "utf-8")
    imported = bank.call("card:import", {"paths": [str(path)]})
    assert imported["ok"], imported
    card = sample / imported["data"]["items"][0]["target"]
    card.write_text(card.read_text("utf-8").replace("\nsummary:", "\ninclude: always\nsummary:", 1), "utf-8")
    (sample / ".writenow" / "skills" / "world-only.md").write_text(
        "---\nid: world-only\nname: W\ncontext_rules:\n  surrounding: 100\n  project-settings: true\n---\nGo.\n",
        "utf-8")
    bank.sync()

    def prompt(skill: str) -> str:
        data = bank.call("context:assemble", {"skillId": skill, "documentText": "The rain fell.",
                                              "selection": {"text": "rain"}})["data"]
        return str(data["systemPrompt"]) + str(data["userContent"])

    assert RULES not in prompt("world-only")
    assert RULES in prompt("rewrite") and "A forest guardian" in prompt("rewrite")  # with her: as before


def test_a_list_of_thousands_of_bad_tags_is_a_few_diagnostics(bank: Bank, sample: Path) -> None:
    """Each bad item of a list was its own diagnostic: `tags` holding 5,000 lists made 5,000 doctor lines
    (and as many in every index:changed) for one file."""
    items = ", ".join(f"[t{i}]" for i in range(5000))
    (sample / ".writenow" / "memories" / "many.md").write_text(
        f"---\nid: m-many\ntype: fact\ntags: [good, {items}]\n---\nbody\n", "utf-8")
    bank.sync()
    mine = [d["message"] for d in bank.call("index:diagnostics", {})["data"]["items"]
            if d["source"] == ".writenow/memories/many.md"]
    assert len(mine) == 4 and sum("4,997 more items" in m for m in mine) == 1, mine
    assert bank.call("memory:get", {"id": "m-many"})["data"]["tags"] == ["good"]
