"""Working memory (issue 17): per-session entries held in the process only, the token cap and its
eviction order, and the session's end (or the project's close, or the sidecar's) archiving the signals
that reached the learning threshold as episodes (seed 003 MS1-R1-S2, MS1-R1-S3)."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import membank
from membank import Bank
from membank.kernel.errors import MembankError
from membank.shells.cli import app

from .sidecar import Sidecar

CAP = 8000  # lifecycle.workingTokens's default: the sample project keeps it


def text(label: str, tokens: int) -> str:
    """ASCII text of exactly `tokens` estimated tokens (four characters each)."""
    return (label + " ").ljust(4 * tokens, ".")


def ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def add(bank: Bank, content: str, importance: float, kind: str = "note", session: str = "s1", **more: Any) -> Any:
    return ok(bank, "memory:working:add", sessionId=session, kind=kind, content=content, importance=importance, **more)


def contents(bank: Bank, session: str = "s1") -> list[str]:
    return [e["content"] for e in ok(bank, "memory:working:list", sessionId=session)["items"]]


def journal(sample: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((sample / ".writenow/journal").rglob("*.jsonl"))
            for line in f.read_text("utf-8").splitlines()]


def archived(sample: Path) -> list[dict[str, Any]]:
    return [e["episode"] for e in journal(sample) if e.get("event") == "episode"]


def snapshot(*folders: Path) -> dict[str, tuple[int | None, int, str | None]]:
    """Every file and folder under `folders`: size, mtime and hash (a folder's mtime shows a file made
    and removed again)."""
    found: dict[str, tuple[int | None, int, str | None]] = {}
    for folder in folders:
        for p in [folder, *sorted(folder.rglob("*"))]:
            st = p.stat()
            found[str(p)] = (None, st.st_mtime_ns, None) if p.is_dir() else \
                (st.st_size, st.st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
    return found


# -- the cap and eviction ------------------------------------------------------------------------------


def test_over_8k_tokens_the_lowest_importance_goes_first(bank: Bank) -> None:  # MS1-R1-S2
    for label, importance in (("A", 0.5), ("B", 0.2), ("C", 0.8), ("D", 0.2)):
        assert add(bank, text(label, 2000), importance)["evicted"] == []
    assert ok(bank, "memory:working:list", sessionId="s1")["tokens"] == CAP
    added = add(bank, "E now", 0.9)  # one token more than the cap holds
    assert [e["content"][0] for e in added["evicted"]] == ["B"]  # 0.2, and older than D
    assert added["tokens"] == 6000 + added["entry"]["tokenCount"] and added["capTokens"] == CAP
    assert [c[0] for c in contents(bank)] == ["A", "C", "D", "E"]
    # the newcomer is always held, even less important than what it evicts: it is what the writer does now
    low = add(bank, text("F", 2000), 0.1)
    assert [e["content"][0] for e in low["evicted"]] == ["D"] and low["tokens"] <= CAP
    assert [c[0] for c in contents(bank)] == ["A", "C", "E", "F"]


SEA, BILL = "The sea was wild with thunder and waves", "She paid the electricity bill at the bank"


def _two_alike_and_full(bank: Bank, first: str, second: str, **focus: str) -> None:
    """`first` then `second` at the same importance, and a heavier entry filling the cap exactly."""
    a, b = add(bank, first, 0.5)["entry"]["tokenCount"], add(bank, second, 0.5)["entry"]["tokenCount"]
    add(bank, text("filler", CAP - a - b), 0.9, **focus)


def test_without_a_focus_the_oldest_of_equal_importance_goes(bank: Bank) -> None:
    _two_alike_and_full(bank, SEA, BILL)
    added = add(bank, "ok", 0.9)
    assert [e["content"] for e in added["evicted"]] == [SEA] and added["relation"] is None


def test_with_the_model_the_entry_least_like_the_focus_goes(bank: Bank) -> None:
    _two_alike_and_full(bank, SEA, BILL)
    added = add(bank, "ok", 0.9, focus="a storm over the ocean")  # no word in common with either
    assert [e["content"] for e in added["evicted"]] == [BILL] and added["relation"] == "semantic"
    assert ok(bank, "memory:working:list", sessionId="s1")["focus"] == "a storm over the ocean"


@pytest.mark.parametrize("first, second, focus", [
    (SEA, BILL, "thunder over the sea"),
    ("林默在海边看着巨浪", "她去超市买了牛奶", "海边的巨浪"),
])
def test_without_the_model_the_entry_sharing_fewest_words_with_the_focus_goes(
        bank: Bank, monkeypatch: pytest.MonkeyPatch, first: str, second: str, focus: str) -> None:
    monkeypatch.setattr(bank, "embedder", lambda: None)  # the model cannot load
    _two_alike_and_full(bank, first, second, focus=focus)
    added = add(bank, "ok", 0.9)  # the focus given earlier is still the focus
    assert [e["content"] for e in added["evicted"]] == [second] and added["relation"] == "words"


def test_the_same_entry_again_is_refreshed_not_added(bank: Bank) -> None:
    first = add(bank, "Omit needless words.", 0.3, kind="signal")["entry"]
    again = add(bank, "  omit NEEDLESS   words. ", 0.6, kind="Signal")["entry"]
    assert again["id"] == first["id"] and again["count"] == 2 and again["importance"] == 0.6
    assert add(bank, "omit needless words.", 0.1, kind="signal")["entry"]["importance"] == 0.6  # the highest stays
    assert add(bank, "Omit needless words.", 0.3, kind="note")["entry"]["id"] != first["id"]  # another kind
    assert len(contents(bank)) == 2


def test_sessions_are_apart(bank: Bank) -> None:
    add(bank, "in one", 0.5, session="one")
    add(bank, "in two", 0.5, session="two")
    assert contents(bank, "one") == ["in one"] and contents(bank, "two") == ["in two"]
    assert contents(bank, "never-seen") == []


def test_nothing_reaches_the_disk_while_adding_listing_and_evicting(bank: Bank, sample: Path, home: Path) -> None:
    before = snapshot(sample, home)
    evicted = []
    for i in range(6):
        evicted += bank.add_working("s1", "note", text(f"entry {i}", 1500), 0.1 * i, focus="the storm at sea")["evicted"]
    evicted += bank.add_working("s1", "signal", SEA, 0.9)["evicted"]
    bank.add_working("s2", "signal", BILL, 0.5)
    bank.add_working("s1", "signal", SEA, 0.9)
    assert bank.list_working("s1")["tokens"] <= CAP and len(evicted) == 1
    ok(bank, "memory:working:add", sessionId="s3", kind="selection", content="林默在海边", importance=0.4)
    ok(bank, "memory:working:list", sessionId="s3")
    assert snapshot(sample, home) == before  # .writenow/.index/ included


# -- the end of a session --------------------------------------------------------------------------------


def test_ending_archives_the_signals_that_reached_the_threshold_and_drops_the_rest(
        bank: Bank, sample: Path) -> None:  # MS1-R1-S3
    threshold = ok(bank, "memory:working:list", sessionId="s1")["threshold"]
    assert threshold == 2  # the sample project learns after two
    for importance in (0.4, 0.7):
        add(bank, "Keep the sea close", importance, kind="signal")
    add(bank, "Short sentences", 0.9, kind="signal")  # once: below the threshold
    add(bank, "Lin is hiding the letter", 0.9, kind="note")  # not a signal
    listed = ok(bank, "memory:working:list", sessionId="s1")["items"]
    assert [e["reached"] for e in listed] == [True, False, False]
    ended = ok(bank, "memory:session:end", sessionId="s1")
    assert ended["ended"] is True and ended["dropped"] == 2
    [episode] = ended["archived"]
    assert episode["summary"] == "Keep the sea close" and episode["importance"] == 0.7
    assert episode["tags"] == ["signal", "working-memory"] and episode["action"] == "accept"
    assert episode["implicitSignal"] == "DIRECT_ACCEPT" and episode["signalWeight"] == 1.0
    file, line = episode["source"].split("#L")
    assert file.startswith(".writenow/journal/")
    written = json.loads((sample / file).read_text("utf-8").splitlines()[int(line) - 1])
    assert written["event"] == "episode" and written["episode"]["id"] == episode["id"]
    assert contents(bank) == []  # the working memory is empty
    assert ok(bank, "memory:session:end", sessionId="s1") == {"sessionId": "s1", "ended": False, "archived": [],
                                                              "dropped": 0}
    found = ok(bank, "memory:episode:query", queryText="keep the sea near", limit=3)["items"]
    assert episode["id"] in [e["id"] for e in found]


def test_privacy_mode_archives_without_the_text(bank: Bank, sample: Path) -> None:
    ok(bank, "memory:settings:update", patch={"privacyModeEnabled": True})
    for _ in range(2):
        add(bank, "a private turn of phrase", 0.5, kind="signal")
    [episode] = ok(bank, "memory:session:end", sessionId="s1")["archived"]
    assert episode["summary"] is None and "working-memory" in episode["tags"]
    assert "a private turn of phrase" not in "".join(
        f.read_text("utf-8") for f in (sample / ".writenow/journal").rglob("*.jsonl"))


def test_an_archive_that_cannot_be_written_keeps_the_session(bank: Bank, sample: Path) -> None:
    for _ in range(2):
        add(bank, "keep the sea close", 0.5, kind="signal")
    folder = sample / ".writenow" / "journal"
    shutil.rmtree(folder, ignore_errors=True)
    folder.write_text("not a folder", "utf-8")  # root ignores permissions: a file where the folder goes
    failed = bank.call("memory:session:end", {"sessionId": "s1"})
    assert failed["error"]["code"] == "MEMORY_EPISODE_WRITE_FAILED"
    assert contents(bank) == ["keep the sea close"]  # ending again retries
    folder.unlink()
    folder.mkdir()
    assert len(ok(bank, "memory:session:end", sessionId="s1")["archived"]) == 1


def test_closing_the_project_ends_every_session(sample: Path) -> None:
    bank = membank.open(sample)
    for session in ("one", "two"):
        for _ in range(2):
            bank.add_working(session, "signal", f"a signal in {session}", 0.5)
    bank.add_working("three", "note", "dropped on close", 0.5)
    assert archived(sample) == []
    bank.close()
    assert sorted(e["summary"] for e in archived(sample)) == ["a signal in one", "a signal in two"]
    with pytest.raises(MembankError) as refused:
        bank.add_working("one", "note", "too late", 0.5)
    assert refused.value.code == "DB_ERROR"


def test_closing_the_sidecar_archives_first(sample: Path, home: Path) -> None:
    server = Sidecar("--project", str(sample), "--no-watch", home=home)
    try:
        for _ in range(2):
            assert server.call("memory:working:add", {"sessionId": "app-1", "kind": "signal", "importance": 0.6,
                                                      "content": "let the sea speak first"})["ok"]
        assert server.call("memory:working:add", {"sessionId": "app-1", "kind": "note", "importance": 0.6,
                                                  "content": "never archived"})["ok"]
        assert archived(sample) == []  # held in the sidecar only
        assert server.close() == 0  # stdin closed
        [episode] = archived(sample)
        assert episode["summary"] == "let the sea speak first" and "working-memory" in episode["tags"]
        assert not server.bad_lines
    finally:
        server.kill()


# -- bounds, threads, the CLI ---------------------------------------------------------------------------


GOOD = {"sessionId": "s1", "kind": "note", "content": "text", "importance": 0.5}


@pytest.mark.parametrize("channel, payload, field", [
    ("memory:working:add", {**GOOD, "importance": 1.5}, "importance"),
    ("memory:working:add", {**GOOD, "importance": -0.1}, "importance"),
    ("memory:working:add", {k: v for k, v in GOOD.items() if k != "importance"}, "importance"),
    ("memory:working:add", {**GOOD, "kind": "k" * 65}, "kind"),
    ("memory:working:add", {**GOOD, "kind": "  "}, "kind"),
    ("memory:working:add", {**GOOD, "sessionId": "s" * 201}, "sessionId"),
    ("memory:working:add", {**GOOD, "sessionId": " "}, "sessionId"),
    ("memory:working:add", {**GOOD, "content": "a\ud800b"}, "content"),
    ("memory:working:add", {**GOOD, "content": " \n "}, "content"),
    ("memory:working:add", {**GOOD, "content": text("too much", CAP + 1)}, "content"),  # alone over the cap
    ("memory:working:add", {**GOOD, "focus": "f" * 20_001}, "focus"),
    ("memory:working:add", {**GOOD, "pinned": True}, "pinned"),
    ("memory:working:list", {"sessionId": "s" * 201}, "sessionId"),
    ("memory:session:end", {}, "sessionId"),
])
def test_payloads_out_of_bounds_are_refused_naming_the_field(bank: Bank, channel: str, payload: dict[str, Any],
                                                             field: str) -> None:
    envelope = bank.call(channel, payload)
    assert envelope["error"]["code"] == "INVALID_ARGUMENT" and envelope["error"]["details"]["field"] == field
    assert contents(bank) == []


def test_open_sessions_are_bounded(bank: Bank) -> None:
    for i in range(100):
        add(bank, "x", 0.5, session=f"s{i}")
    refused = bank.call("memory:working:add", {**GOOD, "sessionId": "one-more"})
    assert refused["error"]["details"]["field"] == "sessionId"
    add(bank, "y", 0.5, session="s0")  # an open one takes more
    ok(bank, "memory:session:end", sessionId="s0")
    add(bank, "x", 0.5, session="one-more")


def test_threads_adding_at_once_keep_every_session_within_the_cap(bank: Bank) -> None:
    problems: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                bank.add_working(f"s{n % 2}", "note", text(f"{n}-{i}", 500), (i % 7) / 7, focus=f"thread {n}")
                bank.list_working(f"s{n % 2}")
        except BaseException as e:  # pragma: no cover - reported below
            problems.append(e)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not problems
    for session in ("s0", "s1"):
        listed = bank.list_working(session)
        assert listed["tokens"] == sum(e["tokenCount"] for e in listed["items"]) <= CAP
        assert len(listed["items"]) == CAP // 500


def test_a_cli_session_lasts_one_command(sample: Path) -> None:
    runner = CliRunner()

    def run(*args: str) -> dict[str, Any]:
        result = runner.invoke(app, [*args, "-C", str(sample), "--json"])
        assert result.exit_code == 0, result.stdout
        return json.loads(result.stdout)["data"]  # type: ignore[no-any-return]

    assert run("working-add", "s1", "signal", "keep the sea close", "--importance", "0.7")["entry"]["count"] == 1
    assert run("working", "s1")["items"] == []
    assert run("session-end", "s1")["ended"] is False
    assert archived(sample) == []  # one add is below the sample's threshold of two: dropped with the command
    runner.invoke(app, ["settings", "set", "memory.preferenceLearningThreshold=1", "-C", str(sample)])
    run("working-add", "s1", "signal", "keep the sea close")
    assert [e["summary"] for e in archived(sample)] == ["keep the sea close"]  # archived as the command closed
