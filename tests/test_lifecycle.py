"""The lifecycle of episodes (episodes.md): capacities and eviction (seed 003 MS1-R3-S1, MS1-X-S2),
stored decay reproducible from the journal, the four triggers, compact history, and degraded memory
(MS1-R3-S2). Time is injected with `clock.use`; nothing waits on the wall clock."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

import membank
from membank import Bank
from membank.kernel import clock
from membank.shells.cli import app

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
CH05 = "chapters/ch05.md"


@pytest.fixture
def now() -> Iterator[list[datetime]]:
    moment = [T0]
    with clock.use(lambda: moment[0]):
        yield moment


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def _settings(sample: Path, **lifecycle: int) -> None:
    with (sample / ".writenow" / "settings.yaml").open("a", encoding="utf-8") as f:
        f.write("\nlifecycle:\n" + "".join(f"  {k}: {v}\n" for k, v in lifecycle.items()))


def _record(bank: Bank, now: list[datetime], days_ago: float, **fields: Any) -> str:
    """An episode recorded `days_ago` before T0 (the clock is moved back for the write, then restored)."""
    saved = now[0]
    now[0] = T0 - timedelta(days=days_ago)
    try:
        return _ok(bank, "memory:episode:record", wait=True, **{"sceneType": "action", **fields})["id"]
    finally:
        now[0] = saved


def _live(bank: Bank) -> set[str]:
    """The live episodes, read from the index (a query would journal a recall, and recalls order eviction)."""
    return {i for (i,) in bank.index.db.execute("SELECT id FROM episodes WHERE evicted = 0")}


def _lines(sample: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((sample / ".writenow/journal").rglob("*.jsonl"))
            for line in f.read_text("utf-8").splitlines()]


def test_a_full_store_evicts_the_expired_first_then_the_least_recently_used(sample: Path, now: list[datetime]) -> None:
    _settings(sample, activeEpisodes=3, episodeTtlDays=30)  # MS1-R3-S1
    bank = membank.open(sample)
    try:
        old = _record(bank, now, 40)  # past its TTL
        kept = _record(bank, now, 20, pinned=True)  # older than `used`, but pinned
        used = _record(bank, now, 10)
        fresh = _record(bank, now, 1)  # the store is full: the expired one goes
        assert _live(bank) == {kept, used, fresh}
        newest = _record(bank, now, 0)  # full again: the least recently used one goes, never the pinned one
        assert _live(bank) == {kept, fresh, newest}
        evictions = [(e["ids"], e["reason"]) for e in _lines(sample) if e["event"] == "episode-evicted"]
        assert evictions == [([old], "ttl"), ([used], "lru")]
    finally:
        bank.close()


def test_a_store_of_kept_episodes_refuses_the_write(sample: Path, now: list[datetime]) -> None:  # MS1-X-S2
    _settings(sample, activeEpisodes=2)
    bank = membank.open(sample)
    try:
        run = _ok(bank, "context:assemble", skillId="continue", documentId=CH05)["runId"]
        _ok(bank, "ai:skill:feedback", runId=run, action="accept")
        _ok(bank, "memory:trace:feedback", runId=run, verdict="correct")  # confirmed by the writer: kept
        _record(bank, now, 1, pinned=True)
        before = _lines(sample)
        full = bank.call("memory:episode:record", {"sceneType": "action", "wait": True})
        assert full["error"]["code"] == "MEMORY_CAPACITY_EXCEEDED" and full["error"]["details"]["capacity"] == 2
        assert _lines(sample) == before  # nothing written, nothing evicted
        heard: list[tuple[str, dict[str, Any]]] = []
        bank.listeners.append(lambda method, params: heard.append((method, params)))
        _ok(bank, "memory:episode:record", sceneType="action")
        assert bank.drain(10) and heard[0][1]["code"] == "MEMORY_CAPACITY_EXCEEDED"
    finally:
        bank.close()


def test_stored_decay_is_the_same_after_a_rebuild_at_the_same_time(bank: Bank, sample: Path,
                                                                    now: list[datetime]) -> None:
    ids = [_record(bank, now, days, importance=imp) for days, imp in ((1, 0.5), (20, 0.5), (60, 0.9), (90, 0.5))]
    daily = _ok(bank, "memory:lifecycle:run", trigger="daily")
    assert daily["levels"] == {"active": 1, "decaying": 2, "to_compress": 1, "to_evict": 0}

    def stored() -> dict[str, tuple[float, str]]:  # read straight from the index: no query, no recall
        return {i: (d, lv) for i, d, lv in bank.index.db.execute("SELECT id, decay, level FROM episodes")}

    first = stored()
    assert set(first) == set(ids)
    now[0] = T0 + timedelta(days=3)  # a rebuild later gives the scores of the last daily run, not of now
    bank.sync(rebuild=True)
    assert stored() == first
    assert _ok(bank, "index:status")["lifecycle"]["levels"] == daily["levels"]


def test_weekly_compresses_and_writes_history_once(bank: Bank, sample: Path, now: list[datetime]) -> None:
    run = _ok(bank, "context:assemble", skillId="continue", documentId=CH05,
              selection={"text": "He drew. Steel rang."})["runId"]
    _ok(bank, "ai:skill:feedback", runId=run, action="accept", editDistance=0.1, summary="the duel at the light")
    aging = _record(bank, now, 60, summary="an old quarrel")  # to_compress by now
    now[0] = T0 + timedelta(days=8)  # the run is more than a week old
    weekly = _ok(bank, "memory:lifecycle:run", trigger="weekly")
    assert weekly["compressed"] == 1 and weekly["changed"]
    assert weekly["history"] == [".writenow/history/2026-09.md", ".writenow/history/2026-11.md"]
    assert "## (no document) · week of 2026-09-21" in (sample / ".writenow/history/2026-09.md").read_text("utf-8")
    text = (sample / ".writenow/history/2026-11.md").read_text("utf-8")
    assert "## chapters/ch05.md · week of 2026-11-23" in text
    line = next(x for x in text.splitlines() if "continue" in x and "LIGHT_EDIT" in x)
    assert "林默" in line and "“the duel at the light”" in line and "(../journal/traces/2026-11.jsonl#L" in line  # the run, in its traces file
    assert "He drew" not in text  # no manuscript text
    compressed = [i for i in _ok(bank, "memory:episode:query", limit=5)["items"] if i["id"] == aging]
    assert compressed[0]["compressed"] is True
    journal, files = _lines(sample), sorted((sample / ".writenow/history").iterdir())
    again = _ok(bank, "memory:lifecycle:run", trigger="weekly")  # re-running changes nothing
    assert again["changed"] is False and again["history"] == [] and again["compressed"] == 0
    assert [e for e in _lines(sample) if e["event"] != "episode-recalled"] == \
        [e for e in journal if e["event"] != "episode-recalled"]
    assert sorted((sample / ".writenow/history").iterdir()) == files


def test_history_goes_into_layer_four_and_privacy_keeps_summaries_out(bank: Bank, sample: Path,
                                                                        now: list[datetime]) -> None:
    run = _ok(bank, "context:assemble", skillId="continue", documentId=CH05)["runId"]
    _ok(bank, "ai:skill:feedback", runId=run, action="accept", summary="a private summary")
    _ok(bank, "memory:settings:update", patch={"privacyModeEnabled": True})
    now[0] = T0 + timedelta(days=8)
    _ok(bank, "memory:lifecycle:run", trigger="weekly")
    text = (sample / ".writenow/history/2026-11.md").read_text("utf-8")
    assert "private summary" not in text and "DIRECT_ACCEPT" in text
    skill = sample / ".writenow/skills/recap.md"
    skill.write_text("---\nid: recap\nname: Recap\ncontext_rules:\n  history: true\n---\nRecap the sessions.\n", "utf-8")
    bank.sync()
    d = _ok(bank, "context:assemble", skillId="recap", documentId=CH05)
    [piece] = [i for i in d["items"] if i["kind"] == "history"]
    assert piece["source"] == ".writenow/history/2026-11.md" and piece["line"] > 1
    assert "### Recent history" in d["userContent"] and "DIRECT_ACCEPT" in d["userContent"]


def test_monthly_evicts_what_faded_but_never_the_pinned(bank: Bank, sample: Path, now: list[datetime]) -> None:
    faded = _record(bank, now, 200)
    pinned = _record(bank, now, 200, pinned=True)
    recent = _record(bank, now, 2)
    monthly = _ok(bank, "memory:lifecycle:run", trigger="monthly")
    assert monthly["evicted"] == 1 and _live(bank) == {pinned, recent}
    assert faded in [i for e in _lines(sample) if e["event"] == "episode-evicted" for i in e["ids"]]
    assert _ok(bank, "memory:lifecycle:run", trigger="monthly")["changed"] is False
    status = _ok(bank, "index:status")
    assert status["lifecycle"]["lastRun"]["monthly"] is not None and status["lifecycle"]["lastRun"]["weekly"] is None


def test_an_unreadable_index_degrades_to_the_default_rules(bank: Bank, sample: Path) -> None:  # MS1-R3-S2
    for f in (sample / ".writenow/.index").glob("index.db*"):
        f.write_bytes(b"not a database " * 100)
    d = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": "He drew. Steel rang."})
    assert d["diagnostics"]["memoryDegraded"] is True
    assert "MEMORY_DEGRADED" in [r["code"] for r in d["diagnostics"]["reasons"]]
    assert "Keep the author's voice" in d["systemPrompt"] and "He drew. Steel rang." in d["userContent"]
    assert {i["kind"] for i in d["items"]} >= {"identity", "skill", "default-rule", "selection"}
    q = _ok(bank, "memory:episode:query", sceneType="action")
    assert q["memoryDegraded"] is True and q["items"] == [] and q["defaultRules"]


def test_the_cli(sample: Path, now: list[datetime]) -> None:
    runner = CliRunner()
    got = runner.invoke(app, ["lifecycle", "daily", "-C", str(sample)])
    assert got.exit_code == 0 and got.output.startswith("daily at 2026-11-25T12:00:00")
    shown = runner.invoke(app, ["status", str(sample)])
    assert "lifecycle last ran: realtime never, daily 2026-11-25T12:00:00" in shown.output
    assert runner.invoke(app, ["lifecycle", "hourly", "-C", str(sample)]).exit_code == 1


def test_a_process_that_stays_open_runs_the_daily_trigger_once_a_day(sample: Path, now: list[datetime]) -> None:
    from membank.runtime.dispatch import dispatch
    from membank.runtime.registry import Registry
    from membank.shells.daily import Daily

    registry = Registry()
    try:
        project = dispatch(registry, "project:open", {"path": str(sample)})["data"]["projectId"]
        daily = Daily(registry, lambda pid: dispatch(registry, "memory:lifecycle:run",
                                                     {"projectId": pid, "trigger": "daily"}))
        assert daily.look() == []  # no episodes: nothing to score, no journal line
        assert dispatch(registry, "memory:episode:record", {"sceneType": "action", "wait": True})["ok"]
        assert daily.look() == [project]  # never ran: due at once
        assert daily.look() == []
        now[0] = T0 + timedelta(hours=23)
        assert daily.look() == []
        now[0] = T0 + timedelta(days=1)
        assert daily.look() == [project]
        last = dispatch(registry, "index:status", {})["data"]["lifecycle"]["lastRun"]["daily"]
        assert last.startswith("2026-11-26T12:00:00")
    finally:
        registry.close()


def test_privacy_mode_keeps_the_reason_of_an_eviction(sample: Path, now: list[datetime]) -> None:
    _settings(sample, activeEpisodes=1)
    bank = membank.open(sample)
    try:
        _record(bank, now, 2)
        _record(bank, now, 1)  # the first is evicted to make room
        _ok(bank, "memory:settings:update", patch={"privacyModeEnabled": True})  # the journal is cleaned
        _record(bank, now, 0)
        assert [e["reason"] for e in _lines(sample) if e["event"] == "episode-evicted"] == ["lru", "lru"]
    finally:
        bank.close()
