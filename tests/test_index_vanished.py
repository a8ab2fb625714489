"""`.writenow/.index/` deleted or replaced while a sync writes it, or since the project opened: the
sync never reports success for an index that is not on disk (files.md: the index is derived and safe
to delete), and the next sync starts a new file. The fault comes from inside the sync (the first file
it parses), so nothing here races the process."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from membank import Bank
from membank.files import intake

from .helpers import write_memory

INDEX = Path(".writenow") / ".index"


def _at_first_parse(monkeypatch: pytest.MonkeyPatch, fault: Callable[[], None]) -> None:
    real = intake.parse_file
    done: list[bool] = []

    def parse(*args: Any) -> Any:
        if not done:
            done.append(True)
            fault()
        return real(*args)
    monkeypatch.setattr(intake, "parse_file", parse)


def _deleted(sample: Path) -> None:
    shutil.rmtree(sample / INDEX)


def _file_instead(sample: Path) -> None:
    shutil.rmtree(sample / INDEX)
    (sample / INDEX).write_text("not a folder\n", encoding="utf-8")


@pytest.mark.parametrize("fault", [_deleted, _file_instead], ids=["deleted", "a-file-instead"])
def test_a_sync_whose_index_vanished_midway_is_an_error(bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch,
                                                        fault: Callable[[Path], None]) -> None:
    write_memory(sample, "notes/late.md", "A late note about the lamp.", id="m-late", type="note")
    _at_first_parse(monkeypatch, lambda: fault(sample))
    envelope = bank.call("index:sync", {})
    assert not envelope["ok"], envelope
    assert envelope["error"]["code"] == "DB_ERROR"
    assert ".writenow/.index/" in envelope["error"]["message"] and "run `membank index` again" in envelope["error"]["message"]
    again = bank.call("index:sync", {})  # the next one: a new file where the folder was, or DB_ERROR for a file there
    if fault is _deleted:
        assert again["ok"] and again["data"]["added"] > 0, again
        assert (sample / INDEX / "index.db").is_file()
        assert bank.call("memory:get", {"id": "m-late"})["ok"]
    else:
        assert again["error"]["code"] == "DB_ERROR" and ".index" in again["error"]["message"]
        assert (sample / INDEX).read_text(encoding="utf-8") == "not a folder\n"  # left as it was


def test_a_sync_after_the_index_folder_was_deleted_makes_a_new_one(bank: Bank, sample: Path) -> None:
    """A sidecar's project whose `.index/` was deleted between calls: the sync fills a new file, not the
    unlinked one that a restart would never see."""
    shutil.rmtree(sample / INDEX)
    envelope = bank.call("index:sync", {})
    assert envelope["ok"], envelope
    assert envelope["data"]["added"] > 0 and (sample / INDEX / "index.db").is_file()
    assert bank.call("index:sync", {})["data"]["added"] == 0


@pytest.mark.parametrize("gone", [".writenow", ""], ids=["bank-folder", "project-root"])
def test_a_project_deleted_while_it_syncs_is_not_found_never_a_crash(bank: Bank, sample: Path,
                                                                     monkeypatch: pytest.MonkeyPatch, gone: str) -> None:
    write_memory(sample, "notes/late.md", "A late note about the lamp.", id="m-late", type="note")
    _at_first_parse(monkeypatch, lambda: shutil.rmtree(sample / gone))
    envelope = bank.call("index:sync", {})
    assert envelope["error"]["code"] == "NOT_FOUND", envelope
    assert "deleted while this sync ran" in envelope["error"]["message"]
    assert envelope["error"]["details"] == {"projectId": "p-sample-lighthouse"}
    assert bank.call("index:sync", {})["error"]["code"] == "NOT_FOUND"  # and so on, until the folder is back
    assert not (sample / ".writenow").exists()  # nothing made again


def test_the_manuscript_deleted_while_it_syncs_is_read_as_gone(bank: Bank, sample: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.manuscript import sync as manuscript_sync

    (sample / "chapters" / "ch09.md").write_text("# Nine\n\nMaren walks the cliff path.\n", "utf-8")
    real = manuscript_sync.read_document_bytes

    def read(*args: Any, **kwargs: Any) -> Any:
        shutil.rmtree(sample / "chapters", ignore_errors=True)
        return real(*args, **kwargs)
    monkeypatch.setattr(manuscript_sync, "read_document_bytes", read)
    assert bank.call("index:sync", {})["ok"]
    monkeypatch.undo()
    assert bank.call("index:sync", {})["ok"]
    assert bank.call("manuscript:status", {})["data"]["items"] == []


# -- `.index/` deleted under a running process (a writer resetting it): made again, never written unlinked --

def _other_sees(sample: Path, memory_id: str) -> bool:
    """Whether another process would find `memory_id` in the index file on disk (a bank opened without a sync)."""
    import membank

    other = membank.open(sample, sync=False)
    try:
        return bool(other.call("memory:get", {"id": memory_id})["ok"])
    finally:
        other.close()


def test_a_write_after_the_index_folder_was_deleted_makes_a_new_index(bank: Bank, sample: Path) -> None:
    """The next write finds the file gone and makes a new index from the files before writing: another
    process (and a new read thread of a sidecar) sees that write and everything before it."""
    import threading

    from membank.index.store import reading

    shutil.rmtree(sample / INDEX)
    made = bank.call("memory:create", {"type": "note", "scope": "project", "content": "The gull remembers the storm."})
    assert made["ok"], made
    assert _other_sees(sample, made["data"]["id"]) and _other_sees(sample, "m-fact-maren-father")
    read: list[dict[str, Any]] = []

    def new_reader() -> None:
        with reading():  # a read thread connecting now: to the file on disk
            read.append(bank.call("memory:list", {}))
    thread = threading.Thread(target=new_reader)
    thread.start()
    thread.join()
    assert read[0]["ok"] and made["data"]["id"] in {m["id"] for m in read[0]["data"]["items"]}


def test_a_file_where_the_index_folder_was_is_an_error_until_it_goes(bank: Bank, sample: Path) -> None:
    """Something else put where `.index/` was: DB_ERROR naming `.index/` for a write and a read alike (the
    read never answers from the deleted file), nothing written; once it is moved away, the next call makes
    the index again."""
    _file_instead(sample)
    refused = bank.call("memory:create", {"type": "note", "scope": "project", "content": "Blocked."})
    assert refused["error"]["code"] == "DB_ERROR" and ".index/" in refused["error"]["message"], refused
    read = bank.call("memory:list", {})
    assert read["error"]["code"] == "DB_ERROR" and ".index/" in read["error"]["message"], read
    (sample / INDEX).unlink()
    made = bank.call("memory:create", {"type": "note", "scope": "project", "content": "Through."})
    assert made["ok"] and _other_sees(sample, made["data"]["id"])


def test_a_watcher_makes_the_deleted_index_again_and_keeps_later_changes(bank: Bank, sample: Path) -> None:
    """Under a running watcher (`membank serve`), `.index/` deleted: the watcher makes it again from the
    files, and a memory saved afterwards by an editor reaches the file on disk."""
    from membank.shells.watch import Watcher

    from .watching import wait_until

    watcher = Watcher(bank, debounce=0.05, reconcile_every=None)
    watcher.start()
    try:
        wait_until(watcher.idle, what="the first reconcile")
        shutil.rmtree(sample / INDEX)
        wait_until(lambda: (sample / INDEX / "index.db").is_file() and watcher.idle(), what="a new index")
        write_memory(sample, "notes/late.md", "A late note about the lamp.", id="m-late", type="note")
        wait_until(lambda: _other_sees(sample, "m-late"), what="the late note in the index on disk")
        assert _other_sees(sample, "m-fact-maren-father")  # made from every file, not only the later ones
    finally:
        watcher.stop()


def test_a_link_where_the_index_folder_was_is_never_written_through(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """`.index/` deleted and a link to a folder outside put in its place: CONFLICT naming it, and nothing
    (not even the write lock) is made in the folder it leads to."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(sample / INDEX)
    (sample / INDEX).symlink_to(outside, target_is_directory=True)
    refused = bank.call("memory:create", {"type": "note", "scope": "project", "content": "Through a link?"})
    assert refused["error"]["code"] == "CONFLICT" and ".writenow/.index" in refused["error"]["message"], refused
    read = bank.call("memory:list", {})  # a read is refused too: it would make the index through the link
    assert read["error"]["code"] == "CONFLICT" and ".writenow/.index" in read["error"]["message"], read
    assert list(outside.iterdir()) == []


