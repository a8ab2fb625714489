"""A hostile pass on issue 30 with real git, a wrong clock and damaged journals (files.md, Git and Time):
rebase and cherry-pick keep the union merge, markers in a journal line are never counted, an event
edited on both sides counts once and the same way live and after a rebuild, a checkout of an old
commit gives the answers of a fresh rebuild, and `git-setup` copes with odd `.gitattributes`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import membank
from membank import Bank
from membank.files import gitfiles
from membank.files.parse import conflict_line
from .helpers import git, git_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CH05 = "chapters/ch05.md"




def _tracked_changes(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=no").stdout


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def _feedback(bank: Bank) -> float:
    return _ok(bank, "memory:preferences:ingest", runId="r-cli", skillId="continue", action="accept",
               evidenceRef="omit needless words")["count"]


def _count(bank: Bank) -> float:
    """The preference's count now, without adding to it."""
    from membank.domains.learning import events
    with bank.index.lock:
        return events.signal(bank.index, _key(bank), None)[0]


def _key(bank: Bank) -> str:
    with bank.index.lock:
        return bank.index.db.execute("SELECT key FROM events WHERE event = 'feedback' LIMIT 1").fetchone()[0]


def _codes(bank: Bank, code: str) -> list[dict[str, Any]]:
    return [d for d in _ok(bank, "index:diagnostics")["items"] if d.get("code") == code]


def _answers(bank: Bank) -> dict[str, Any]:
    """What a writer sees of the journal: episodes, their recall counts, the preference's count."""
    status = _ok(bank, "index:status")
    return {"episodes": status["episodes"], "count": _count(bank),
            "dups": sorted((d["source"], d["line"]) for d in _codes(bank, "DUPLICATE_EVENTS"))}


@pytest.fixture
def repo(sample: Path) -> Path:
    settings = sample / ".writenow" / "settings.yaml"
    settings.write_text(settings.read_text("utf-8").replace("preferenceLearningThreshold: 2",
                                                            "preferenceLearningThreshold: 50"), encoding="utf-8")
    git(sample, "init", "-q", "-b", "main")
    bank = membank.open(sample)
    try:
        bank.git_setup()
    finally:
        bank.close()
    git_commit(sample, "the novel")
    return sample


def _work(repo: Path, branch: str, times: int, start: str = "main") -> None:
    git(repo, "checkout", "-q", "-b", branch, start)
    bank = membank.open(repo)
    try:
        for _ in range(times):
            _feedback(bank)
        _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary=f"on {branch}",
            wait=True)
    finally:
        bank.close()
    git_commit(repo, f"work on {branch}")


@pytest.mark.parametrize("how", ["rebase", "cherry-pick"])
def test_rebase_and_cherry_pick_keep_both_sides_lines(repo: Path, how: str) -> None:
    _work(repo, "laptop", 2)
    _work(repo, "desktop", 3)
    done = git(repo, how, "laptop", check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    bank = membank.open(repo)
    try:
        assert _ok(bank, "index:status")["episodes"]["total"] == 2
        assert _count(bank) == 5
        assert _codes(bank, "DUPLICATE_EVENTS") == []
        assert _tracked_changes(repo) == ""
    finally:
        bank.close()


def test_markers_in_a_journal_are_reported_and_never_counted(repo: Path) -> None:
    (repo / ".writenow" / ".gitattributes").unlink()  # a project from before membank shipped it
    git_commit(repo, "no union")
    _work(repo, "laptop", 2)
    _work(repo, "desktop", 3)
    merged = git(repo, "merge", "--no-edit", "laptop", check=False)
    assert merged.returncode != 0
    month = next((repo / ".writenow" / "journal").glob("*.jsonl"))
    text = month.read_text("utf-8")
    assert "<<<<<<<" in text
    bank = membank.open(repo)
    try:
        assert _count(bank) == 5  # every event of both sides, each once, the marker lines never
        assert _ok(bank, "index:status")["episodes"]["total"] == 2
        found = _codes(bank, "MERGE_CONFLICT")
        assert [(d["source"], d["line"]) for d in found] == [(f".writenow/journal/{month.name}", conflict_line(text))]
    finally:
        bank.close()


def test_one_event_edited_on_two_sides_counts_once_the_same_live_and_rebuilt(bank: Bank, sample: Path) -> None:
    _feedback(bank)
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    line = month.read_text("utf-8").splitlines()[0]
    event = json.loads(line)
    event["weight"] = 0.5
    copy = month.with_name(f"{month.stem} (copy).jsonl")
    copy.write_text(json.dumps(event) + "\n", encoding="utf-8")
    bank.sync()
    live = _count(bank)
    bank.sync(rebuild=True)
    assert _count(bank) == live == 1  # the month's own file is the original
    assert [d["source"] for d in _codes(bank, "DUPLICATE_EVENTS")] == [f".writenow/journal/{copy.name}"]


def test_a_checkout_of_an_old_commit_gives_the_answers_of_a_fresh_rebuild(repo: Path) -> None:
    _work(repo, "laptop", 2)
    old = git(repo, "rev-parse", "HEAD").stdout.strip()
    bank = membank.open(repo)
    try:
        for _ in range(3):
            _feedback(bank)
        _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="later", wait=True)
        git_commit(repo, "later")
        assert _count(bank) == 5
        git(repo, "checkout", "-q", old)
        bank.sync()
        live = _answers(bank)
        assert live["count"] == 2 and live["episodes"]["total"] == 1
        bank.sync(rebuild=True)
        assert _answers(bank) == live
        git(repo, "checkout", "-q", "laptop")
        bank.sync()
        assert _count(bank) == 5
    finally:
        bank.close()


