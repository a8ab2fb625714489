"""A wrong clock harms nothing (files.md, Time): a lifecycle run dated after now is ignored for
scheduling and decay, with a warning, and never stops later runs; the daily trigger writes only when
it changed something. Time comes from `clock.use`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

import membank
from membank import Bank
from membank.domains.lifecycle.triggers import due
from membank.kernel import clock

T0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def now() -> Iterator[list[datetime]]:
    moment = [T0]
    with clock.use(lambda: moment[0]):
        yield moment


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def _record(bank: Bank, now: list[datetime], days_ago: float, **fields: Any) -> str:
    saved = now[0]
    now[0] = T0 - timedelta(days=days_ago)
    try:
        return _ok(bank, "memory:episode:record", wait=True, **{"sceneType": "action", **fields})["id"]
    finally:
        now[0] = saved


def _journal(sample: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((sample / ".writenow/journal").glob("**/*.jsonl"))
            for line in f.read_text("utf-8").splitlines()]


def _stored(bank: Bank) -> dict[str, str]:
    return dict(bank.index.db.execute("SELECT id, level FROM episodes WHERE evicted = 0").fetchall())


def test_daily_writes_only_when_a_level_moves(bank: Bank, sample: Path, now: list[datetime]) -> None:
    _record(bank, now, 1)
    before = _journal(sample)
    first = _ok(bank, "memory:lifecycle:run", trigger="daily")  # fresh: still active, nothing to write
    assert first["changed"] is False and first["moved"] == 0 and first["levels"]["active"] == 1
    assert _journal(sample) == before
    assert _ok(bank, "index:status")["lifecycle"]["lastRun"]["daily"] == first["at"]  # scheduling still knows
    now[0] = T0 + timedelta(days=45)  # decaying by now
    second = _ok(bank, "memory:lifecycle:run", trigger="daily")
    assert second["changed"] is True and second["moved"] == 1 and second["levels"]["decaying"] == 1
    assert [e["trigger"] for e in _journal(sample) if e["event"] == "lifecycle"] == ["daily"]
    bank.sync(rebuild=True)  # reproducible: the journal holds the run that moved a level
    assert _stored(bank) and set(_stored(bank).values()) == {"decaying"}


def test_a_year_ahead_then_fixed(bank: Bank, sample: Path, now: list[datetime]) -> None:
    ids = [_record(bank, now, d) for d in (1, 2, 3)]
    now[0] = T0 + timedelta(days=365)  # the clock is a year ahead for one daily run
    ahead = _ok(bank, "memory:lifecycle:run", trigger="daily")
    assert ahead["levels"]["to_evict"] == 3
    now[0] = T0  # fixed
    status = _ok(bank, "index:status")["lifecycle"]
    assert status["lastRun"]["daily"] is None  # the run dated after now counts for nothing: due again
    assert due(status["lastRun"]["daily"], now[0])
    assert any("after now" in w for w in status["warnings"])
    fixed = _ok(bank, "memory:lifecycle:run", trigger="daily")
    assert fixed["levels"] == {"active": 3, "decaying": 0, "to_compress": 0, "to_evict": 0}
    assert set(_stored(bank)) == set(ids) and set(_stored(bank).values()) == {"active"}
    assert fixed["warnings"]  # said, never fatal
    query = _ok(bank, "memory:episode:query", sceneType="action", limit=3)
    assert {i["level"] for i in query["items"]} == {"active"}
    assert _ok(bank, "memory:lifecycle:run", trigger="monthly")["evicted"] == 0
    # the next day the daily trigger is due again, as every day
    assert not due(_ok(bank, "index:status")["lifecycle"]["lastRun"]["daily"], now[0])
    now[0] = T0 + timedelta(days=1, minutes=1)
    assert due(_ok(bank, "index:status")["lifecycle"]["lastRun"]["daily"], now[0])
    # a rebuild with the clock fixed stores what the daily run stored, not the year-ahead scores
    now[0] = T0
    bank.sync(rebuild=True)
    assert set(_stored(bank).values()) == {"active"}


def test_status_follows_the_clock_when_the_index_does_not_move(bank: Bank, now: list[datetime]) -> None:
    """What `index:status` reads is kept until the index moves; what is "after now" is still worked out
    from the clock at each call."""
    _record(bank, now, 0)
    now[0] = T0 + timedelta(days=10)
    ran = _ok(bank, "memory:lifecycle:run", trigger="daily")["at"]
    # (the run changed nothing: no journal line, only the index's own record of it)
    for moment, last, warned in [(T0 - timedelta(days=1), None, 1), (T0 + timedelta(days=11), ran, 0),
                                 (T0 + timedelta(days=5), None, 0), (T0 - timedelta(days=1), None, 1)]:
        now[0] = moment
        status = _ok(bank, "index:status")["lifecycle"]
        assert status["lastRun"]["daily"] == last and len(status["warnings"]) == warned, (moment, status)
    assert _ok(bank, "index:status")["lifecycle"]["warnings"][0].startswith("1 episode(s) are dated after now")


def test_a_rebuild_after_the_clock_was_ahead_ignores_the_future_run(sample: Path, now: list[datetime]) -> None:
    bank = membank.open(sample)
    try:
        _record(bank, now, 1)
        now[0] = T0 + timedelta(days=365)
        _ok(bank, "memory:lifecycle:run", trigger="daily")
    finally:
        bank.close()
    now[0] = T0
    bank = membank.open(sample)
    try:
        bank.sync(rebuild=True)
        assert set(_stored(bank).values()) == {"active"}
    finally:
        bank.close()


CH05 = "chapters/ch05.md"


def _run(bank: Bank, now: list[datetime], at: datetime, summary: str) -> None:
    saved, now[0] = now[0], at
    try:
        run = _ok(bank, "context:assemble", skillId="continue", documentId=CH05)["runId"]
        _ok(bank, "ai:skill:feedback", runId=run, action="accept", summary=summary)
    finally:
        now[0] = saved


def test_a_history_file_edited_by_hand_is_never_rewritten(bank: Bank, sample: Path, now: list[datetime]) -> None:
    _run(bank, now, T0, "the duel")
    now[0] = T0 + timedelta(days=8)
    first = _ok(bank, "memory:lifecycle:run", trigger="weekly")
    month = sample / ".writenow/history/2026-11.md"
    assert first["history"] == [".writenow/history/2026-11.md"] and "“the duel”" in month.read_text("utf-8")
    edited = month.read_text("utf-8").replace("“the duel”", "“the duel at the lighthouse, the best one”")
    month.write_text(edited + "\nMy note: rewrite the duel in ch07.\n", "utf-8")
    _run(bank, now, T0 + timedelta(days=1), "the truce")
    now[0] = T0 + timedelta(days=9)
    second = _ok(bank, "memory:lifecycle:run", trigger="weekly")
    assert second["kept"] == [".writenow/history/2026-11.md"] and second["history"] == []
    assert month.read_text("utf-8") == edited + "\nMy note: rewrite the duel in ch07.\n"  # the writer's edit stays
    month.unlink()  # deleted: membank writes it again, with both runs
    third = _ok(bank, "memory:lifecycle:run", trigger="weekly")
    assert third["history"] == [".writenow/history/2026-11.md"] and "kept" not in third
    assert "“the truce”" in month.read_text("utf-8")


def test_a_clock_set_back_never_rewrites_a_month_with_fewer_runs(bank: Bank, sample: Path,
                                                                  now: list[datetime]) -> None:
    _run(bank, now, T0, "the duel")
    _run(bank, now, T0 + timedelta(days=3), "the truce")
    now[0] = T0 + timedelta(days=11)
    assert _ok(bank, "memory:lifecycle:run", trigger="weekly")["history"] == [".writenow/history/2026-11.md"]
    month = sample / ".writenow/history/2026-11.md"
    written = month.read_bytes()
    now[0] = T0 + timedelta(days=8)  # set back: only the first run is older than a week
    back = _ok(bank, "memory:lifecycle:run", trigger="weekly")
    assert back["kept"] == [".writenow/history/2026-11.md"] and back["history"] == []
    assert month.read_bytes() == written


def test_compressed_episodes_zero_evicts_instead_of_failing(sample: Path, now: list[datetime]) -> None:
    with (sample / ".writenow/settings.yaml").open("a", encoding="utf-8") as f:
        f.write("\nlifecycle:\n  compressedEpisodes: 0\n")
    bank = membank.open(sample)
    try:
        fading = _record(bank, now, 90)  # to_compress by now
        weekly = _ok(bank, "memory:lifecycle:run", trigger="weekly")
        assert weekly["compressed"] == 0 and weekly["evicted"] == 1 and weekly["history"]
        assert fading not in _stored(bank)
        assert [e["reason"] for e in _journal(sample) if e["event"] == "episode-evicted"] == ["lru"]
    finally:
        bank.close()


def test_settings_set_lifecycle_keys(sample: Path) -> None:
    from typer.testing import CliRunner

    from membank.shells.cli import app

    runner = CliRunner()
    path = sample / ".writenow/settings.yaml"
    got = runner.invoke(app, ["settings", "set", "lifecycle.compressedEpisodes=0", "lifecycle.episodeTtlDays=90",
                              "-C", str(sample), "--json"])
    assert got.exit_code == 0, got.output
    assert json.loads(got.output)["data"]["lifecycle.compressedEpisodes"] == 0
    text = path.read_text("utf-8")
    assert "compressedEpisodes: 0" in text and "episodeTtlDays: 90" in text
    bad = runner.invoke(app, ["settings", "set", "lifecycle.activeEpisodes=0", "-C", str(sample), "--json"])
    assert bad.exit_code != 0 and "activeEpisodes" in bad.output and "1 to 1,000,000" in bad.output
    unknown = runner.invoke(app, ["settings", "set", "story.threadWarnChapters=3", "-C", str(sample)])
    assert unknown.exit_code == 2 and "lifecycle" in unknown.output  # says which sections it supports
    bank = membank.open(sample)
    try:
        data = _ok(bank, "lifecycle:settings:update", patch={"workingTokens": 4000})
        assert data["workingTokens"] == 4000 and data["compressedEpisodes"] == 0
        assert bank.update_lifecycle_settings({"activeEpisodes": 500})["activeEpisodes"] == 500
    finally:
        bank.close()


def test_compressed_episodes_zero_keeps_a_confirmed_episode_where_it_is(sample: Path, now: list[datetime]) -> None:
    with (sample / ".writenow/settings.yaml").open("a", encoding="utf-8") as f:
        f.write("\nlifecycle:\n  compressedEpisodes: 0\n")
    bank = membank.open(sample)
    try:
        now[0] = T0 - timedelta(days=90)
        run = _ok(bank, "context:assemble", skillId="continue", documentId=CH05)["runId"]
        kept = _ok(bank, "ai:skill:feedback", runId=run, action="accept")["episode"]["id"]
        _ok(bank, "memory:trace:feedback", runId=run, verdict="correct")  # confirmed: never evicted
        now[0] = T0
        fading = _record(bank, now, 90)
        weekly = _ok(bank, "memory:lifecycle:run", trigger="weekly")
        assert weekly["evicted"] == 1 and weekly["compressed"] == 0
        assert kept in _stored(bank) and fading not in _stored(bank)
    finally:
        bank.close()


def test_a_history_file_that_cannot_be_written_says_what_was(bank: Bank, sample: Path, now: list[datetime]) -> None:
    _record(bank, now, 60)  # September's history
    _run(bank, now, T0 - timedelta(days=8), "the duel")  # November's
    (sample / ".writenow/history/2026-11.md").mkdir()  # a folder where the file goes
    failed = bank.call("memory:lifecycle:run", {"trigger": "weekly"})
    assert failed["error"]["code"] == "DB_ERROR"
    assert "only .writenow/history/2026-09.md written before it" in failed["error"]["message"]
    assert (sample / ".writenow/history/2026-09.md").is_file()


def test_the_cli_says_what_was_kept_and_warns(sample: Path, now: list[datetime]) -> None:
    from typer.testing import CliRunner

    from membank.shells.cli import app

    bank = membank.open(sample)
    try:
        _run(bank, now, T0, "the duel")
        now[0] = T0 + timedelta(days=8)
        _ok(bank, "memory:lifecycle:run", trigger="weekly")
    finally:
        bank.close()
    month = sample / ".writenow/history/2026-11.md"
    month.write_text(month.read_text("utf-8") + "\nMine.\n", "utf-8")
    now[0] = T0 + timedelta(days=400)  # ahead
    runner = CliRunner()
    assert runner.invoke(app, ["lifecycle", "daily", "-C", str(sample)]).exit_code == 0
    now[0] = T0 + timedelta(days=9)
    got = runner.invoke(app, ["lifecycle", "weekly", "-C", str(sample)])
    assert got.exit_code == 0 and "kept .writenow/history/2026-11.md as it is" in got.output
    assert "warning: lifecycle runs dated after now are ignored (daily 2027-12-30" in got.output
    shown = runner.invoke(app, ["status", str(sample)])
    assert "warning: lifecycle runs dated after now" in shown.output


def test_serve_and_watch_look_again_after_a_run_a_year_ahead(sample: Path, now: list[datetime]) -> None:
    from membank.runtime.dispatch import dispatch
    from membank.runtime.registry import Registry
    from membank.shells.daily import Daily

    registry = Registry()
    try:
        project = dispatch(registry, "project:open", {"path": str(sample)})["data"]["projectId"]
        daily = Daily(registry, lambda pid: dispatch(registry, "memory:lifecycle:run",
                                                     {"projectId": pid, "trigger": "daily"}))
        assert dispatch(registry, "memory:episode:record", {"sceneType": "action", "wait": True})["ok"]
        now[0] = T0 + timedelta(days=365)
        assert daily.look() == [project]
        now[0] = T0  # fixed: the run a year ahead does not count, the daily trigger is due at once
        assert daily.look() == [project]
        assert daily.look() == []
        now[0] = T0 + timedelta(days=1)
        assert daily.look() == [project]  # and every day after, not a year later
    finally:
        registry.close()


def test_history_marks_and_what_may_replace_a_file() -> None:
    from membank.domains.lifecycle import history
    from membank.domains.lifecycle.triggers import moved

    def entry(at: str, line: int) -> history.Entry:
        return history.Entry(at, CH05, "continue", "accept", None, None, (), None, f"journal/2026-11.jsonl#L{line}")

    two = history.render("2026-11", [entry("2026-11-18T10:00:00.000000Z", 1), entry("2026-11-19T10:00:00.000000Z", 2)])
    one = history.render("2026-11", [entry("2026-11-18T10:00:00.000000Z", 1)])
    assert history.written_by_membank(two) and history.runs_listed(two) == 2
    assert history.replaceable(one.encode(), two)  # more runs over membank's own file
    assert not history.replaceable(two.encode(), one)  # never fewer
    assert not history.replaceable((two + "\nmine\n").encode(), two)  # never over an edit
    assert history.replaceable(two.replace("\n", "\r\n").encode(), two)  # a checkout with CRLF is no edit
    legacy = "# History, 2026-11\n\nIt is rewritten whole each time: edits here do not last.\n"
    assert history.replaceable(legacy.encode(), one)
    assert not history.replaceable(b"# My own notes\n", one) and not history.replaceable(b"\xff\xfe", one)
    assert [s.document for s in history.sections(two, ".writenow/history/2026-11.md")] == [CH05]
    assert moved({"a": "active", "b": "decaying"}, {"a": "active", "b": "to_compress", "c": "active"}) == ["b", "c"]
