"""Promise 2 against an editor: saves (temporary file + rename) racing membank's rewrites are never lost."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

import pytest

from membank import Bank
from membank.files import exchange
from membank.files.exchange import Changed, replace_unchanged
from membank.files.scan import is_ignored
from membank.files.write import sweep_temps

from .editor_race import race

# The suite's run; scripts/adversarial_saves.py runs the same race for 10 s and prints the figures.
RACE_SECONDS = float(os.environ.get("MEMBANK_RACE_SECONDS", "2"))


def _swaps_here(folder: Path) -> bool:
    """Whether the file system under `folder` swaps: a system may offer the call and the file system refuse it."""
    a, b = folder / "swap-probe-a", folder / "swap-probe-b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    try:
        return exchange.swap(a, b) and a.read_bytes() == b"b"
    except OSError:
        return False
    finally:
        a.unlink()
        b.unlink()


@pytest.fixture
def needs_swap(tmp_path: Path) -> None:
    if not _swaps_here(tmp_path):
        pytest.skip("the file system under the test folder cannot swap two names atomically")


def test_an_editor_saving_every_5_ms_loses_nothing_to_updates(bank: Bank, sample: Path) -> None:
    figures = race(bank, sample, RACE_SECONDS)
    # ok and CONFLICT answers depend on scheduling; the hooked tests below cover each path
    assert figures.lost == 0, figures
    assert figures.updates_ok + figures.conflicts > 0 and figures.saves > 0, figures


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


@pytest.mark.usefixtures("needs_swap")
def test_a_save_landing_before_the_swap_is_swapped_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    _saving_before_swap(monkeypatch, path, {1: "editor"})
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor" and _leftovers(tmp_path) == []


@pytest.mark.usefixtures("needs_swap")
def test_a_save_landing_during_the_swap_back_is_the_one_that_stays(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    # save 1 lands between membank's check and its swap; save 2 while membank puts save 1 back
    _saving_before_swap(monkeypatch, path, {1: "editor 1", 2: "editor 2"})
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor 2" and _leftovers(tmp_path) == []


@pytest.mark.usefixtures("needs_swap")
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


@pytest.mark.usefixtures("needs_swap")
def test_a_save_reusing_the_inode_number_of_membanks_freed_file_is_not_deleted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    # save 1 lands before the swap; saves 2 and 3 while membank compares: save 2 frees membank's
    # file, and save 3's new file may get its inode number (ext4 reuses a freed one at once)
    real: Callable[[Path, Path], bool] = exchange.swap
    calls = [0]

    def swap(a: Path, b: Path) -> bool:
        calls[0] += 1
        if calls[0] == 1:
            _editor_save(path, "editor 1")
        elif calls[0] == 2:
            _editor_save(path, "editor 2")
            _editor_save(path, "editor 3")
        return real(a, b)

    monkeypatch.setattr(exchange, "swap", swap)
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor 3" and _leftovers(tmp_path) == []


@pytest.mark.usefixtures("needs_swap")
def test_a_save_landing_after_the_swap_makes_the_update_a_conflict(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    real: Callable[[Path, Path], bool] = exchange.swap

    def swap(a: Path, b: Path) -> bool:
        done = real(a, b)
        _editor_save(path, "editor")  # after membank's file is in place, before the old one is gone
        return done

    monkeypatch.setattr(exchange, "swap", swap)
    with pytest.raises(Changed):
        replace_unchanged(path, b"membank", b"old")
    assert path.read_text("utf-8") == "editor" and _leftovers(tmp_path) == []


@pytest.mark.usefixtures("needs_swap")
def test_a_swap_back_the_file_system_refuses_keeps_the_save_aside(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "note.md"
    path.write_text("old", "utf-8")
    real: Callable[[Path, Path], bool] = exchange.swap
    calls = [0]

    def swap(a: Path, b: Path) -> bool:
        calls[0] += 1
        if calls[0] == 1:
            _editor_save(path, "editor")
            return real(a, b)
        return False  # the swap back is refused

    monkeypatch.setattr(exchange, "swap", swap)
    with pytest.raises(Changed) as raised:
        replace_unchanged(path, b"membank", b"old")
    kept = raised.value.kept
    assert kept is not None and kept.read_text("utf-8") == "editor"
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


@pytest.mark.usefixtures("needs_swap")
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


@pytest.mark.usefixtures("needs_swap")
def test_settings_update_answers_conflict_when_a_save_lands_at_the_last_moment(
        bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = sample / ".writenow" / "settings.yaml"
    saved = path.read_text("utf-8") + "  injectionMaxItems: 7\n"
    _saving_before_swap(monkeypatch, path, {1: saved})
    envelope = bank.call("memory:settings:update", {"patch": {"injectionEnabled": False}})
    assert envelope["error"]["code"] == "CONFLICT", envelope
    assert path.read_text("utf-8") == saved


def _temp_file(folder: Path, body: bytes) -> Path:
    tmp = folder / f".note.md.0123abcd{exchange.TEMP_SUFFIX}"
    tmp.write_bytes(body)
    return tmp


def test_the_sweep_judges_a_swapped_out_file_by_its_rename_not_its_old_mtime(tmp_path: Path) -> None:
    tmp = _temp_file(tmp_path, b"an editor's save, swapped out")
    old = time.time() - 3600
    os.utime(tmp, (old, old))  # a swap leaves the displaced file's old mtime; its ctime is now
    assert sweep_temps(tmp_path) == []
    assert tmp.read_bytes() == b"an editor's save, swapped out"


def test_the_sweep_sets_aside_what_may_be_a_save_and_deletes_what_holds_no_word_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "note.md").write_bytes(b"membank's new version, swapped in")
    full = _temp_file(tmp_path, b"an editor's save, swapped out")
    empty = tmp_path / f".other.md.89abcdef{exchange.TEMP_SUFFIX}"  # half-written
    empty.write_bytes(b"")
    unlanded = tmp_path / f".new.md.4567cdef{exchange.TEMP_SUFFIX}"  # a create killed before its link
    unlanded.write_bytes(b"a memory that was never created")
    (tmp_path / "same.md").write_bytes(b"same bytes")
    copy = tmp_path / f".same.md.0badcafe{exchange.TEMP_SUFFIX}"
    copy.write_bytes(b"same bytes")
    later = time.time() + 3600
    assert sweep_temps(tmp_path, now=later) == sorted([full.name, empty.name, unlanded.name, copy.name])
    kept = [p for p in tmp_path.iterdir() if p.name.endswith(exchange.KEPT_SUFFIX)]
    assert [p.read_bytes() for p in kept] == [b"an editor's save, swapped out"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([kept[0].name, "note.md", "same.md"])
    assert is_ignored(kept[0].name)  # neither indexed ...
    assert sweep_temps(tmp_path, now=later) == []  # ... nor swept


def _hostile_bank(bank: Path) -> None:
    """Temporary files everywhere a sweep might or might not look: sections nested deep, hidden and
    symlinked folders inside and outside them, the journal, the bank's top, a section that is a file
    and one that is a link."""
    for folder in ("memories/a/b/c", "memories/.hidden", "characters", "world/x y/林默", "journal/2026",
                   "other/deep", ".index", "outside-target"):
        (bank / folder).mkdir(parents=True, exist_ok=True)
        _temp_file(bank / folder, b"")  # empty: disposable once stale
    (bank / "memories/a/b/c/.x.md.feedf00d.membank-tmp").write_bytes(b"")
    (bank / "memories/linked").symlink_to(bank / "other")  # a folder link in a section: not walked by either
    (bank / "characters/dir.md.0123abcd.membank-tmp").mkdir()  # a folder with a temporary name
    (bank / "characters/.dir.md.0123abcd.membank-tmp").mkdir()
    (bank / "characters/.ln.md.0123abcd.membank-tmp").symlink_to(bank / "other/deep")  # a link with one
    (bank / "skills").write_text("a file where a section should be", "utf-8")
    (bank / "world/link").symlink_to(bank / "outside-target")


def test_the_sweep_riding_the_scan_clears_what_a_full_walk_clears(tmp_path: Path) -> None:
    from membank.files.scan import SECTIONS, BankRoot, scan

    later = time.time() + 3600
    full, ride = tmp_path / "full", tmp_path / "ride"
    for bank in (full, ride):
        _hostile_bank(bank)
    temps: list[str] = []
    scan(BankRoot("project", ride), True, temps)
    expected = sweep_temps(full, now=later)
    assert sweep_temps(ride, now=later, skip=SECTIONS, found=temps) == expected
    assert sorted(p.relative_to(ride).as_posix() for p in ride.rglob("*")) == \
        sorted(p.relative_to(full).as_posix() for p in full.rglob("*"))
    assert "memories/a/b/c/.x.md.feedf00d.membank-tmp" in expected
    assert not any(e.startswith((".index/", "memories/.hidden/")) for e in expected)
