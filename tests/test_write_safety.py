"""Promises 2 and 7 for every writer: nothing written through a link out of the bank, nothing
written that membank's own reader refuses, no temporary file left behind."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

import membank
from membank import Bank
from membank.domains.learning.channels import EVIDENCE_LIMIT
from membank.files.project import ProjectError, init
from membank.files import write
from membank.files.write import STALE_AFTER

from .helpers import write_memory


def _refused(envelope: dict, code: str, cited: str, outside: Path) -> None:
    assert envelope["ok"] is False, envelope
    error = envelope["error"]
    assert error["code"] == code and cited in error["message"], error
    assert str(outside) not in json.dumps(envelope)  # never an absolute path


def _create(bank: Bank, **payload: object) -> dict:
    return bank.call("memory:create", {"type": "fact", "scope": "project", "content": "The tide is high.", **payload})


# -- links out of the bank ---------------------------------------------------------------------


def test_a_memory_folder_linked_outside_is_never_written(bank: Bank, sample: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (sample / ".writenow/memories/fact").symlink_to(outside, target_is_directory=True)
    _refused(_create(bank), "CONFLICT", ".writenow/memories/fact", outside)
    assert list(outside.iterdir()) == []


def test_a_dangling_link_to_a_folder_outside_is_not_created(bank: Bank, sample: Path, tmp_path: Path) -> None:
    outside = tmp_path / "not-yet"
    (sample / ".writenow/memories/fact").symlink_to(outside, target_is_directory=True)
    _refused(_create(bank), "CONFLICT", ".writenow/memories/fact", tmp_path)
    assert not outside.exists()


def test_the_memories_folder_linked_outside_refuses_global_and_project(bank: Bank, sample: Path, home: Path,
                                                                      tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "note").mkdir(parents=True)
    shutil.rmtree(home / "memories")
    (home / "memories").symlink_to(outside, target_is_directory=True)
    envelope = bank.call("memory:create", {"type": "note", "scope": "global", "content": "Coffee, black."})
    _refused(envelope, "CONFLICT", "global:memories", outside)
    assert list((outside / "note").iterdir()) == []


def test_an_update_through_a_folder_that_became_a_link_out_is_refused(bank: Bank, sample: Path, tmp_path: Path) -> None:
    memory = bank.create_memory("fact", "project", "The bell rings twice.")
    folder = sample / ".writenow/memories/fact"
    outside = tmp_path / "outside"
    shutil.move(folder, outside)
    folder.symlink_to(outside, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    envelope = bank.call("memory:update", {"id": memory["id"], "patch": {"tags": ["bell"]}})
    _refused(envelope, "CONFLICT", ".writenow/memories/fact", outside)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_a_journal_file_linked_outside_gets_no_feedback(bank: Bank, sample: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes(b"")
    month = time.strftime("%Y-%m", time.gmtime())
    (sample / f".writenow/journal/{month}.jsonl").symlink_to(outside)
    envelope = bank.call("memory:preferences:ingest", {"runId": "r1", "skillId": "polish", "action": "accept",
                                                       "evidenceRef": "shorter sentences"})
    _refused(envelope, "CONFLICT", f".writenow/journal/{month}.jsonl", outside)
    assert outside.read_bytes() == b""


def test_a_journal_folder_linked_outside_gets_no_feedback(bank: Bank, sample: Path, tmp_path: Path) -> None:
    outside = tmp_path / "journal"
    shutil.move(sample / ".writenow/journal", outside)
    (sample / ".writenow/journal").symlink_to(outside, target_is_directory=True)
    before = {p.name: p.read_bytes() for p in outside.iterdir()}
    envelope = bank.call("memory:preferences:clear", {})
    _refused(envelope, "CONFLICT", ".writenow/journal", outside)
    assert {p.name: p.read_bytes() for p in outside.iterdir()} == before


def test_a_journal_file_that_is_a_fifo_is_refused_not_fed(bank: Bank, sample: Path) -> None:
    month = time.strftime("%Y-%m", time.gmtime())
    os.mkfifo(sample / f".writenow/journal/{month}.jsonl")
    envelope = bank.call("memory:preferences:ingest", {"runId": "r1", "skillId": "polish", "action": "accept",
                                                       "evidenceRef": "shorter sentences"})
    assert envelope["error"]["code"] == "DB_ERROR" and "regular file" in envelope["error"]["message"]


def test_settings_linked_outside_are_not_written_and_the_link_stays(bank: Bank, sample: Path, tmp_path: Path) -> None:
    outside = tmp_path / "settings.yaml"
    shutil.move(sample / ".writenow/settings.yaml", outside)
    before = outside.read_bytes()
    (sample / ".writenow/settings.yaml").symlink_to(outside)
    envelope = bank.call("memory:settings:update", {"patch": {"injectionMaxItems": 5}})
    _refused(envelope, "CONFLICT", ".writenow/settings.yaml", outside)
    assert outside.read_bytes() == before and (sample / ".writenow/settings.yaml").is_symlink()


def test_init_writes_nothing_through_links_out(tmp_path: Path) -> None:
    root = tmp_path / "novel"
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / ".writenow").mkdir(parents=True)
    (root / ".writenow/skills").symlink_to(outside, target_is_directory=True)
    (root / ".writenow/README.md").symlink_to(outside / "README.md")  # dangling: copying would follow it
    with pytest.raises(ProjectError) as raised:
        init(root)
    assert ".writenow/skills" in str(raised.value) and str(tmp_path) not in str(raised.value)
    assert list(outside.iterdir()) == []


def test_init_keeps_a_dangling_link_the_writer_made(tmp_path: Path) -> None:
    root = tmp_path / "novel"
    (root / ".writenow").mkdir(parents=True)
    (root / ".writenow/README.md").symlink_to(root / ".writenow/notes-to-self.md")  # inside, not there yet
    _, created = init(root)
    assert ".writenow/README.md" not in created and ".writenow/project.yaml" in created
    assert (root / ".writenow/README.md").is_symlink() and not (root / ".writenow/notes-to-self.md").exists()


# -- validate first, write second ----------------------------------------------------------------


def _memory_files(sample: Path) -> list[Path]:
    return sorted((sample / ".writenow/memories").rglob("*"))


# "林" is 3 bytes in UTF-8: 400,000 of them pass the payload's character bound (1,048,576) and
# reach the bank's own check of the file's bytes; the "x" case is stopped by the character bound
@pytest.mark.parametrize(("content", "said"), [("A NUL \x00 in the middle.", "NUL"),
                                               ("x" * (1024 * 1024 + 1), "1,048,576 characters"),
                                               ("林" * 400_000, "larger than 1 MiB")],
                         ids=["nul", "over-1-mib-characters", "over-1-mib-bytes"])
def test_content_membank_cannot_read_is_refused_before_writing(bank: Bank, sample: Path, content: str, said: str) -> None:
    before = _memory_files(sample)
    envelope = _create(bank, content=content)
    assert envelope["error"]["code"] == "INVALID_ARGUMENT" and envelope["error"]["details"]["field"] == "content"
    assert said in envelope["error"]["message"]  # which check stopped it
    assert _memory_files(sample) == before
    reopened = membank.open(sample)
    try:
        assert bank.call("index:diagnostics", {})["data"]["items"] == reopened.diagnostics()["items"]
    finally:
        reopened.close()


def test_metadata_over_1_mib_names_metadata(bank: Bank, sample: Path) -> None:
    before = _memory_files(sample)
    envelope = _create(bank, metadata={"notes": "y" * (1024 * 1024)})  # over one value's character bound
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"]["field"].split(".")[0] == "metadata"
    assert _memory_files(sample) == before


def test_metadata_whose_bytes_pass_1_mib_names_metadata(bank: Bank, sample: Path) -> None:
    """Every value within the payload bounds, the file over 1 MiB: the bank's byte check refuses it."""
    before = _memory_files(sample)
    envelope = _create(bank, metadata={f"part{i}": "林" * 30_000 for i in range(15)})  # 450,000 characters, 1.35 MB
    assert envelope["error"]["code"] == "INVALID_ARGUMENT" and envelope["error"]["details"]["field"] == "metadata"
    assert "1 MiB" in envelope["error"]["message"]
    assert _memory_files(sample) == before