@pytest.mark.parametrize("text", [b"*.md text\r\n", b"*.md text", b"\xef\xbb\xbf*.md text\n"])
def test_git_setup_on_odd_gitattributes(repo: Path, text: bytes) -> None:
    attributes = repo / ".writenow" / ".gitattributes"
    attributes.write_bytes(text)
    bank = membank.open(repo)
    try:
        bank.git_setup()
        again = bank.git_setup()
        hints = _codes(bank, gitfiles.GIT_SETUP)
    finally:
        bank.close()
    assert again["written"] == []
    data = attributes.read_bytes()
    assert data.startswith(text.rstrip(b"\n") if text.endswith(b"\r\n") else text)
    got = git(repo, "check-attr", "merge", "--", ".writenow/journal/2026-11.jsonl").stdout
    assert got.strip().endswith("merge: union") and hints == []


@pytest.mark.parametrize("kind", ["folder", "fifo", "outside-link"])
def test_git_setup_refuses_a_gitattributes_that_is_not_a_file(repo: Path, tmp_path: Path, kind: str) -> None:
    attributes = repo / ".writenow" / ".gitattributes"
    attributes.unlink()
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n", encoding="utf-8")
    if kind == "folder":
        attributes.mkdir()
    elif kind == "fifo":
        os.mkfifo(attributes)  # read, it would hang `git-setup` for ever
    else:
        attributes.symlink_to(outside)
    bank = membank.open(repo)
    try:
        got = bank.call("project:git:setup", {})
        assert not got["ok"] and ".writenow/.gitattributes" in got["error"]["message"]
        assert "nothing was written" in got["error"]["message"]
        if kind != "outside-link":
            assert [d["message"] for d in _codes(bank, gitfiles.GIT_SETUP) if "not a text file" in d["message"]]
    finally:
        bank.close()
    assert outside.read_text("utf-8") == "x\n"


def test_conflict_line_edges() -> None:
    assert conflict_line("\ufeff<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n") == 1
    assert conflict_line("<<<<<<< HEAD\r\na\r\n||||||| base\r\nz\r\n=======\r\nb\r\n>>>>>>> x\r\n") == 1
    assert conflict_line("\ufeffTitle\n=======\n\ntext\n") is None


def test_a_journal_saved_with_a_bom_or_crlf_and_markers_counts_every_event(bank: Bank, sample: Path) -> None:
    _feedback(bank)
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    line = json.loads(month.read_text("utf-8").splitlines()[0])
    other = dict(line, eventId="e-other")
    month.write_bytes(b"\xef\xbb\xbf" + (f"<<<<<<< HEAD\r\n{json.dumps(line)}\r\n||||||| base\r\n=======\r\n"
                                          f"{json.dumps(other)}\r\n>>>>>>> laptop\r\n").encode("utf-8"))
    bank.sync()
    assert _count(bank) == 2
    found = [d for d in _ok(bank, "index:diagnostics")["items"] if d["source"].endswith(month.name)]
    assert [(d["line"], d["severity"], d.get("code")) for d in found] == [(1, "error", "MERGE_CONFLICT")]
    bank.sync(rebuild=True)
    assert _count(bank) == 2 and len(_codes(bank, "MERGE_CONFLICT")) == 1


