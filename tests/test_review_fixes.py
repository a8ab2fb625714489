"""Fixes from the review of issue 11: privacy decided under the write lock, validate first and
write second, the Python API refusing what the channels refuse, and a write lock that survives
file systems without file locks."""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

import membank
from membank.domains.learning import flows as learn
from membank import Bank
from membank.kernel.errors import CONFLICT, DB_ERROR, INVALID_ARGUMENT, MembankError
from membank.files import journal
from membank.kernel import clock
from membank.files.lock import WriteLock

SECRET = "Her hands smelled of lamp oil and salt"


def holding(folder: Path, words: str) -> list[str]:
    """Files under the bank folder (the derived .index/ aside) whose name or bytes hold `words`."""
    needle = words.lower()
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*")
            if ".index" not in p.parts and (needle.replace(" ", "-") in p.name.lower()
                                            or (p.is_file() and needle in p.read_bytes().decode("utf-8", "replace").lower()))]


def accept(bank: Bank, run: str, evidence: str = SECRET) -> dict[str, Any]:
    return bank.ingest_feedback(run, "polish", "accept", evidence, ["sensory"])


class BeforeTaking:
    """A bank's write lock that runs `hook` once, just before it is first taken."""

    def __init__(self, lock: WriteLock, hook: Callable[[], None]):
        self.lock, self.hook = lock, hook

    def __enter__(self) -> WriteLock:
        hook, self.hook = self.hook, lambda: None
        hook()
        return self.lock.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.lock.__exit__(*exc)


# -- 1. privacy mode turned on by another process between the call and the lock ----------------------


def test_privacy_turned_on_just_before_the_lock_holds_for_that_feedback(bank: Bank, sample: Path) -> None:
    bank.update_settings({"preferenceLearningThreshold": 1})
    other = membank.open(sample)  # "another process": its own Bank, the same files
    bank.write_lock = BeforeTaking(bank.write_lock, lambda: other.update_settings({"privacyModeEnabled": True}))
    result = accept(bank, "run-1")
    other.close()
    assert "learned" in result
    assert holding(bank.project.path, SECRET) == []
    assert holding(bank.project.path, "lamp oil") == []


# -- 2. validate first, write second ---------------------------------------------------------------------


def _learned(bank: Bank) -> dict[str, Any]:
    bank.update_settings({"preferenceLearningThreshold": 1})
    return accept(bank, "run-1")["learned"]


def test_clear_with_the_journal_linked_out_deletes_nothing(bank: Bank, tmp_path: Path) -> None:
    memory = _learned(bank)
    learned_file = bank.project.file(bank.project.rel(memory["source"]))
    before = learned_file.read_bytes()
    folder = bank.project.path / journal.FOLDER
    shutil.rmtree(folder)
    (tmp_path / "elsewhere").mkdir()
    folder.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(MembankError) as refused:
        bank.clear_preferences()
    assert refused.value.code == CONFLICT
    assert learned_file.read_bytes() == before
    assert bank.get_memory(memory["id"])["deletedAt"] is None


def test_clear_in_privacy_mode_rewords_label_worded_files(bank: Bank) -> None:
    memory = _learned(bank)
    bank.update_settings({"privacyModeEnabled": True})
    bank.clear_preferences()
    assert holding(bank.project.path, SECRET) == []
    deleted = bank.get_memory(memory["id"])
    assert deleted["deletedAt"] is not None
    assert "private" in deleted["content"]


