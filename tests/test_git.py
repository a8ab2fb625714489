"""Git stays clean and merges (issue 30; files.md, Git; quality.md promise 11), with real `git` in a
temporary project: prompts make no tracked change, two branches that both used the assistant merge
without conflict and count the sum, a copied month file or a pasted line counts nothing twice,
conflict markers are an error and stay out of prompts, a month file turned into a folder is reported."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import membank
from membank import Bank
from membank.files import gitfiles, journal
from membank.files.parse import conflict_line
from membank.kernel import clock
from membank.shells.cli import app
from .helpers import git, git_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CH05 = "chapters/ch05.md"
SELECTION = "He drew. Steel rang."
EVIDENCE = "omit needless words"




def _tracked_changes(root: Path) -> list[str]:
    """`git status --porcelain` lines of tracked files (untracked ones would be `??`)."""
    return [line for line in git(root, "status", "--porcelain").stdout.splitlines() if not line.startswith("??")]


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def _run(bank: Bank) -> str:
    return _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION})["runId"]


def _feedback(bank: Bank, run: str = "r-cli") -> float:
    return _ok(bank, "memory:preferences:ingest", runId=run, skillId="continue", action="accept",
               evidenceRef=EVIDENCE)["count"]


def _codes(bank: Bank, code: str) -> list[dict[str, Any]]:
    return [d for d in _ok(bank, "index:diagnostics")["items"] if d.get("code") == code]


@pytest.fixture
def repo(sample: Path) -> Path:
    """The sample project (made before membank shipped git files) in a git repository, set up with
    `git-setup` as a writer would after doctor's hint, and committed."""
    git(sample, "init", "-q", "-b", "main")
    bank = membank.open(sample)
    try:
        hints = _codes(bank, gitfiles.GIT_SETUP)
        assert {d["source"] for d in hints} == {".writenow/.gitattributes", ".writenow/.gitignore"}
        assert all(d["severity"] == "warning" for d in hints)
        assert bank.git_setup()["written"] == [".writenow/.gitattributes", ".writenow/.gitignore"]
        assert _codes(bank, gitfiles.GIT_SETUP) == [] and bank.git_setup()["written"] == []
    finally:
        bank.close()
    git_commit(sample, "the novel")
    return sample


def test_prompts_make_no_tracked_change_and_their_traces_survive_a_rebuild(repo: Path) -> None:
    bank = membank.open(repo)
    try:
        git_commit(repo, "opened")
        runs = [_run(bank) for _ in range(5)]
        assert _tracked_changes(repo) == []
        assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == ""  # traces are ignored
        assert (repo / ".writenow" / journal.TRACES).is_dir()
        bank.sync(rebuild=True)
        trace = _ok(bank, "memory:trace:get", runId=runs[2])
        assert trace["source"].startswith(".writenow/journal/traces/") and trace["pieces"]
        _ok(bank, "memory:trace:feedback", runId=runs[2], verdict="correct")  # a verdict is the writer's: tracked
        changed = git(repo, "status", "--porcelain", "--untracked-files=all").stdout.splitlines()
        assert [line[3:] for line in changed] == [f".writenow/journal/{trace['at'][:7]}.jsonl"]
        assert [f["kind"] for f in _ok(bank, "memory:trace:get", runId=runs[2])["feedback"]] == ["verdict"]
    finally:
        bank.close()


def test_old_run_lines_in_the_tracked_journal_keep_working(repo: Path) -> None:
    month = repo / ".writenow" / "journal" / "2026-10.jsonl"
    old = {"event": "run", "at": "2026-10-02T09:00:00.000000Z", "runId": "r-old", "skillId": "continue",
           "documentId": CH05, "stablePrefixHash": "abc", "pieces": []}  # no eventId: written before ids
    month.write_text(json.dumps(old) + "\n", encoding="utf-8")
    bank = membank.open(repo)
    try:
        assert _ok(bank, "memory:trace:get", runId="r-old")["source"] == ".writenow/journal/2026-10.jsonl#L1"
        got = _ok(bank, "ai:skill:feedback", runId="r-old", action="accept", sceneType="action")
        assert got["episode"]["skillUsed"] == "continue"
    finally:
        bank.close()