def test_a_bank_deleted_and_restored_older_under_an_open_bank_answers_as_a_rebuild(bank: Bank, sample: Path,
                                                                                  tmp_path: Path) -> None:
    _feedback(bank)
    _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="first", wait=True)
    kept = tmp_path / "kept"
    shutil.copytree(sample / ".writenow", kept, ignore=shutil.ignore_patterns(".index"))
    for _ in range(2):
        _feedback(bank)
    _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="second", wait=True)
    shutil.rmtree(sample / ".writenow")
    assert bank.call("memory:episode:record", {"sceneType": "action"})["error"]["code"] == "NOT_FOUND"
    shutil.copytree(kept, sample / ".writenow")  # an older copy comes back (a backup, a checkout)
    bank.sync()
    live = _answers(bank)
    assert live["count"] == 1 and live["episodes"]["total"] == 1
    bank.sync(rebuild=True)
    assert _answers(bank) == live
    fresh = membank.open(sample)
    try:
        assert _answers(fresh) == live
    finally:
        fresh.close()


def test_an_episode_recalled_while_the_clock_was_ahead_is_said_so(bank: Bank, sample: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from membank.kernel import clock
    t0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
    moment = [t0 - timedelta(days=10)]
    with clock.use(lambda: moment[0]):
        _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="A", wait=True)
        moment[0] = t0 + timedelta(days=365)
        _ok(bank, "memory:episode:query", sceneType="action", limit=3)  # a recall a year ahead: 2027-11.jsonl
        assert (sample / ".writenow" / "journal" / "2027-11.jsonl").is_file()
        moment[0] = t0
        warned = _ok(bank, "index:status")["lifecycle"]["warnings"]
        assert any("1 episode(s)" in w and "recalled" in w for w in warned), warned
        daily = _ok(bank, "memory:lifecycle:run", trigger="daily")  # never stopped by it
        assert daily["levels"]["active"] == 1
        live = dict(bank.index.db.execute("SELECT id, level FROM episodes").fetchall())
        bank.sync(rebuild=True)
        assert dict(bank.index.db.execute("SELECT id, level FROM episodes").fetchall()) == live


def test_serve_follows_a_checkout_of_an_old_commit_and_dirties_nothing(repo: Path, home: Path) -> None:
    from tests.sidecar import Sidecar
    _work(repo, "laptop", 2)
    old = git(repo, "rev-parse", "HEAD").stdout.strip()
    server = Sidecar("--project", str(repo), home=home)
    try:
        server.ok("memory:episode:record", {"sceneType": "action", "skillUsed": "continue", "summary": "later",
                                            "wait": True})
        server.ok("context:assemble", {"skillId": "continue", "documentId": CH05})
        git_commit(repo, "later")
        assert server.ok("index:status")["episodes"]["total"] == 2
        server.ok("context:assemble", {"skillId": "continue", "documentId": CH05})  # a prompt: a trace only
        assert _tracked_changes(repo) == ""
        assert git(repo, "checkout", "-q", old, check=False).returncode == 0  # not refused
        # the watcher follows the checkout: an `index:changed` alone may be the last prompt's trace, or
        # the checkout's first files, so wait for what it must come to
        server.wait_for(lambda: server.ok("index:status")["episodes"]["total"] == 1, "the old commit's episode",
                        timeout=20)
        live = server.ok("index:status")["episodes"]
        assert _tracked_changes(repo) == ""
        git(repo, "checkout", "-q", "main")  # before any journal: the month file goes
        server.wait_for(lambda: server.ok("index:status")["episodes"]["total"] == 0, "no episodes", timeout=20)
        git(repo, "checkout", "-q", old)
        server.wait_for(lambda: server.ok("index:status")["episodes"] == live, "the old commit's episodes", timeout=20)
    finally:
        assert server.close() == 0
    assert _tracked_changes(repo) == ""

    fresh = membank.open(repo)
    try:
        fresh.sync(rebuild=True)
        assert _ok(fresh, "index:status")["episodes"] == live
    finally:
        fresh.close()


