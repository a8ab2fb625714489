"""Smaller promises of issue 30 point 9 about the story: `membank progress` keeps the writer's comment on
a flow-style, empty or null `progressions:` line (docs/story.md); a relation whose `until` is not after
its `since` is a warning; `kg:state:update` never answers CONFLICT while its progression is in the file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from membank import Bank
from membank.domains.story import progress
from membank.files import exchange
from membank.shells.cli import app

CARD = "---\nname: Bo\nkind: character\n{line}\n---\nA fisherman.\n"


@pytest.mark.parametrize("line", ["progressions: []   # none yet", "progressions:   # none yet",
                                  "progressions: null  # none yet", "progressions: [{at: chapters/ch01.md, state: "
                                                                    "at sea}]  # none yet"])
def test_progress_keeps_the_comment_on_the_progressions_line(sample: Path, line: str) -> None:
    card = sample / ".writenow/characters/bo.md"
    card.write_text(CARD.format(line=line), "utf-8")
    got = CliRunner().invoke(app, ["progress", "Bo", "--at", "chapters/ch03.md", "--state", "ashore", "-C", str(sample)])
    assert got.exit_code == 0, got.output
    text = card.read_text("utf-8")
    assert "progressions:" in text and "# none yet" in text.split("progressions:", 1)[1].split("\n", 1)[0]
    assert "  - {at: chapters/ch03.md, state: ashore}\n" in text  # one line, as the docs say


def test_a_relation_that_ends_before_it_begins_is_a_warning(bank: Bank, sample: Path) -> None:
    card = sample / ".writenow/characters/bo.md"
    card.write_text("---\nname: Bo\nkind: character\nrelations:\n  - {to: Maren Voss, type: friend, since: "
                    "chapters/ch05.md, until: chapters/ch03.md}\n  - {to: Lin Mo, type: ally, since: "
                    "chapters/ch01.md, until: chapters/ch03.md}\n---\nA fisherman.\n", "utf-8")
    bank.sync()
    found = [d for d in bank.call("index:diagnostics", {})["data"]["items"] if d["source"].endswith("bo.md")]
    assert [(d["line"], d["severity"]) for d in found] == [(5, "warning")]
    assert "ends (until `chapters/ch03.md`) before it begins (since `chapters/ch05.md`)" in found[0]["message"]


def test_state_update_answers_ok_when_its_progression_is_in_the_file(bank: Bank, sample: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    card = sample / ".writenow/characters/edric-thorne.md"

    def editor_saves_again(path: Path, data: bytes, expected: bytes) -> str:
        """membank's swap lands, then an editor that reloaded it saves twice within milliseconds (a note
        added): the swap's check sees a newer file, as the real one does (exchange.Changed)."""
        exchange.replace_unchanged(path, data, expected)
        tmp = path.with_name(".save.tmp")
        tmp.write_bytes(data + b"\nHe limps more in the cold.\n")
        os.replace(tmp, path)
        raise exchange.Changed()

    monkeypatch.setattr(progress, "replace_unchanged", editor_saves_again)
    entity = bank.call("kg:state:update", {"name": "Edric Thorne", "at": "chapters/ch05.md", "state": "flees"})
    assert entity["ok"], entity
    assert entity["data"]["state"]["value"] == "flees"
    assert card.read_text("utf-8").count("state: flees}") == 1

    def editor_wins(path: Path, data: bytes, expected: bytes) -> str:
        tmp = path.with_name(".save.tmp")
        tmp.write_bytes(expected + b"\nAnother note.\n")
        os.replace(tmp, path)
        raise exchange.Changed()

    monkeypatch.setattr(progress, "replace_unchanged", editor_wins)
    refused: dict[str, Any] = bank.call("kg:state:update", {"name": "Edric Thorne", "at": "chapters/ch05.md",
                                                             "state": "hides"})
    assert refused["error"]["code"] == "CONFLICT" and "hides" not in card.read_text("utf-8")