def test_two_branches_merge_without_conflict_and_count_the_sum(repo: Path) -> None:
    # below the learning threshold: a preference learned on both branches is a memory file each writes
    # (an add/add conflict: its times and evidence runs differ; the template README says so)
    settings = repo / ".writenow" / "settings.yaml"
    settings.write_text(settings.read_text("utf-8").replace("preferenceLearningThreshold: 2",
                                                            "preferenceLearningThreshold: 10"), encoding="utf-8")
    git_commit(repo, "learn later")
    def work(branch: str) -> None:
        git(repo, "checkout", "-q", "-b", branch, "main")
        bank = membank.open(repo)
        try:
            assert _feedback(bank) == 1 and _feedback(bank) == 2
            _ok(bank, "ai:skill:feedback", runId=_run(bank), action="accept", sceneType="action")
        finally:
            bank.close()
        git_commit(repo, f"work on {branch}")

    work("laptop")
    work("desktop")
    merged = git(repo, "merge", "--no-edit", "laptop", check=False)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert "CONFLICT" not in merged.stdout and _tracked_changes(repo) == []
    bank = membank.open(repo)
    try:
        assert _ok(bank, "index:status")["episodes"]["total"] == 2
        assert _feedback(bank) == 5  # 2 + 2 + this one
        assert _codes(bank, "DUPLICATE_EVENTS") == []
    finally:
        bank.close()


def test_two_branches_feeding_a_learned_preference_merge_without_conflict(repo: Path) -> None:
    bank = membank.open(repo)  # the sample learns after 2: the preference is learned on main
    try:
        assert _feedback(bank, "r-0") == 1 and _feedback(bank, "r-1") == 2
        learned = bank.list_memories(origin="learned")["items"]
        path = next(repo / m["source"] for m in learned if m["content"] == f"Prefer: {EVIDENCE}")
    finally:
        bank.close()
    git_commit(repo, "learned")
    before = path.read_bytes()
    for branch in ("laptop", "desktop"):
        git(repo, "checkout", "-q", "-b", branch, "main")
        bank = membank.open(repo)
        try:
            later = _ok(bank, "memory:preferences:ingest", runId=f"r-{branch}", skillId="continue", action="accept",
                        evidenceRef=EVIDENCE)
            assert later["count"] == 3  # counted in the journal
        finally:
            bank.close()
        git_commit(repo, f"work on {branch}")
    merged = git(repo, "merge", "--no-edit", "laptop", check=False)
    assert merged.returncode == 0 and "CONFLICT" not in merged.stdout, merged.stdout + merged.stderr
    assert path.read_bytes() == before and "learned" not in later  # the file stays as learned
    bank = membank.open(repo)
    try:
        assert _feedback(bank, "r-after") == 5  # 2 + 1 + 1 + this one
        assert _codes(bank, "MERGE_CONFLICT") == []
    finally:
        bank.close()


def test_a_copied_month_file_or_a_pasted_line_counts_nothing_twice(bank: Bank, sample: Path) -> None:
    for _ in range(2):
        _feedback(bank)
    episode = _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="the duel", wait=True)
    _ok(bank, "memory:episode:query", sceneType="action", limit=3)  # one recall, journaled
    before = {i["id"]: i["recallCount"] for i in _ok(bank, "memory:episode:query", sceneType="action", limit=3)["items"]}
    assert before[episode["id"]] == 1
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    copy = month.with_name(f"{month.stem} (Writer's conflicted copy 2026-11-27).jsonl")
    shutil.copyfile(month, copy)
    lines = month.read_text("utf-8").splitlines(keepends=True)
    with month.open("a", encoding="utf-8") as f:
        f.write(lines[0] + lines[-1])  # a feedback line and the last recall, pasted again
    bank.sync()
    assert _feedback(bank) == 3  # not 6
    counts = _ok(bank, "memory:episode:query", sceneType="action", limit=3)["items"]
    assert {i["id"]: i["recallCount"] for i in counts} == {episode["id"]: 2}  # the query above, once more
    assert _ok(bank, "index:status")["episodes"]["total"] == 1
    warned = {d["source"]: d for d in _codes(bank, "DUPLICATE_EVENTS")}
    assert set(warned) == {f".writenow/journal/{copy.name}", f".writenow/journal/{month.name}"}
    assert warned[f".writenow/journal/{copy.name}"]["severity"] == "warning"
    assert warned[f".writenow/journal/{month.name}"]["line"] == len(lines) + 1
    bank.sync(rebuild=True)
    assert _feedback(bank) == 4
    copy.unlink()  # the copy deleted: nothing it counted is lost, its warning goes
    bank.sync()
    assert _feedback(bank) == 5
    assert [d["source"] for d in _codes(bank, "DUPLICATE_EVENTS")] == [f".writenow/journal/{month.name}"]