def test_two_clones_pull_both_ways_and_count_the_sum(repo: Path, tmp_path: Path) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(origin))
    machines = []
    for name, times in (("laptop", 2), ("desktop", 3)):
        clone = tmp_path / name
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        bank = membank.open(clone)
        try:
            for _ in range(times):
                _feedback(bank)
            _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary=name, wait=True)
            _ok(bank, "context:assemble", skillId="continue", documentId=CH05)
        finally:
            bank.close()
        git_commit(clone, name)
        machines.append(clone)
    laptop, desktop = machines
    git(laptop, "push", "-q", "origin", "main")
    pulled = git(desktop, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    git(desktop, "push", "-q", "origin", "main")
    git(laptop, "pull", "-q", "--no-rebase", "origin", "main")
    for clone in machines:
        bank = membank.open(clone)
        try:
            assert _count(bank) == 5 and _ok(bank, "index:status")["episodes"]["total"] == 2
            assert _codes(bank, "DUPLICATE_EVENTS") == [] and _codes(bank, "MERGE_CONFLICT") == []
        finally:
            bank.close()
        assert _tracked_changes(clone) == ""


def test_history_written_on_two_branches(repo: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from membank.kernel import clock
    t0 = datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc)
    for branch, summary in (("laptop", "the duel"), ("desktop", "the truce")):
        git(repo, "checkout", "-q", "-b", branch, "main")
        bank = membank.open(repo)
        try:
            with clock.use(lambda: t0):
                run = _ok(bank, "context:assemble", skillId="continue", documentId=CH05)["runId"]
                _ok(bank, "ai:skill:feedback", runId=run, action="accept", summary=summary)
            with clock.use(lambda: t0 + timedelta(days=8)):
                assert _ok(bank, "memory:lifecycle:run", trigger="weekly")["history"]
        finally:
            bank.close()
        git_commit(repo, branch)
    merged = git(repo, "merge", "--no-edit", "laptop", check=False)
    assert "CONFLICT (add/add)" in merged.stdout  # history/ is membank's, written on both: left (see the report)
    month = repo / ".writenow" / "history" / "2026-11.md"
    text = month.read_text("utf-8")
    bank = membank.open(repo)
    try:
        with clock.use(lambda: t0 + timedelta(days=9)):
            weekly = _ok(bank, "memory:lifecycle:run", trigger="weekly")
        assert weekly["kept"] == [".writenow/history/2026-11.md"] and month.read_text("utf-8") == text
        assert [w for w in weekly["warnings"] if "conflict markers" in w and "2026-11.md" in w]
    finally:
        bank.close()


def test_a_recall_edited_on_two_sides_counts_once_the_same_live_and_rebuilt(bank: Bank, sample: Path) -> None:
    _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="the duel", wait=True)
    _ok(bank, "memory:episode:query", sceneType="action", limit=3)
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    last = json.loads(month.read_text("utf-8").splitlines()[-1])
    assert last["event"] == "episode-recalled"
    later = dict(last, at=last["at"].replace(last["at"][11:13], "23"))  # the same recall, its time edited
    with month.open("a", encoding="utf-8") as f:
        f.write(json.dumps(later) + "\n")
    bank.sync()
    rows = "SELECT id, recall_count, last_recalled_at, level FROM episodes ORDER BY id"
    live = bank.index.db.execute(rows).fetchall()
    bank.sync(rebuild=True)
    assert bank.index.db.execute(rows).fetchall() == live
    assert live[0][1] == 1



@pytest.mark.parametrize(("line", "covered"), [
    ("journal/**/*.jsonl merge=union", True), ("/journal/*.jsonl\tmerge=union", True), ("*.jsonl merge=union", True),
    ("journal/**/*.jsonl -merge", True),  # the writer's own decision about merging the journal stands
    ("journal/notes.txt merge=union", False), ("journal/**/*.jsonl text", False), ("*.md merge=union", False)])
