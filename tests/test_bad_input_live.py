"""Bad files against a running bank: the CLI, the sidecar and the watcher never stop or hang because of
one file (quality.md promise 4). The fixtures/bad corpus (tests/test_bad_input.py checks each file's
diagnostic) goes through every entry point; then the relatives one by one: files that are no ordinary
files, links swapped in, settings and project.yaml that never end, folders nested past the recursion limit.

Each wait has a generous liveness bound, so a hang fails its test instead of stalling the suite."""

from __future__ import annotations

import fcntl
import inspect
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import pytest
from typer.testing import CliRunner

import membank
from membank.domains.indexing import sync as sync_
from membank import Bank
from membank.shells.cli import app
from membank.files import project, reader
from membank.files.parse import ID_RE
from membank.files.scan import FileStat
from membank.shells.server import SIGNAL_WAIT, STOP_WAIT_ENV
from membank.shells.watch import Watcher

from .badcorpus import CASES, build, populate, source_of
from .helpers import waiting_on
from .sidecar import DEADLINE, Sidecar
from .watching import wait_converged, wait_until, watched

T = TypeVar("T")
LINUX = sys.platform.startswith("linux")
BOUND = 60.0  # seconds: a liveness bound, far above what any of these takes


def bounded(fn: Callable[[], T], seconds: float = BOUND) -> T:
    """`fn()`, run in a thread: the test fails (instead of hanging) when it has not returned in `seconds`."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the test
            box["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s: it hangs")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def cli(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "WRITENOW_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "membank.shells.cli", *args], env=env, capture_output=True, text=True,
                          timeout=BOUND)


def memory_file(text: str) -> str:
    return f"---\ntype: note\nupdated: 2026-01-01T00:00:00Z\n---\n{text}\n"


@pytest.fixture
def fresh_bank(tmp_path: Path, home: Path) -> Iterator[Bank]:
    root = tmp_path / "novel"
    root.mkdir()
    project.init(root, "live")
    opened = membank.open(root, home=home)
    yield opened
    opened.close()


# -- the corpus through each entry point -------------------------------------------------------------


def test_every_cli_command_answers_with_an_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = build(tmp_path)
    monkeypatch.setenv("WRITENOW_HOME", str(home))
    for args in (["list"], ["status"], ["preview"], ["index"]):  # in this process: the same commands, cheaper
        ran = CliRunner().invoke(app, [*args, str(root), "--json"])
        assert ran.exit_code == 0 and ran.exception is None, (args, ran.stderr[-2000:], ran.exception)
        assert json.loads(ran.stdout)["ok"] is True, args  # exactly one JSON document on stdout
    # one real process: nothing else (a warning, a log line, a traceback) reaches its stdout
    result = cli("doctor", str(root), "--json", home=home)
    assert result.returncode == 1, result.stderr[-2000:]
    assert json.loads(result.stdout)["ok"] is True
    assert "Traceback" not in result.stderr, result.stderr[-2000:]


def test_the_sidecar_opens_the_project_and_serves_it(tmp_path: Path) -> None:
    root, home = build(tmp_path)
    server = Sidecar(home=home)
    try:
        opened = server.ok("project:open", {"path": str(root)})
        items = server.ok("index:diagnostics", {"projectId": opened["projectId"]})["items"]
        assert {source_of(c["path"]) for c in CASES if c["severity"] != "none"} <= {d["source"] for d in items}
        assert server.ok("memory:list", {"projectId": opened["projectId"]})["items"]
        assert server.ok("index:status", {"projectId": opened["projectId"]})["counts"]["memories"] > 0
        assert server.close() == 0
        assert not server.bad_lines
    finally:
        server.kill()


def test_the_watcher_keeps_indexing_when_bad_files_appear(fresh_bank: Bank, home: Path, tmp_path: Path) -> None:
    watcher = Watcher(fresh_bank, debounce=0.05)
    watcher.start()
    try:
        wait_until(watcher.idle, BOUND, "the first reconcile")
        populate(fresh_bank.project.path, home, tmp_path / "outside")
        (fresh_bank.project.path / "memories" / "after.md").write_text(memory_file("Written after the bad files."))
        sources = lambda: {m["source"] for m in watched(fresh_bank)["memories"]}  # noqa: E731
        wait_until(lambda: ".writenow/memories/after.md" in sources(), BOUND, "a good file written after the bad ones")
        wait_converged(fresh_bank, BOUND)  # every diagnostic a full sync gives, and nothing else
        reported = {d["source"] for d in watched(fresh_bank)["diagnostics"]}
        for case in CASES:
            if case["severity"] != "none" and not case["path"].startswith(("global/", "settings.yaml")):
                assert source_of(case["path"]) in reported, case["path"]
        fresh_bank.create_memory("note", "project", "A write while the bad files are there.")  # the write lock is free
    finally:
        watcher.stop()


# -- not ordinary files -------------------------------------------------------------------------------


def test_a_fifo_swapped_in_after_the_scan_is_not_opened_for_good(fresh_bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scan saw an ordinary file; by the time of the read it is a FIFO. The read must not wait for a writer."""
    pipe = fresh_bank.project.path / "memories" / "swapped.md"
    os.mkfifo(pipe)
    real_scan = sync_.scan

    def scan_before_the_swap(root: Any, *args: Any) -> Any:
        found, problems = real_scan(root, *args)
        if root.bank == "project":
            rel = "memories/swapped.md"
            found = [f for f in found if f.rel != rel] + [FileStat(root.source(rel), rel, "memories", 10, 1)]
            problems = [p for p in problems if p.source != root.source(rel)]
        return found, problems

    monkeypatch.setattr(sync_, "scan", scan_before_the_swap)
    bounded(fresh_bank.sync)
    got = [d for d in fresh_bank.diagnostics()["items"] if d["source"] == ".writenow/memories/swapped.md"]
    assert [d["message"].split(";")[0] for d in got] == ["this is a named pipe (FIFO), not an ordinary file "
                                                         "(membank reads only ordinary files)"]