def test_an_old_event_without_an_id_counts_once_by_its_exact_text(bank: Bank, sample: Path) -> None:
    line = json.dumps({"event": "feedback", "at": "2026-10-01T08:00:00Z", "signalKey": "prefer:abc", "weight": 1,
                       "runId": "r-1", "evidence": "x", "tags": []})
    month = sample / ".writenow" / "journal" / "2026-10.jsonl"
    month.write_text(f"{line}\n{line}\n", encoding="utf-8")
    (month.parent / "2026-10 copy.jsonl").write_text(f"{line}\n", encoding="utf-8")
    bank.sync()
    from membank.domains.learning import events
    with bank.index.lock:
        assert events.signal(bank.index, "prefer:abc", None)[0] == 1


def test_conflict_markers_are_an_error_and_stay_out_of_prompts(repo: Path) -> None:
    memory = repo / ".writenow" / "memories" / "preferences" / "short-sentences-in-action.md"
    text = memory.read_text("utf-8")
    for branch, word in (("laptop", "CRISP-LAPTOP"), ("desktop", "CRISP-DESKTOP")):
        git(repo, "checkout", "-q", "-b", branch, "main")
        memory.write_text(text.rstrip("\n") + f"\nKeep them {word}.\n", encoding="utf-8")
        git_commit(repo, branch)
    merged = git(repo, "merge", "--no-edit", "laptop", check=False)
    assert merged.returncode != 0 and "<<<<<<<" in memory.read_text("utf-8")
    bank = membank.open(repo)
    try:
        found = _codes(bank, "MERGE_CONFLICT")
        marker = memory.read_text("utf-8").splitlines().index(next(x for x in memory.read_text("utf-8").splitlines()
                                                                   if x.startswith("<<<<<<<"))) + 1
        assert [(d["source"], d["line"], d["severity"]) for d in found] == \
            [(".writenow/memories/preferences/short-sentences-in-action.md", marker, "error")]
        prompt = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION})
        preview = json.dumps(bank.preview(document_id=CH05, query_text="short sentences"))
        for shown in (prompt["systemPrompt"] + prompt["userContent"], preview):
            assert "CRISP-" not in shown and "<<<<<<<" not in shown
        result = CliRunner().invoke(app, ["doctor", str(repo), "--json"])
        assert result.exit_code == 1 and '"code": "MERGE_CONFLICT"' in result.output
        memory.write_text(text.rstrip("\n") + "\nKeep them CRISP-LAPTOP.\n", encoding="utf-8")  # resolved
        bank.sync()
        assert _codes(bank, "MERGE_CONFLICT") == []
        prompt = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION})
        assert "CRISP-LAPTOP" in prompt["systemPrompt"] + prompt["userContent"]
    finally:
        bank.close()


def test_a_month_file_replaced_by_a_folder_is_reported(bank: Bank, sample: Path) -> None:
    _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", summary="the duel", wait=True)
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    data = month.read_bytes()
    month.unlink()
    month.mkdir()
    (month / month.name).write_bytes(data)  # what a sync tool may leave
    bank.sync()
    errors = [d for d in _ok(bank, "index:diagnostics")["items"] if d["source"] == f".writenow/journal/{month.name}"]
    assert [d["severity"] for d in errors] == ["error"] and "folder" in errors[0]["message"]
    assert _ok(bank, "index:status")["diagnostics"]["errors"] >= 1
    shutil.rmtree(month)
    month.write_bytes(data)
    bank.sync()
    assert _ok(bank, "index:status")["episodes"]["total"] == 1
    assert [d for d in _ok(bank, "index:diagnostics")["items"] if "/journal/" in d["source"]] == []