def test_an_update_over_1_mib_leaves_the_file_alone(bank: Bank, sample: Path) -> None:
    memory = bank.create_memory("note", "project", "Short.")
    path = sample / memory["source"]
    before = path.read_bytes()
    envelope = bank.call("memory:update", {"id": memory["id"], "patch": {"content": "z" * (1024 * 1024)}})
    assert envelope["error"]["code"] == "INVALID_ARGUMENT" and envelope["error"]["details"]["field"] == "patch.content"
    assert path.read_bytes() == before
    nul = bank.call("memory:update", {"id": memory["id"], "patch": {"content": "a\x00b"}})
    assert nul["error"]["details"]["field"] == "patch.content" and path.read_bytes() == before


def test_an_update_keeps_working_on_a_file_with_the_writers_own_mistakes(bank: Bank, sample: Path) -> None:
    path = write_memory(sample, "note/odd.md", "Odd but readable.", id="m-odd", type="note", confidence="high")
    bank.sync()
    envelope = bank.call("memory:update", {"id": "m-odd", "patch": {"tags": ["odd"]}})
    assert envelope["ok"], envelope
    assert "confidence: high" in path.read_text("utf-8")


def test_a_lone_surrogate_is_refused_not_written(bank: Bank, sample: Path) -> None:
    before = _memory_files(sample)
    envelope = _create(bank, tags=["ok", "bad \ud800"])
    assert envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
    assert _memory_files(sample) == before