def test_settings_written_though_label_cleanup_fails_then_cleaned_at_next_feedback(
        bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    accept(bank, "run-1")

    def full(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(learn, "replace_unchanged", full)
    assert bank.update_settings({"privacyModeEnabled": True})["privacyModeEnabled"] is True
    assert bank.settings()["privacyModeEnabled"] is True
    monkeypatch.undo()
    accept(bank, "run-2")
    assert holding(bank.project.path, SECRET) == []


def test_journal_append_does_not_follow_a_link_swapped_in_after_the_check(
        bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    target = bank.project.path / "notes.txt"
    target.write_bytes(b"mine\n")
    folder = bank.project.path / journal.FOLDER
    folder.mkdir(exist_ok=True)
    at = clock.now_precise()
    month = folder / f"{at[:7]}.jsonl"
    month.unlink(missing_ok=True)
    month.symlink_to(target)
    monkeypatch.setattr(journal, "check_target", lambda *a, **k: None)  # the link arrives after the check
    with pytest.raises(OSError):
        journal.append(bank.project.path, {"event": "x", "at": at})
    assert target.read_bytes() == b"mine\n"


def test_global_index_linked_out_is_refused_before_the_lock_is_made(bank: Bank, home: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    home.mkdir(parents=True, exist_ok=True)
    index = home / ".index"
    if index.exists():
        shutil.rmtree(index)
    index.symlink_to(outside, target_is_directory=True)
    with pytest.raises(MembankError) as refused:
        bank.update_settings({"injectionMaxItems": 7}, scope="global")
    assert refused.value.code == CONFLICT
    assert list(outside.iterdir()) == []


# -- 3. the Python API refuses what the channels refuse --------------------------------------------------


@pytest.mark.parametrize("call, field", [
    (lambda b: b.create_memory("note", "document", "x", document_id=5), "documentId"),
    (lambda b: b.create_memory("note", "document", "x", document_id="a" * 10_000), "documentId"),
    (lambda b: b.update_memory(b.create_memory("note", "project", "x")["id"], {"documentId": 5}), "patch.documentId"),
    (lambda b: b.get_memory(["a"]), "id"),
    (lambda b: b.delete_memory(["a"]), "id"),
    (lambda b: b.update_settings(["x"]), "patch"),
])
def test_python_api_names_the_wrong_field(bank: Bank, call: Callable[[Bank], Any], field: str) -> None:
    with pytest.raises(MembankError) as refused:
        call(bank)
    assert refused.value.code == INVALID_ARGUMENT
    assert refused.value.details.get("field") == field


# -- 4. the write lock ---------------------------------------------------------------------------------


def test_a_file_system_without_file_locks_still_opens_and_writes(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_locks(fd: int, op: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    bank = membank.open(sample)
    try:
        memory = bank.create_memory("note", "project", "The lighthouse keeper never sleeps.")
        assert bank.get_memory(memory["id"])["content"].strip() == "The lighthouse keeper never sleeps."
    finally:
        bank.close()


def test_any_other_lock_failure_is_a_membank_error(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fd: int, op: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(fcntl, "flock", broken)
    with pytest.raises(MembankError) as refused:
        membank.open(sample)
    assert refused.value.code == DB_ERROR


def test_two_spellings_of_one_lock_file_are_one_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMBANK_LOCK_WAIT", "0")
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    first, second = WriteLock.at(real / "write.lock"), WriteLock.at(tmp_path / "alias" / "write.lock")
    with first:
        second.acquire()  # the same thread, already holding it: reentrant, not blocked by its own lock
        second.release()
    assert os.path.exists(real / "write.lock")


def test_a_revision_past_64_bits_is_an_error_and_the_fallback_is_used(sample: Path, home: Path) -> None:
    """An app sends expectedRevision as a 64-bit number: a revision it cannot hold would conflict forever."""
    import membank

    note = sample / ".writenow" / "memories" / "notes" / "huge-revision.md"
    note.write_text("---\nid: m-huge\nrevision: 99999999999999999999999\n---\nA note.\n", "utf-8")
    bank = membank.open(sample, home=home)
    try:
        assert bank.get_memory("m-huge")["revision"] == 1
        assert any(d["source"].endswith("huge-revision.md") and d["line"] == 3
                   for d in bank.diagnostics()["items"])
    finally:
        bank.close()


def test_init_expands_a_tilde_like_every_other_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from membank.shells.cli import app

    monkeypatch.setenv("HOME", str(tmp_path / "fakehome"))
    monkeypatch.setenv("WRITENOW_HOME", str(tmp_path / "global"))
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["init", "~/novels/a", "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "fakehome" / "novels" / "a" / ".writenow" / "project.yaml").is_file()
    assert not (tmp_path / "~").exists()


def test_a_lock_file_deleted_while_it_is_taken_is_not_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`.index/` deleted between opening the lock file and locking it (faulted in-process): a lock on the
    unlinked file would exclude nobody who opens the path now, so the file at the path is the one held."""
    from membank.files import lock

    index = tmp_path / ".writenow" / ".index"
    index.mkdir(parents=True)
    real, faulted = lock._try_lock, []

    def deleted_first(fd: int) -> bool:
        if not faulted:
            faulted.append(True)
            shutil.rmtree(index)
        return real(fd)
    monkeypatch.setattr(lock, "_try_lock", deleted_first)
    held = WriteLock.at(index / "write.lock")
    with held:
        other = os.open(index / "write.lock", os.O_RDWR)  # as another process would open it now
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(other)