def test_conflict_line_finds_markers_not_headings_or_quotations() -> None:
    assert conflict_line("a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> other\n") == 2
    assert conflict_line("a\r\nb\r\n=======\r\nc\r\n>>>>>>> theirs\r\n") == 5  # the opening line deleted by hand
    assert conflict_line("Title\n=======\n\ntext\n") is None  # a Markdown heading
    assert conflict_line(">>>>>>> a deep quotation\n") is None
    assert conflict_line("<<<<<<<< eight is not a marker\n") is None


def test_git_files_keep_the_writers_own_decision() -> None:
    union = gitfiles.WANTED[0]
    traces = gitfiles.WANTED[2]
    assert gitfiles.has("journal/**/*.jsonl merge=union\n", union)
    assert not gitfiles.has("# journal/**/*.jsonl merge=union\n", union)
    assert gitfiles.has("!journal/traces/\n", traces)  # the writer keeps traces in git: left alone
    assert not gitfiles.has(".index/\n", traces)
    assert gitfiles.with_lines("a", [traces]).startswith("a\n# ") and gitfiles.with_lines("a", [traces]).endswith(
        "journal/traces/\n")


def test_git_setup_from_the_cli_and_no_hint_outside_git(bank: Bank, sample: Path) -> None:
    assert _codes(bank, gitfiles.GIT_SETUP) == []  # not in git: nothing to say
    result = CliRunner().invoke(app, ["git-setup", "-C", str(sample)])
    assert result.exit_code == 0 and "added the missing lines to .writenow/.gitattributes" in result.output
    assert "journal/**/*.jsonl merge=union" in (sample / ".writenow" / ".gitattributes").read_text("utf-8")
    ignore = (sample / ".writenow" / ".gitignore").read_text("utf-8")
    assert ignore.startswith("# .index/ is a search index") and ignore.endswith("journal/traces/\n")


def test_every_event_gets_an_id() -> None:
    assert journal.key_of({"eventId": "e-1"}, b"anything") == "id:e-1"
    assert journal.key_of({}, b'{"a": 1}\r\n') == journal.key_of({}, b'{"a": 1}')


def test_a_run_line_pasted_twice_is_listed_once_in_history(bank: Bank, sample: Path) -> None:
    start = datetime(2026, 11, 2, 12, 0, tzinfo=timezone.utc)
    with clock.use(lambda: start):
        _ok(bank, "ai:skill:feedback", runId=_run(bank), action="accept", sceneType="action")
    traces = sample / ".writenow" / journal.TRACES / "2026-11.jsonl"
    with traces.open("a", encoding="utf-8") as f:
        f.write(traces.read_text("utf-8").splitlines(keepends=True)[-1])
    bank.sync()
    with clock.use(lambda: start + timedelta(days=8)):
        assert _ok(bank, "memory:lifecycle:run", trigger="weekly")["runs"] == 1
    text = (sample / ".writenow" / "history" / "2026-11.md").read_text("utf-8")
    assert sum(1 for line in text.splitlines() if line.startswith("- ") and "continue" in line) == 1


def test_conflict_markers_in_settings_and_project_yaml_are_named(sample: Path) -> None:
    settings = sample / ".writenow" / "settings.yaml"
    settings.write_text("memory:\n<<<<<<< HEAD\n  injectionMaxItems: 5\n=======\n  injectionMaxItems: 7\n"
                        ">>>>>>> laptop\n", encoding="utf-8")
    bank = membank.open(sample)
    try:
        assert [(d["source"], d["line"]) for d in _codes(bank, "MERGE_CONFLICT")] == [(".writenow/settings.yaml", 2)]
        assert bank.settings()["injectionMaxItems"] == 20  # the default, not either half
    finally:
        bank.close()
    project = sample / ".writenow" / "project.yaml"
    text = project.read_text("utf-8")
    project.write_text(f"<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> laptop\n", encoding="utf-8")
    with pytest.raises(membank.MembankError, match=r"project\.yaml:1 holds git conflict markers"):
        membank.open(sample)