def _ingest(bank: Bank, evidence: str, run: str = "r") -> dict:
    return bank.call("memory:preferences:ingest", {"runId": run, "skillId": "polish", "action": "accept",
                                                   "evidenceRef": evidence})


def test_an_evidence_ref_over_the_limit_is_refused_and_not_journalled(bank: Bank, sample: Path) -> None:
    journal = sorted((sample / ".writenow/journal").glob("*"))
    sizes = [p.stat().st_size for p in journal]
    envelope = _ingest(bank, "long " * 240_000)  # 1.2 MB
    assert envelope["error"]["code"] == "INVALID_ARGUMENT" and envelope["error"]["details"]["field"] == "evidenceRef"
    assert sorted((sample / ".writenow/journal").glob("*")) == journal
    assert [p.stat().st_size for p in journal] == sizes


def test_evidence_at_the_limit_makes_a_learned_file_membank_reads(bank: Bank, sample: Path) -> None:
    phrase = ("more dialogue " * EVIDENCE_LIMIT)[:EVIDENCE_LIMIT]
    for run in ("r1", "r2"):  # the sample project learns after 2
        data = _ingest(bank, phrase, run)["data"]
    assert "learned" in data
    learned = sample / data["learned"]["source"]
    fresh = membank.open(sample)
    try:
        assert fresh.get_memory(data["learned"]["id"])["content"].startswith("Prefer: more dialogue")
        assert not [d for d in fresh.diagnostics()["items"] if d["source"] == data["learned"]["source"]]
    finally:
        fresh.close()
    assert learned.stat().st_size < 4 * EVIDENCE_LIMIT


def test_a_journal_with_huge_evidence_writes_no_unreadable_learned_file(bank: Bank, sample: Path) -> None:
    from membank.domains.learning.decisions import PREFER, normalize, signal_key

    # a line from before the limit (or edited by hand): the signal's first phrase is 1.2 MB long
    key = signal_key(PREFER, normalize("tighter pacing"))
    line = {"event": "feedback", "at": "2020-01-01T00:00:00.000000Z", "signalKey": key, "weight": 1.0,
            "runId": "old", "evidence": "huge " * 240_000, "tags": []}
    (sample / ".writenow/journal/2020-01.jsonl").write_text(json.dumps(line) + "\n", "utf-8")
    bank.sync()
    data = _ingest(bank, "tighter pacing")["data"]  # reaches the threshold of 2
    assert data["count"] == 2.0 and "learned" not in data  # refused before writing; the signal still counts
    assert not list((sample / ".writenow/memories").rglob("*.md.*"))  # no temporary file either
    assert not [d for d in bank.diagnostics()["items"] if d["severity"] == "error"]


# -- temporary files -----------------------------------------------------------------------------


def _temp(folder: Path, name: str, age: float) -> Path:
    path = folder / name
    path.write_bytes(b"")
    then = time.time() - age
    os.utime(path, (then, then))
    return path