def test_a_file_membank_may_not_read_is_reported_and_read_once_allowed(fresh_bank: Bank,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, chmod cannot forbid a read: the refusal is made in the process instead."""
    path = fresh_bank.project.path / "memories" / "locked.md"
    path.write_text(memory_file("Behind a lock."))
    real_open = os.open

    def refuse(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(file) == str(path):
            raise PermissionError(13, "Permission denied")
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(reader.os, "open", refuse)
    fresh_bank.sync()
    got = [d for d in fresh_bank.diagnostics()["items"] if d["source"] == ".writenow/memories/locked.md"]
    assert len(got) == 1 and "not allowed to read this file" in got[0]["message"]
    assert fresh_bank.sync()["updated"] == 0  # the same refusal again changes nothing
    monkeypatch.undo()  # the permission is fixed: same size, same mtime, and still read again
    fresh_bank.sync()
    assert not [d for d in fresh_bank.diagnostics()["items"] if d["source"] == ".writenow/memories/locked.md"]
    assert any(m["content"] == "Behind a lock." for m in fresh_bank.list_memories()["items"])


def test_settings_that_never_end_are_a_diagnostic(fresh_bank: Bank, home: Path) -> None:
    for path in (fresh_bank.project.path / "settings.yaml", home / "settings.yaml"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        os.symlink("/dev/zero", path)
    settings = bounded(fresh_bank.settings)
    assert settings["injectionMaxItems"] == 20  # the defaults
    items = bounded(fresh_bank.diagnostics)["items"]
    for source in (".writenow/settings.yaml", "global:settings.yaml"):
        assert [d["message"] for d in items if d["source"] == source] == [
            "this is a device, not an ordinary file (membank reads only ordinary files); the defaults are used"]
    fifo = fresh_bank.project.path / "settings.yaml"
    fifo.unlink()
    os.mkfifo(fifo)
    assert bounded(fresh_bank.preview)["items"] is not None


def test_a_project_yaml_that_never_ends_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "novel"
    root.mkdir()
    project.init(root, "zero")
    (root / ".writenow" / "project.yaml").unlink()
    os.symlink("/dev/zero", root / ".writenow" / "project.yaml")
    with pytest.raises(project.ProjectError, match="not an ordinary file"):
        bounded(lambda: project.read_project(root))


# -- folders and links ----------------------------------------------------------------------------------


def test_folders_nested_deeper_than_the_recursion_limit_are_walked(fresh_bank: Bank) -> None:
    """The walk keeps a list, not a call stack. The recursion limit is lowered for the sync instead of
    nesting 1,000 folders, which pytest's own clean-up (shutil.rmtree, recursive) could not delete."""
    folder = fresh_bank.project.path / "memories"
    for _ in range(300):
        folder = folder / "d"
        os.mkdir(folder)
    (folder / "deep.md").write_text(memory_file("At the bottom of the folders."))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 150)  # room for the sync itself, not for 300 levels
    try:
        fresh_bank.sync()
    finally:
        sys.setrecursionlimit(limit)
    assert any(m["content"] == "At the bottom of the folders." for m in fresh_bank.list_memories()["items"])