def test_a_journal_or_traces_folder_that_is_a_file_is_reported(bank: Bank, sample: Path) -> None:
    traces = sample / ".writenow" / journal.TRACES
    traces.parent.mkdir(exist_ok=True)
    traces.write_text("not a folder\n", encoding="utf-8")
    prompt = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION})
    assert [r["code"] for r in prompt["diagnostics"]["reasons"] if r["code"] == "TRACE_NOT_WRITTEN"] == \
        ["TRACE_NOT_WRITTEN"]  # the prompt is still given
    bank.sync()
    found = [d for d in _ok(bank, "index:diagnostics")["items"] if d["source"] == ".writenow/journal/traces"]
    assert [d["severity"] for d in found] == ["error"] and "folder" in found[0]["message"]


def test_a_trace_lists_each_verdict_once_however_many_copies(bank: Bank, sample: Path) -> None:
    run = _run(bank)
    _ok(bank, "memory:trace:feedback", runId=run, verdict="incorrect", reason="the wrong cards")
    month = next((sample / ".writenow" / "journal").glob("*.jsonl"))
    shutil.copyfile(month, month.with_name(f"{month.stem} (copy).jsonl"))
    with month.open("a", encoding="utf-8") as f:
        f.write(month.read_text("utf-8"))  # pasted twice as well
    for sync in (bank.sync, lambda: bank.sync(rebuild=True)):
        sync()
        assert [f["verdict"] for f in _ok(bank, "memory:trace:get", runId=run)["feedback"]] == ["incorrect"]


def test_every_read_channel_leaves_the_work_tree_clean(repo: Path, tmp_path: Path) -> None:
    """Reading changes no file git sees (files.md, Git): each channel the catalog declares a read, called
    on a committed project (with an assembled prompt's run to read back), and the CLI's read commands."""
    from membank.runtime.catalog import READS

    bank = membank.open(repo)
    try:
        run = _run(bank)
        git_commit(repo, "opened")
        memory = _ok(bank, "memory:list")["items"][0]["id"]
        at = {"at": CH05}
        calls: dict[str, dict[str, Any]] = {
            "capture:pending": {"documentId": CH05}, "capture:prepare": {"documentId": CH05}, "capture:status": {},
            "card:export": {"source": ".writenow/characters/lin-mo.md", "format": "json",
                            "output": str(tmp_path / "lin-mo.json")},
            "context:assemble": {"skillId": "continue", "documentId": CH05, "selection": {"text": SELECTION}},
            "index:diagnostics": {}, "index:status": {}, "kg:appearances": {"name": "Lin Mo"},
            "kg:consistency:check": {"documentId": CH05, "text": SELECTION}, "kg:entity:get": {"name": "Lin Mo", **at},
            "kg:entity:list": at, "kg:mentions": {"text": "Lin Mo and Su Yao"}, "kg:relations": {"name": "Lin Mo", **at},
            "kg:state": {"name": "Lin Mo", **at}, "manuscript:search": {"queryText": "lighthouse"},
            "manuscript:status": {}, "memory:get": {"id": memory}, "memory:injection:preview": {"documentId": CH05},
            "memory:list": {}, "memory:settings:get": {}, "memory:trace:get": {"runId": run},
            "skill:get": {"skillId": "continue"}, "skill:list": {}, "story:duplicates": {}, "story:reader": at,
            "story:scene": at, "story:threads": at, "summary:list": {}}
        assert set(calls) == READS  # a new read channel is tried here too
        for channel, payload in calls.items():
            _ok(bank, channel, **payload)
    finally:
        bank.close()
    for command in (["status", str(repo)], ["doctor", str(repo)], ["list", "--all", str(repo)],
                    ["preview", "-d", CH05, str(repo)], ["skills", "-C", str(repo)], ["manuscript", "-C", str(repo)],
                    ["context", "continue", "-d", CH05, "--selection", SELECTION, "-C", str(repo)]):
        assert CliRunner().invoke(app, command).exit_code in (0, 1), command  # 1: doctor's errors
    assert git(repo, "status", "--porcelain", "--untracked-files=all").stdout == ""
