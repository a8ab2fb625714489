"""Opening a project changes no tracked file (files.md, Git; quality.md promise 11), tried with real
git: a committed project with episodes, opened with `membank serve` and `membank watch` (each runs
the daily lifecycle trigger when it opens the project), leaves `git status` clean, and another branch
can be checked out."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import membank
from tests.sidecar import DEADLINE, Sidecar

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "w", "GIT_AUTHOR_EMAIL": "w@example.org",
           "GIT_COMMITTER_NAME": "w", "GIT_COMMITTER_EMAIL": "w@example.org"}
    done = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _committed(sample: Path) -> None:
    """The sample project with two episodes, committed: the daily trigger has something to score."""
    bank = membank.open(sample)
    try:
        for scene in ("action", "dialogue"):
            assert bank.call("memory:episode:record", {"sceneType": scene, "wait": True})["ok"]
    finally:
        bank.close()
    git(sample, "init", "-q", "-b", "main")
    git(sample, "add", "-A")
    git(sample, "commit", "-qm", "the book so far")
    git(sample, "checkout", "-q", "-b", "elsewhere")  # another branch where the journal differs
    bank = membank.open(sample)
    try:
        assert bank.call("memory:episode:record", {"sceneType": "description", "wait": True})["ok"]
    finally:
        bank.close()
    git(sample, "commit", "-qam", "a session on another machine")
    git(sample, "checkout", "-q", "main")


def _clean_and_checkout(sample: Path) -> None:
    assert git(sample, "status", "--porcelain", "--untracked-files=no") == ""
    git(sample, "checkout", "-q", "elsewhere")  # refused if the journal had a change of its own here
    git(sample, "checkout", "-q", "main")


def _daily_ran(sample: Path, home: Path) -> bool:
    """Whether the project's index says the daily trigger ran (read by a process of its own)."""
    env = {**os.environ, "WRITENOW_HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "membank.shells.cli", "status", "--json", str(sample)],
                          capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parent.parent)
    return '"daily": "' in done.stdout


def test_serve_just_opened_changes_nothing(sample: Path, home: Path) -> None:
    _committed(sample)
    server = Sidecar("--project", str(sample), home=home)
    try:
        server.wait_for(lambda: server.ok("index:status")["lifecycle"]["lastRun"]["daily"], "the daily run")
        server.ok("index:status")
    finally:
        assert server.close() == 0
    _clean_and_checkout(sample)


def test_watch_opens_a_project_without_a_tracked_change(sample: Path, home: Path) -> None:
    _committed(sample)
    env = {**os.environ, "WRITENOW_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "membank.shells.cli", "watch", str(sample)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            cwd=Path(__file__).resolve().parent.parent)
    try:
        deadline = time.monotonic() + DEADLINE
        while not _daily_ran(sample, home):  # each look is a process of its own: no fixed sleep
            assert time.monotonic() < deadline and proc.poll() is None, "watch did not run the daily trigger"
    finally:
        proc.terminate()
        assert proc.wait(DEADLINE) == 0
    _clean_and_checkout(sample)


def test_a_daily_run_that_moves_levels_changes_no_tracked_file(sample: Path) -> None:
    """On the day an episode's decay level moves, daily writes its line where git does not look
    (journal/traces/), so opening the project that day still leaves the work tree clean."""
    from datetime import datetime, timedelta, timezone

    from membank.kernel import clock

    start = datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc)
    moment = [start]
    with clock.use(lambda: moment[0]):
        bank = membank.open(sample)
        try:
            assert bank.call("memory:episode:record", {"sceneType": "action", "wait": True})["ok"]
        finally:
            bank.close()
        git(sample, "init", "-q", "-b", "main")
        git(sample, "add", "-A")
        git(sample, "commit", "-qm", "the book so far")
        moment[0] = start + timedelta(days=60)  # the episode has faded a level by now
        bank = membank.open(sample)
        try:
            run = bank.call("memory:lifecycle:run", {"trigger": "daily"})
            assert run["ok"] and run["data"]["moved"] >= 1, run
        finally:
            bank.close()
    assert git(sample, "status", "--porcelain", "--untracked-files=no") == ""
    assert list((sample / ".writenow" / "journal" / "traces").glob("*.jsonl"))  # where the line went


def test_the_strong_tier_fills_and_answers_without_a_change_git_sees(sample: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The strong tier's background embedding keeps its vectors in .writenow/.index/ (git-ignored):
    a committed project opened, filled, searched and prompted shows nothing to git, tracked or not."""
    import threading

    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load")
    _committed(sample)
    bank = membank.open(sample, sync=False)
    filled = threading.Event()
    bank.listeners.append(lambda method, params: method == "index:strong" and params["done"] == params["total"]
                          and params["total"] > 0 and filled.set())
    try:
        bank.sync()
        # the fill may end before the listener was added (open starts it): then the status says so
        assert bank.status()["strong"]["state"] == "ready" or filled.wait(DEADLINE)
        assert bank.status()["strong"]["state"] == "ready"
        preview = bank.preview(query_text="the lighthouse keeper")
        assert preview["items"] and preview["items"][0]["reason"]["score"]["tier"] == "strong"
        assert bank.call("context:assemble", {"skillId": "continue", "documentId": "chapters/ch05.md"})["ok"]
    finally:
        bank.close()
    untracked = git(sample, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert all(line.startswith("?? .writenow/journal/traces/") for line in untracked), untracked  # the prompt's trace
    _clean_and_checkout(sample)