def test_a_watcher_refuses_folders_too_deep_to_watch_in_plain_words(fresh_bank: Bank) -> None:
    """watchdog walks folders recursively (inotify and polling alike): past the recursion limit the watcher
    cannot start, and says so with an OSError (the sidecar logs it and keeps serving) instead of a RecursionError."""
    folder = fresh_bank.project.path / "memories"
    for _ in range(300):
        folder = folder / "d"
        os.mkdir(folder)
    watcher = Watcher(fresh_bank, debounce=0.05)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(inspect.stack(0)) + 150)
    try:
        with pytest.raises(OSError, match="nested too deeply to be watched"):
            watcher.start()
    finally:
        sys.setrecursionlimit(limit)
        watcher.stop()


def _swap_for_a_link_out(bank: Bank, tmp_path: Path, name: str) -> tuple[str, str]:
    """An indexed memory file replaced by a link to a file outside the bank (`mv link file`)."""
    rel = f"memories/{name}.md"
    (bank.project.path / rel).write_text(memory_file(f"Inside, as {name}."))
    bank.sync()
    outside = tmp_path / f"{name}-outside.md"
    outside.write_text(memory_file("Outside the bank: never read."))
    link = bank.project.path / "memories" / f".{name}.tmp"
    os.symlink(outside, link)
    os.replace(link, bank.project.path / rel)
    return rel, bank.project.source(rel)


def _refused_now(bank: Bank, source: str) -> None:
    got = [d for d in bank.diagnostics()["items"] if d["source"] == source]
    assert [d["message"] for d in got] == ["this link leads outside the bank; membank only reads files inside it, "
                                           "so it is skipped"], got
    contents = [m["content"] for m in bank.list_memories(include_deleted=True)["items"]]
    assert "Outside the bank: never read." not in contents
    assert not any(m["source"] == source for m in bank.list_memories(include_deleted=True)["items"])


def test_a_file_renamed_into_a_link_out_is_refused_at_the_first_full_sync(fresh_bank: Bank, tmp_path: Path) -> None:
    _, source = _swap_for_a_link_out(fresh_bank, tmp_path, "full")
    fresh_bank.sync()
    _refused_now(fresh_bank, source)


