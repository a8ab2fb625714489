"""Many writers at once (promise 2): CLI processes, the Python API and a watcher queue for the
write lock and all land; a writer that cannot get the lock in time gets DB_ERROR, never a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import membank
from membank import Bank
from membank.kernel.errors import MembankError
from membank.files.lock import WAIT_ENV
from membank.shells.watch import Watcher

from .cliprocs import CliProcess
from .helpers import waiting_on
from .watching import wait_until

fcntl = pytest.importorskip("fcntl")  # holding the lock from the test below is POSIX; lock.py covers Windows


def spawn(*args: str, cwd: Path, home: Path, wait: str | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "WRITENOW_HOME": str(home)}
    if wait is not None:
        env[WAIT_ENV] = wait
    return subprocess.Popen([sys.executable, "-m", "membank.shells.cli", *args], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(process: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=180)
    return process.returncode, out, err


def fresh_project(tmp_path: Path, home: Path) -> Path:
    root = tmp_path / "novel"
    root.mkdir()
    assert finish(spawn("init", "--json", cwd=root, home=home))[0] == 0
    # no model: each process then costs an import, not a model load; the lock is what is tested
    (root / ".writenow/settings.yaml").write_text("embedding:\n  model: no-model-here\n", "utf-8")
    return root


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sees who waits for the lock in /proc")
def test_twenty_cli_adds_at_once_all_land(tmp_path: Path, home: Path) -> None:
    root = fresh_project(tmp_path, home)
    lock = root / ".writenow/.index/write.lock"
    with HeldLock(root):  # all twenty start, then all wait for the lock at once: contention is certain
        processes = [CliProcess("add", f"Parallel memory number {i}.", "--type", "fact", "--json", cwd=root, home=home,
                                out=tmp_path / f"add-{i}.json", env={WAIT_ENV: "120"}) for i in range(20)]
        for p in processes:
            # one that ended (gave up on the lock, failed) fails the asserts below, without waiting
            wait_until(lambda: waiting_on(p.pid, lock) or p.ended, 120, "each process to wait for the write lock")
        waiting = [p for p in processes if waiting_on(p.pid, lock)]  # none can have the lock yet, none gives up
        assert len(waiting) == 20, [p.finish() for p in processes if p not in waiting]
    for code, out in (p.finish() for p in processes):
        assert code == 0 and json.loads(out)["ok"] is True, out
    code, out, _ = finish(spawn("list", "--type", "fact", "--json", cwd=root, home=home))
    contents = {m["content"] for m in json.loads(out)["data"]["items"]}
    assert {f"Parallel memory number {i}." for i in range(20)} <= contents
    assert len(list((root / ".writenow/memories/fact").glob("parallel-memory-number-*.md"))) == 20


def test_cli_processes_the_python_api_and_a_watcher_all_land(tmp_path: Path, home: Path) -> None:
    root = fresh_project(tmp_path, home)
    bank = membank.open(root)
    watcher = Watcher(bank, debounce=0.01)
    watcher.start()
    try:
        processes = [CliProcess("add", f"From the command line, number {i}.", "--json", cwd=root, home=home,
                                out=tmp_path / f"add-{i}.json") for i in range(2)]
        failures: list[BaseException] = []

        def write(i: int) -> None:
            try:
                bank.create_memory("note", "project", f"From the Python API, number {i}.")
            except BaseException as e:  # noqa: BLE001 - any failure is the finding
                failures.append(e)

        threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert failures == []
        for code, out in (p.finish() for p in processes):
            assert code == 0 and json.loads(out)["ok"] is True, out
        wanted = {f"From the command line, number {i}." for i in range(2)} | {f"From the Python API, number {i}."
                                                                               for i in range(4)}
        wait_until(lambda: wanted <= {m["content"] for m in bank.list_memories()["items"]}, timeout=20,
                   what="the watcher indexed the other processes' memories")
    finally:
        watcher.stop()
        bank.close()


class HeldLock:
    """Another process's hold on a bank's write lock, as lock.py takes it (flock): a project's (its
    root given) or the global bank's (its folder given)."""

    def __init__(self, root: Path):
        path = (root / ".writenow" if (root / ".writenow").is_dir() else root) / ".index/write.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)

    def __enter__(self) -> "HeldLock":
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)


def test_a_writer_that_cannot_get_the_lock_gets_db_error_and_writes_nothing(
        bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WAIT_ENV, "0.1")
    before = sorted(p.name for p in (sample / ".writenow/memories").rglob("*"))
    with HeldLock(sample):
        with pytest.raises(MembankError) as caught:
            bank.create_memory("fact", "project", "Written while the lock was held elsewhere.")
        assert caught.value.code == "DB_ERROR"
        envelope = bank.call("memory:update", {"id": "m-fact-linmo-wounded", "patch": {"pinned": True}})
        assert envelope["ok"] is False and envelope["error"]["code"] == "DB_ERROR"
        assert bank.call("index:sync", {})["error"]["code"] == "DB_ERROR"
        with pytest.raises(MembankError) as opening:
            membank.open(sample)
        assert opening.value.code == "DB_ERROR"
    assert sorted(p.name for p in (sample / ".writenow/memories").rglob("*")) == before
    assert bank.create_memory("fact", "project", "Written once the lock was free.")["revision"] == 1


def test_the_cli_prints_a_db_error_envelope_when_the_lock_stays_held(sample: Path, home: Path) -> None:
    with HeldLock(sample):
        code, out, err = finish(spawn("add", "Never written.", "--json", cwd=sample, home=home, wait="0.1"))
    assert code == 1 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "DB_ERROR"
    assert not list((sample / ".writenow/memories").rglob("never-written*"))


def test_the_global_settings_have_a_lock_of_their_own(bank: Bank, home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(WAIT_ENV, "0.1")
    with HeldLock(home):  # another project's process changing the global settings
        assert bank.update_settings({"injectionMaxItems": 7})["injectionMaxItems"] == 7
        with pytest.raises(MembankError) as caught:
            bank.update_settings({"injectionMaxItems": 9}, scope="global")
        assert caught.value.code == "DB_ERROR"
    bank.update_settings({"injectionTokenBudget": 900}, scope="global")
    assert "injectionTokenBudget: 900" in (home / "settings.yaml").read_text("utf-8")
