"""Promise 2 against an editor: saves (temporary file + rename) racing membank's rewrites are never lost."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import pytest

from membank.bank import Bank
from membank.files import exchange
from membank.files.exchange import Changed, replace_unchanged

from .editor_race import race

# The suite's run; scripts/adversarial_saves.py runs the same race for 10 s and prints the figures.
RACE_SECONDS = float(os.environ.get("MEMBANK_RACE_SECONDS", "2"))
needs_swap = pytest.mark.skipif(not exchange.can_swap(), reason="this system has no atomic swap")


def test_an_editor_saving_every_5_ms_loses_nothing_to_updates(bank: Bank, sample: Path) -> None:
    figures = race(bank, sample, RACE_SECONDS)
    assert figures.lost == 0, figures
    assert figures.updates_ok > 0 and figures.conflicts > 0, figures  # both sides of the race were run
    assert figures.saves > 0


def _editor_save(path: Path, text: str) -> None:
    tmp = path.parent / f".{path.name}.editor.tmp"
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "note.md")


def _saving_before_swap(monkeypatch: pytest.MonkeyPatch, path: Path, saves: dict[int, str]) -> None:
    """Before the n-th swap (1-based), an editor saves `saves[n]` at `path`."""
    real: Callable[[Path, Path], bool] = exchange.swap
    calls = [0]

    def swap(a: Path, b: Path) -> bool:
        calls[0] += 1
        if calls[0] in saves:
            _editor_save(path, saves[calls[0]])
        return real(a, b)

    monkeypatch.setattr(exchange, "swap", swap)


def test_unchanged_file_is_replaced(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    how = replace_unchanged(path, b"new", b"old")
    assert path.read_text("utf-8") == "new" and _leftovers(tmp_path) == []
    assert how == ("swap" if exchange.can_swap() else "recheck")


@needs_swap
def test_a_save_landing_before_the_swap_is_swapped_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    _saving_before_swap(monkeypatch, path, {1: "editor"})
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor" and _leftovers(tmp_path) == []


@needs_swap
def test_a_save_landing_during_the_swap_back_is_the_one_that_stays(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    # save 1 lands between membank's check and its swap; save 2 while membank puts save 1 back
    _saving_before_swap(monkeypatch, path, {1: "editor 1", 2: "editor 2"})
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor 2" and _leftovers(tmp_path) == []


@needs_swap
def test_saves_landing_at_every_swap_back_are_kept_not_unlinked(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    saves = {n: f"editor {n}" for n in range(1, exchange.MAX_SWAPS + 2)}
    _saving_before_swap(monkeypatch, path, saves)
    with pytest.raises(Changed) as raised:
        replace_unchanged(path, b"membank", b"old")
    kept = raised.value.kept
    assert kept is not None and kept.name.endswith(exchange.KEPT_SUFFIX)
    newest = f"editor {exchange.MAX_SWAPS + 1}"
    assert newest in (path.read_text("utf-8"), kept.read_text("utf-8"))
    assert [p for p in _leftovers(tmp_path) if p.endswith(exchange.TEMP_SUFFIX)] == []


def test_without_a_swap_the_file_is_checked_again_before_the_rename(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exchange, "swap", lambda a, b: False)  # a file system that cannot swap
    path = tmp_path / "note.md"
    path.write_text("editor", "utf-8")
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor" and _leftovers(tmp_path) == []
    assert replace_unchanged(path, b"membank", b"editor") == "recheck"
    assert path.read_text("utf-8") == "membank"


def test_a_removed_file_is_a_change_and_is_not_recreated(tmp_path: Path) -> None:
    with pytest.raises(Changed):
        replace_unchanged(tmp_path / "note.md", b"membank", b"old")
    assert list(tmp_path.iterdir()) == []


@needs_swap
def test_update_memory_answers_conflict_when_a_save_lands_at_the_last_moment(
        bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    memory = bank.create_memory("note", "project", "The lamp is lit at dusk.")
    path = sample / memory["source"]
    saved = path.read_text("utf-8").replace("at dusk", "at dawn")
    _saving_before_swap(monkeypatch, path, {1: saved})
    envelope = bank.call("memory:update", {"id": memory["id"], "patch": {"tags": ["lamp"]}})
    assert envelope["error"]["code"] == "CONFLICT", envelope
    assert path.read_text("utf-8") == saved
    assert bank.get_memory(memory["id"])["content"] == "The lamp is lit at dawn."  # re-read for a retry


@needs_swap
def test_settings_update_answers_conflict_when_a_save_lands_at_the_last_moment(
        bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sample / ".writenow" / "settings.yaml"
    saved = path.read_text("utf-8") + "  injectionMaxItems: 7\n"
    _saving_before_swap(monkeypatch, path, {1: saved})
    envelope = bank.call("memory:settings:update", {"patch": {"injectionEnabled": False}})
    assert envelope["error"]["code"] == "CONFLICT", envelope
    assert path.read_text("utf-8") == saved