def test_sync_sweeps_temporary_files_a_killed_writer_left(bank: Bank, sample: Path, home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # the sweep judges by max(mtime, ctime) and a ctime cannot be set back: the sweep is made to
    # look 5 s past now instead, and the file of a writer at work is dated after that
    monkeypatch.setattr(write, "STALE_AFTER", -5.0)
    bank_folder = sample / ".writenow"
    (bank_folder / "memories/fact").mkdir()
    (home / "memories/note").mkdir(parents=True, exist_ok=True)
    (bank_folder / "threads").mkdir(exist_ok=True)
    (bank_folder / "memories/.hidden").mkdir()  # hidden folders are not entered
    # in the sections (seen by the sync's scan), in the bank folder and a folder the scan does not walk
    stale = [_temp(bank_folder / "memories/fact", ".tide.md.0123abcd.membank-tmp", STALE_AFTER + 5),
             _temp(bank_folder, ".settings.yaml.89abcdef.membank-tmp", STALE_AFTER + 5),
             _temp(bank_folder / "threads", ".riddle.md.13579bdf.membank-tmp", STALE_AFTER + 5),
             _temp(home / "memories/note", ".coffee.md.deadbeef.membank-tmp", STALE_AFTER + 5)]
    fresh = _temp(bank_folder / "memories/fact", ".tide.md.4567cdef.membank-tmp", -60)  # a writer at work
    others = [_temp(bank_folder / "memories/fact", ".tide.md.swp", STALE_AFTER + 5),  # an editor's, not ours
              _temp(bank_folder / "memories/fact", "tide.md.0123abcd.membank-kept", STALE_AFTER + 5),
              _temp(bank_folder / "memories/.hidden", ".tide.md.2468ace0.membank-tmp", STALE_AFTER + 5)]
    bank.call("index:sync", {})
    assert [p.exists() for p in stale] == [False, False, False, False]
    assert fresh.exists() and all(p.exists() for p in others)


def test_git_ignores_membank_temporary_files(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "novel"
    root.mkdir()
    init(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".writenow/memories/note").mkdir(parents=True, exist_ok=True)
    (root / ".writenow/memories/note/.x.md.0123abcd.membank-tmp").write_bytes(b"")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, check=True,
                            capture_output=True, text=True).stdout
    assert "membank-tmp" not in status and ".writenow/project.yaml" in status


# -- only regular files are read for a rewrite ---------------------------------------------------


def _answer_without_hanging(call: Callable[[], dict], fifo: Path) -> dict:
    """Run `call` in a thread; if it hangs on the FIFO, feed the FIFO EOF so the test fails instead of hanging."""
    result: list[dict] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    thread.join(60)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # a reader stuck in open() or read() gets EOF
        thread.join()
        pytest.fail("the call blocked on a FIFO")
    return result[0]


def test_a_memory_file_replaced_by_a_fifo_is_refused_not_read(bank: Bank, sample: Path) -> None:
    memory = bank.create_memory("note", "project", "The stair creaks.")
    path = sample / memory["source"]
    path.unlink()
    os.mkfifo(path)
    envelope = _answer_without_hanging(
        lambda: bank.call("memory:update", {"id": memory["id"], "patch": {"tags": ["stair"]}}), path)
    assert envelope["error"]["code"] in ("CONFLICT", "NOT_FOUND"), envelope
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_settings_that_are_a_fifo_are_refused_not_read(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.unlink()
    os.mkfifo(path)
    envelope = _answer_without_hanging(
        lambda: bank.call("memory:settings:update", {"patch": {"injectionMaxItems": 5}}), path)
    assert envelope["error"]["code"] == "DB_ERROR", envelope
    assert stat.S_ISFIFO(os.lstat(path).st_mode)


def test_an_index_folder_linked_outside_is_refused(sample: Path, home: Path, tmp_path: Path) -> None:
    """The index, its WAL files and the write lock are written too: never through a link out."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    index = sample / ".writenow" / ".index"
    shutil.rmtree(index, ignore_errors=True)
    index.symlink_to(outside, target_is_directory=True)
    with pytest.raises(membank.MembankError) as caught:
        membank.open(sample, home=home)
    assert caught.value.code == "CONFLICT" and ".writenow/.index" in caught.value.message
    assert list(outside.iterdir()) == []


def test_a_memory_folder_linked_inside_the_bank_is_not_written_through(bank: Bank, sample: Path) -> None:
    """The reader never follows folder links, so a file written through one would be lost to it (or,
    under world/, read as a card): refused, nothing written anywhere."""
    world = sample / ".writenow" / "world"
    before = sorted(p.name for p in world.iterdir())
    (sample / ".writenow" / "memories" / "fact").symlink_to(world, target_is_directory=True)
    answer = _create(bank)
    assert answer["ok"] is False and answer["error"]["code"] == "CONFLICT"
    assert ".writenow/memories/fact" in answer["error"]["message"]
    assert sorted(p.name for p in world.iterdir()) == before


def test_a_hard_linked_journal_file_gets_no_feedback(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """A second name for the month's file may be outside the bank: appending would write there too."""
    from membank.kernel.clock import now_precise

    outside = tmp_path / "out.jsonl"
    outside.write_bytes(b"")
    month = sample / ".writenow" / "journal" / f"{now_precise()[:7]}.jsonl"
    month.parent.mkdir(parents=True, exist_ok=True)
    month.unlink(missing_ok=True)
    os.link(outside, month)
    answer = bank.call("memory:preferences:ingest", {"runId": "r1", "skillId": "s", "action": "accept",
                                                     "evidenceRef": "HL-SECRET words"})
    assert answer["ok"] is False and answer["error"]["code"] == "DB_ERROR"
    assert outside.read_bytes() == b""


def test_the_write_lock_is_never_opened_through_a_link(sample: Path, home: Path, tmp_path: Path) -> None:
    index = sample / ".writenow" / ".index"
    shutil.rmtree(index, ignore_errors=True)
    index.mkdir()
    outside = tmp_path / "outside-lock"
    (index / "write.lock").symlink_to(outside)
    with pytest.raises(membank.MembankError):
        membank.open(sample, home=home)
    assert not outside.exists()