def test_a_link_to_another_projects_index_folder_is_never_read_either(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """`.index/` deleted and a link to another project's `.index/` put in its place: a read is CONFLICT too,
    never an answer from the other project's index (a snapshot read, story:duplicates, listed the other
    project's facts as this one's)."""
    import membank

    other_root = tmp_path / "other"
    shutil.copytree(sample, other_root, ignore=shutil.ignore_patterns(".index"))
    other = membank.open(other_root)
    for text in ("The violet lamp in the tower burns all night long", "The violet lamp in the tower burns all night"):
        assert other.call("memory:create", {"type": "fact", "scope": "project", "content": text})["ok"]
    theirs = other.call("story:duplicates", {})["data"]["items"]
    other.close()
    assert theirs
    shutil.rmtree(sample / INDEX)
    (sample / INDEX).symlink_to(other_root / INDEX, target_is_directory=True)
    read = bank.call("story:duplicates", {})
    assert read.get("error", {}).get("code") == "CONFLICT" and ".writenow/.index" in read["error"]["message"], read


@pytest.mark.parametrize("fault", ["file", "link"])
def test_a_watcher_refused_by_what_is_where_the_index_was_says_so_once_without_a_traceback(
        bank: Bank, sample: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, fault: str) -> None:
    """`.index/` replaced by a file or by a link under `membank serve`: each retry of the watcher is refused
    (DB_ERROR, CONFLICT); that is one warning naming why, not a traceback on stderr every second, and the
    watcher makes the index again once the thing is moved away, with what an editor saved meanwhile."""
    import logging

    from membank.shells.watch import Watcher

    from .watching import wait_until

    watcher = Watcher(bank, debounce=0.05, reconcile_every=None)
    watcher.start()
    try:
        wait_until(watcher.idle, what="the first reconcile")
        caplog.set_level(logging.WARNING, logger="membank")
        if fault == "file":
            _file_instead(sample)
        else:
            shutil.rmtree(sample / INDEX)
            (tmp_path / "outside").mkdir()
            (sample / INDEX).symlink_to(tmp_path / "outside", target_is_directory=True)
        before = watcher.batches
        write_memory(sample, "notes/late.md", "A late note about the lamp.", id="m-late", type="note")
        wait_until(lambda: watcher.batches >= before + 2, what="two refused batches")
        watched = [r for r in caplog.records if r.name.startswith("membank.shells.watch")]
        assert len(watched) == 1 and watched[0].exc_info is None, [r.getMessage() for r in watched]
        assert ".index" in watched[0].getMessage()
        (sample / INDEX).unlink()
        wait_until(lambda: _other_sees(sample, "m-late"), what="the late note in a new index")
        assert fault == "file" or list((tmp_path / "outside").iterdir()) == []
    finally:
        watcher.stop()


def test_an_index_deleted_again_while_the_watcher_makes_it_is_made_once_more(
        bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """`.index/` deleted twice quickly under `membank serve`: the second deletion lands while the watcher
    makes the index again (its sync refuses to say done: DB_ERROR); the watcher says so in a warning, no
    traceback, and makes it once more, with every file and what an editor saved meanwhile."""
    import logging

    from membank.shells.watch import Watcher

    from .watching import wait_until

    watcher = Watcher(bank, debounce=0.05, reconcile_every=None)
    watcher.start()
    try:
        wait_until(watcher.idle, what="the first reconcile")
        caplog.set_level(logging.WARNING, logger="membank")
        write_memory(sample, "notes/late.md", "A late note about the lamp.", id="m-late", type="note")
        wait_until(lambda: _other_sees(sample, "m-late"), what="the late note in the index")
        _at_first_parse(monkeypatch, lambda: shutil.rmtree(sample / INDEX, ignore_errors=True))  # while made again
        shutil.rmtree(sample / INDEX)
        wait_until(lambda: (sample / INDEX / "index.db").is_file() and watcher.idle()
                   and _other_sees(sample, "m-late") and _other_sees(sample, "m-fact-maren-father"),
                   what="the index made once more")
        assert [r.getMessage() for r in caplog.records if r.exc_info] == []
    finally:
        watcher.stop()


def test_a_link_where_the_index_file_was_is_never_written_through(bank: Bank, sample: Path, tmp_path: Path) -> None:
    """`.index/index.db` deleted and a link to another project's index put in its place (the folder itself a
    folder): every call that writes, and a sync, is CONFLICT naming it; nothing of this project reaches the
    other index (a write went into it: the other project then listed this one's memory)."""
    import membank

    other_root = tmp_path / "other"
    shutil.copytree(sample, other_root, ignore=shutil.ignore_patterns(".index"))
    other = membank.open(other_root)
    listed = len(other.call("memory:list", {})["data"]["items"])
    other.close()
    other_index = other_root / INDEX / "index.db"
    for found in (sample / INDEX).glob("index.db*"):
        found.unlink()
    (sample / INDEX / "index.db").symlink_to(other_index)
    refused = bank.call("memory:create", {"type": "note", "scope": "project", "content": "Through a link?"})
    assert refused["error"]["code"] == "CONFLICT" and ".writenow/.index/index.db" in refused["error"]["message"], refused
    synced = bank.call("index:sync", {})
    assert synced["error"]["code"] == "CONFLICT", synced
    other = membank.open(other_root, sync=False)
    try:
        assert len(other.call("memory:list", {})["data"]["items"]) == listed
    finally:
        other.close()
    (sample / INDEX / "index.db").unlink()
    made = bank.call("memory:create", {"type": "note", "scope": "project", "content": "Through at last."})
    assert made["ok"] and _other_sees(sample, made["data"]["id"])


def test_an_index_another_process_opened_without_a_sync_is_filled_not_followed_empty(bank: Bank, sample: Path) -> None:
    """`.index/` deleted, then another process opens the project without a sync (a new, empty file there):
    the running process's next call fills that file from the files instead of following it as it is (its
    next write left it an index of that one memory: every other memory gone from every answer)."""
    import membank

    listed = len(bank.call("memory:list", {})["data"]["items"])
    shutil.rmtree(sample / INDEX)
    other = membank.open(sample, sync=False)
    other.close()
    made = bank.call("memory:create", {"type": "note", "scope": "project", "content": "After the other opened."})
    assert made["ok"], made
    assert len(bank.call("memory:list", {})["data"]["items"]) == listed + 1
    assert _other_sees(sample, made["data"]["id"]) and _other_sees(sample, "m-fact-maren-father")


def test_a_settings_change_in_the_batch_that_renews_the_index_is_read(bank: Bank, sample: Path) -> None:
    """A watcher batch holding a settings.yaml change and `.index/` deleted: the index is made again and the
    settings are read again too, even where the edit left the file's size and mtime as they were (a coarse
    clock)."""
    import os

    from membank.shells import watchbatch

    settings = sample / ".writenow" / "settings.yaml"
    assert bank.settings_files.memory()["injectionTokenBudget"] == 1600
    before = settings.stat()
    settings.write_text(settings.read_text("utf-8").replace("1600", "1700"), "utf-8")  # the same size
    os.utime(settings, ns=(before.st_atime_ns, before.st_mtime_ns))  # and mtime: a coarse clock's edit
    shutil.rmtree(sample / INDEX)
    batch = watchbatch.Batch(settings={"project:settings.yaml"})
    watchbatch.apply(bank, batch, {root.bank: os.path.realpath(root.path) for root in bank.roots})
    assert (sample / INDEX / "index.db").is_file()
    assert bank.settings_files.memory()["injectionTokenBudget"] == 1700


@pytest.mark.parametrize("remake", ["memory:list", "index:sync"], ids=["the-next-call", "a-sync"])
def test_a_read_of_another_thread_while_the_index_is_made_again_waits_for_the_whole_of_it(
        bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch, remake: str) -> None:
    """`.index/` deleted; one thread's call makes the index again while another thread reads (the Python API,
    outside `reading()`): the read never answers from the new file half-made (empty before its first files
    are in, a memory NOT_FOUND); it waits, and answers from the whole index. The read is started from inside
    the remaking (faulted in-process, at its scan of the files) and given a moment to answer there."""
    import threading

    from membank.domains.indexing import sync as sync_

    real, answers, answered = sync_.scan, [], threading.Event()
    reader: list[threading.Thread] = []

    def get() -> None:
        answers.append(bank.call("memory:get", {"id": "m-fact-maren-father"}))
        answered.set()

    def scan(*args: Any, **kwargs: Any) -> Any:
        if not reader:  # the first scan: the new file made, no file of the banks in it yet
            reader.append(threading.Thread(target=get))
            reader[0].start()
            answered.wait(0.3)  # without the remaking's lock, the read answers at once from the empty file
        return real(*args, **kwargs)
    monkeypatch.setattr(sync_, "scan", scan)
    shutil.rmtree(sample / INDEX)
    assert bank.call(remake, {})["ok"]  # this call makes the index again
    reader[0].join()
    assert answers[0]["ok"], answers[0]