def test_only_a_line_that_matches_the_month_files_counts_as_the_writers_decision(line: str, covered: bool) -> None:
    assert gitfiles.has(f"# membank\r\n\r\n{line}\r\n", gitfiles.WANTED[0]) is covered


@pytest.mark.parametrize("channel", ["lifecycle:settings:update", "memory:settings:update"])
def test_a_settings_change_into_a_conflicted_settings_file_names_the_markers(sample: Path, channel: str) -> None:
    settings = sample / ".writenow" / "settings.yaml"
    text = ("# my settings\nlifecycle:\n<<<<<<< HEAD\n  compressedEpisodes: 100\n=======\n  compressedEpisodes: 200\n"
            ">>>>>>> laptop\n")
    settings.write_text(text, encoding="utf-8")
    bank = membank.open(sample)
    try:
        patch = {"compressedEpisodes": 10} if channel.startswith("lifecycle") else {"injectionMaxItems": 9}
        got = bank.call(channel, {"patch": patch})
    finally:
        bank.close()
    assert not got["ok"] and "(line 3)" in got["error"]["message"] and "conflict markers" in got["error"]["message"]
    assert settings.read_text("utf-8") == text


@pytest.mark.parametrize("at", ["garbage", "9999", "2026-13-45T99:00:00Z", None])
def test_a_journal_line_with_an_id_but_a_garbage_time_is_damaged_not_counted(bank: Bank, sample: Path,
                                                                            at: str | None) -> None:
    _feedback(bank)
    key = _key(bank)
    _ok(bank, "memory:preferences:clear")
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    line = {"event": "feedback", "eventId": "e-hand", "signalKey": key, "weight": 1, "runId": "r-x", "tags": []}
    if at is not None:
        line["at"] = at
    with month.open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    bank.sync()
    from membank.domains.learning import events
    with bank.index.lock:
        cleared = events.last_event(bank.index, "preferences-cleared")
        assert events.signal(bank.index, key, cleared)[0] == 0  # never counted after the clear
    found = [d for d in _ok(bank, "index:diagnostics")["items"] if d["source"] == f".writenow/journal/{month.name}"]
    assert [d["severity"] for d in found] == ["warning"]


def test_a_hand_written_time_with_an_offset_compares_as_utc(bank: Bank, sample: Path) -> None:
    from datetime import datetime, timezone

    from membank.domains.learning import events
    from membank.kernel import clock
    with clock.use(lambda: datetime(2026, 11, 20, 10, 0, tzinfo=timezone.utc)):
        _feedback(bank)
        key = _key(bank)
        _ok(bank, "memory:preferences:clear")
    # 09:00 UTC, an hour before the clear, yet after it as text: written on a machine in summer time
    line = {"event": "feedback", "eventId": "e-local", "at": "2026-11-20T11:00:00+02:00", "signalKey": key,
            "weight": 1, "tags": []}
    with (sample / ".writenow" / "journal" / "2026-11.jsonl").open("a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")
    bank.sync()
    with bank.index.lock:
        cleared = events.last_event(bank.index, "preferences-cleared")
        assert cleared.startswith("2026-11-20T10:00") and events.signal(bank.index, key, cleared)[0] == 0


def test_a_clear_dated_a_year_ahead_does_not_silence_learning(sample: Path) -> None:
    from datetime import datetime, timedelta, timezone

    from membank.kernel import clock
    t0 = datetime(2026, 11, 20, 10, 0, tzinfo=timezone.utc)
    moment = [t0 + timedelta(days=365)]
    with clock.use(lambda: moment[0]):
        bank = membank.open(sample)
        try:
            _ok(bank, "memory:preferences:clear")  # the clock a year ahead
            moment[0] = t0  # fixed
            assert _feedback(bank) == 1 and _feedback(bank) == 2
        finally:
            bank.close()


def test_one_event_id_in_two_month_files_counts_once(bank: Bank, sample: Path) -> None:
    _feedback(bank)
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    other = month.with_name("2026-01.jsonl")  # another month's file, as a clock set back might leave it
    other.write_text(month.read_text("utf-8").splitlines()[0] + "\n", encoding="utf-8")
    bank.sync()
    assert _count(bank) == 1
    assert len(_codes(bank, "DUPLICATE_EVENTS")) == 1
    bank.sync(rebuild=True)
    assert _count(bank) == 1