def test_a_file_renamed_into_a_link_out_is_refused_when_its_path_is_synced(fresh_bank: Bank, tmp_path: Path) -> None:
    rel, source = _swap_for_a_link_out(fresh_bank, tmp_path, "one")
    sync_.sync_paths(fresh_bank.index, fresh_bank.project, [rel])  # what the watcher and writes call
    _refused_now(fresh_bank, source)
    os.unlink(fresh_bank.project.path / rel)
    sync_.sync_paths(fresh_bank.index, fresh_bank.project, [rel])
    assert not [d for d in fresh_bank.diagnostics()["items"] if d["source"] == source]


def test_a_fifo_and_a_bad_name_are_reported_when_their_path_is_synced(fresh_bank: Bank) -> None:
    memories = fresh_bank.project.path / "memories"
    os.mkfifo(memories / "pipe.md")
    (memories / os.fsdecode(b"caf\xe9.md")).write_text(memory_file("Latin-1 name."))
    bounded(lambda: sync_.sync_paths(fresh_bank.index, fresh_bank.project,
                                     ["memories/pipe.md", "memories/" + os.fsdecode(b"caf\xe9.md")]))
    by_source = {d["source"]: d["message"] for d in fresh_bank.diagnostics()["items"]}
    assert "named pipe" in by_source[".writenow/memories/pipe.md"]
    assert "not valid UTF-8" in by_source[".writenow/memories/caf\\xe9.md"]
    assert by_source == {d.source: d.message for d in sync_.scan(fresh_bank.project)[1]}  # as a full scan says


# -- ids from paths -------------------------------------------------------------------------------------


def test_a_memory_whose_id_comes_from_a_spaced_path_survives_an_update(fresh_bank: Bank) -> None:
    (fresh_bank.project.path / "memories" / "my lamp note.md").write_text(memory_file("The lamp burns whale oil."))
    fresh_bank.sync()
    memory = next(m for m in fresh_bank.list_memories()["items"] if m["content"] == "The lamp burns whale oil.")
    assert ID_RE.fullmatch(memory["id"]), memory["id"]
    fresh_bank.update_memory(memory["id"], {"tags": ["lamp"]})  # writes the id into the file
    fresh_bank.sync(rebuild=True)
    again = fresh_bank.get_memory(memory["id"])
    assert again["tags"] == ["lamp"] and not fresh_bank.diagnostics()["items"]


# -- membank serve and SIGTERM --------------------------------------------------------------------------


@pytest.fixture
def locked_project(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A project whose write lock another process (this test) holds: every write in a server waits for it."""
    root = tmp_path / "novel"
    root.mkdir()
    project.init(root, "locked")
    lock = root / ".writenow" / ".index" / "write.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield root, lock
    finally:
        os.close(fd)


@pytest.mark.skipif(not LINUX, reason="holds the lock with flock and watches /proc")
def test_sigterm_ends_serve_while_a_call_waits(locked_project: tuple[Path, Path], home: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    root, lock = locked_project
    monkeypatch.setenv("MEMBANK_LOCK_WAIT", "600")
    monkeypatch.setenv(STOP_WAIT_ENV, "1")
    server = Sidecar("--log-level", "debug", home=home)
    try:
        server.send("project:open", {"path": str(root)})
        wait_until(lambda: waiting_on(server.proc.pid, lock), DEADLINE, "the open to wait for the lock")
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(DEADLINE) == 1  # the waiting call is abandoned after 1 s, and said so
        server.close()
        assert any("still running" in line for line in server.stderr)
    finally:
        server.kill()


@pytest.mark.skipif(not LINUX, reason="holds the lock with flock and watches /proc")
def test_sigterm_ends_serve_while_a_project_opens_at_start(locked_project: tuple[Path, Path], home: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root, lock = locked_project
    monkeypatch.setenv("MEMBANK_LOCK_WAIT", "600")
    server = Sidecar("--project", str(root), home=home)
    try:
        wait_until(lambda: waiting_on(server.proc.pid, lock), DEADLINE, "the open to wait for the lock")
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(SIGNAL_WAIT + 30) == 0  # at once: nothing is waited for
    finally:
        server.kill()
