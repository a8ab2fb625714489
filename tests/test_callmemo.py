"""The per-call memo (kernel/callmemo.py): what `context:assemble` looks at once per call — the settings,
the story order, the index's data version — is never carried into the next call."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import membank
from membank import Bank
from membank.kernel import callmemo

CH05 = "chapters/ch05.md"


def _assemble(bank: Bank) -> dict[str, Any]:
    envelope = bank.call("context:assemble", {"skillId": "continue", "documentId": CH05,
                                              "selection": {"text": "He drew. Steel rang."}})
    assert envelope["ok"], envelope
    return envelope["data"]


def _codes(d: dict[str, Any]) -> set[str]:
    return {r["code"] for r in d["diagnostics"]["reasons"]}


def test_kept_once_within_a_scope_and_made_again_outside_it() -> None:
    made: list[int] = []

    def make() -> int:
        made.append(1)
        return len(made)

    with callmemo.remembering():
        assert [callmemo.kept("k", make) for _ in range(3)] == [1, 1, 1]
        assert callmemo.kept("other", make) == 2
    with callmemo.remembering():
        assert callmemo.kept("k", make) == 3  # a new call makes it again
    assert callmemo.kept("k", make) == 4 and callmemo.kept("k", make) == 5  # no scope: no memo


def test_an_error_is_not_kept_and_another_thread_makes_its_own() -> None:
    def fail() -> int:
        raise ValueError("no")

    seen: list[int] = []
    with callmemo.remembering():
        with pytest.raises(ValueError):
            callmemo.kept("k", fail)
        assert callmemo.kept("k", lambda: 1) == 1
        import contextvars
        ctx = contextvars.copy_context()  # the scope's context, run in another thread
        t = threading.Thread(target=lambda: seen.append(ctx.run(callmemo.kept, "k", lambda: 2)))
        t.start()
        t.join()
    assert seen == [2]


def test_chapters_edited_between_two_assemblies_reach_the_second(bank: Bank, sample: Path) -> None:
    assert "STORY_POSITION_UNKNOWN" not in _codes(_assemble(bank))
    project = sample / ".writenow" / "project.yaml"
    project.write_text(project.read_text("utf-8") + "chapters: [chapters/ch01.md]\n", "utf-8")
    assert "STORY_POSITION_UNKNOWN" in _codes(_assemble(bank))  # ch05 is no longer in the story order


def test_settings_edited_between_two_assemblies_reach_the_second(bank: Bank, sample: Path) -> None:
    assert "INJECTION_DISABLED" not in _codes(_assemble(bank))
    settings = sample / ".writenow" / "settings.yaml"
    settings.write_text(settings.read_text("utf-8").replace("memory:\n", "memory:\n  injectionEnabled: false\n", 1),
                        "utf-8")
    assert "INJECTION_DISABLED" in _codes(_assemble(bank))


def test_the_index_written_between_two_assemblies_reaches_the_second(bank: Bank, sample: Path) -> None:
    """Written by another connection (another process's `membank sync`): its data version moves."""
    fact = sample / ".writenow" / "memories" / "facts" / "harbour-bell.md"
    assert "harbour bell" not in _assemble(bank)["userContent"]
    fact.write_text("---\ntype: fact\nkeys: [Steel]\n---\nSteel rang like the harbour bell at night.\n", "utf-8")
    membank.open(sample).close()  # syncs on open, on a connection of its own
    assert "harbour bell" in _assemble(bank)["userContent"]
