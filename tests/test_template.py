"""The template `membank init` copies: its examples show the format but reach no prompt until the writer
keeps them; `init --bare` gives the layout without them."""

from __future__ import annotations

from pathlib import Path

import membank

from .helpers import membank as run_cli

EXAMPLES = {"m-example-pref1", "m-example-fact1", "m-example-note1"}
MENTIONS = "Elin Hart crossed the old bridge to the Hollow Market with a smudged map."


def assembled(bank: membank.Bank) -> dict:
    return bank.call("context:assemble", {"skillId": "continue", "documentText": MENTIONS,
                                          "selection": {"start": 0, "end": len(MENTIONS)}})["data"]


def test_the_examples_reach_no_prompt_until_switched_on(tmp_path: Path, home: Path) -> None:
    membank.init(tmp_path / "novel", "Novel")
    bank = membank.open(tmp_path / "novel")
    try:
        assert bank.call("memory:list", {})["data"]["items"] == []
        listed = bank.call("memory:list", {"includeDeleted": True})["data"]["items"]
        assert {m["id"] for m in listed} == EXAMPLES  # there to read, switched off
        assert bank.call("memory:injection:preview", {})["data"]["items"] == []
        prompt = assembled(bank)
        text = prompt["systemPrompt"] + prompt["userContent"]
        for example in ("In action scenes", "left-handed", "A young mapmaker", "A night market", "forgery"):
            assert example not in text
        assert not [i for i in prompt["items"] if i["kind"] in ("card", "memory")]
        # the comment's way to switch one on works
        bank.call("memory:restore", {"id": "m-example-pref1"})
        card = tmp_path / "novel/.writenow/characters/example-hero.md"
        card.write_text(card.read_text("utf-8").replace("include: never ", "include: auto  "), "utf-8")
        bank.call("index:sync", {})
        prompt = assembled(bank)
        assert "In action scenes" in prompt["systemPrompt"] + prompt["userContent"]
        assert "A young mapmaker" in prompt["systemPrompt"] + prompt["userContent"]
    finally:
        bank.close()


def test_init_bare_has_the_layout_without_examples(tmp_path: Path, home: Path) -> None:
    created = membank.init(tmp_path / "bare", bare=True)["created"]
    bank_dir = tmp_path / "bare/.writenow"
    assert ".writenow/settings.yaml" in created and ".writenow/skills/continue.md" in created
    assert not [c for c in created if c.startswith((".writenow/memories/", ".writenow/characters/", ".writenow/world/"))]
    for section in ("memories", "characters", "world", "skills", "journal", "history"):
        assert (bank_dir / section).is_dir()
    assert not list(bank_dir.glob("memories/**/*.md")) and not list(bank_dir.glob("characters/*.md"))
    # the CLI and the channel take it too
    result = run_cli("init", str(tmp_path / "cli"), "--bare", cwd=tmp_path, home=home)
    assert result.returncode == 0, result.stderr
    assert not list((tmp_path / "cli/.writenow").glob("world/*.md")) and "switched off" not in result.stdout
    full = run_cli("init", str(tmp_path / "full"), cwd=tmp_path, home=home)
    assert "switched off (they reach no prompt)" in full.stdout  # the writer is told at once
