"""Runs, traces, feedback and episodes through the Python API and the CLI (episodes.md): the seed's
scenarios MS1-R2-S1/S2/S3 and MS1-X-S1, and seed 000's loop through `ai:skill:feedback`."""

from __future__ import annotations

import json
import logging
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import membank
from membank import Bank
from membank.domains.episodes import flows
from membank.kernel import clock
from membank.shells.cli import app

CH05 = "chapters/ch05.md"
SELECTION = "He drew. Steel rang."


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def _run(bank: Bank, **extra: Any) -> str:
    return _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION},
               **extra)["runId"]


def _journal(sample: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for f in sorted((sample / ".writenow/journal").rglob("*.jsonl"))
            for line in f.read_text("utf-8").splitlines()]


def test_light_edit_is_recorded_off_the_callers_path(bank: Bank) -> None:  # MS1-R2-S1
    got = _ok(bank, "memory:episode:record", sceneType="action", skillUsed="continue", selectedIndex=1,
              editDistance=0.15, summary="the duel on the quay")
    assert got["accepted"] is True and got["id"].startswith("e-") and "episode" not in got
    assert bank.drain(10)
    [item] = _ok(bank, "memory:episode:query", sceneType="action")["items"]
    assert (item["id"], item["implicitSignal"], item["signalWeight"]) == (got["id"], "LIGHT_EDIT", 0.45)
    assert item["source"].startswith(".writenow/journal/") and "#L" in item["source"]
    status = _ok(bank, "index:status")["episodes"]
    assert status == {"total": 1, "live": 1, "pending": 0, "failed": 0}


def test_undo_within_thirty_seconds_replaces_the_accept(bank: Bank) -> None:  # MS1-R2-S2
    _ok(bank, "memory:settings:update", patch={"preferenceLearningEnabled": True})
    t0 = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)
    now = [t0]
    with clock.use(lambda: now[0]):
        run = _run(bank)
        accepted = _ok(bank, "ai:skill:feedback", runId=run, action="accept", evidenceRef="short clipped sentences")
        assert accepted["signal"]["name"] == "DIRECT_ACCEPT" and accepted["preference"]["count"] == 1
        now[0] = t0 + timedelta(seconds=20)
        undone = _ok(bank, "ai:skill:feedback", runId=run, action="undo")
        assert (undone["signal"]["name"], undone["signal"]["weight"], undone["signal"]["replaced"]) == \
            ("UNDO_AFTER_ACCEPT", -1.0, True)
        assert undone["episode"]["id"] == accepted["episode"]["id"] and undone["episode"]["signalWeight"] == -1.0
        assert undone["preference"]["retracted"] and undone["preference"]["count"] == 0  # the accept taken back

        late = _run(bank)
        _ok(bank, "ai:skill:feedback", runId=late, action="accept")
        now[0] = t0 + timedelta(seconds=51)
        kept = _ok(bank, "ai:skill:feedback", runId=late, action="undo")
        assert kept["signal"]["name"] == "DIRECT_ACCEPT" and kept["signal"]["replaced"] is False
        assert kept["episode"]["undoneAt"] is not None
        again = bank.call("ai:skill:feedback", {"runId": late, "action": "undo"})
        assert again["error"]["code"] == "NOT_FOUND"  # nothing accepted is left to undo


def test_dialogue_episodes_come_first_and_the_recall_is_journaled(bank: Bank, sample: Path) -> None:  # MS1-R2-S3
    for scene, summary in [("dialogue", "Lin and Maren argue about the lighthouse"), ("action", "a fight on the pier"),
                           ("dialogue", "a whispered bargain in the tavern"), ("description", "fog over the bay"),
                           ("dialogue", "the captain refuses Lin"), ("action", "an argument turns into a brawl")]:
        _ok(bank, "memory:episode:record", sceneType=scene, skillUsed="continue", summary=summary, wait=True)
    got = _ok(bank, "memory:episode:query", sceneType="dialogue", queryText="an argument between friends")
    items = got["items"]
    assert 3 <= len(items) <= 5 and got["reasons"] == []
    assert [i["sceneType"] for i in items[:3]] == ["dialogue"] * 3 and items[3]["sceneType"] != "dialogue"
    assert items[0]["summary"] == "Lin and Maren argue about the lighthouse"
    assert all(i["reason"]["rank"] == n for n, i in enumerate(items, start=1))
    assert _journal(sample)[-1]["event"] == "episode-recalled"
    again = _ok(bank, "memory:episode:query", sceneType="dialogue", queryText="an argument between friends", limit=3)
    assert len(again["items"]) == 3 and again["items"][0]["recallCount"] == 1
    assert bank.call("memory:episode:query", {"limit": 6})["error"]["details"]["field"] == "limit"


def test_an_unwritable_journal_fails_after_three_tries(bank: Bank, sample: Path, caplog: pytest.LogCaptureFixture,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # MS1-X-S1
    monkeypatch.setattr(flows, "BACKOFF", (0.0, 0.0))
    journal = sample / ".writenow" / "journal"
    shutil.rmtree(journal, ignore_errors=True)
    journal.write_text("not a folder", "utf-8")  # root ignores permissions: a file where the folder goes
    with caplog.at_level(logging.WARNING, logger="membank"):
        failed = bank.call("memory:episode:record", {"sceneType": "action", "wait": True})
    assert failed["error"]["code"] == "MEMORY_EPISODE_WRITE_FAILED" and failed["error"]["details"]["tries"] == 3
    assert len([r for r in caplog.records if "not written (try" in r.getMessage()]) == 3

    heard: list[tuple[str, dict[str, Any]]] = []
    bank.listeners.append(lambda method, params: heard.append((method, params)))
    accepted = _ok(bank, "memory:episode:record", sceneType="action")
    assert bank.drain(10)
    [(method, params)] = heard
    assert method == "episode:failed" and params["id"] == accepted["id"]
    assert params["code"] == "MEMORY_EPISODE_WRITE_FAILED" and params["projectId"] == bank.info.id
    assert _ok(bank, "index:status")["episodes"]["failed"] == 1


def test_a_trace_holds_the_prompt_and_every_feedback(bank: Bank, sample: Path) -> None:
    run = _run(bank, runId="r-trace-a")
    assert bank.call("memory:trace:get", {"runId": "r-nope"})["error"]["code"] == "NOT_FOUND"
    assert bank.call("memory:trace:feedback", {"runId": "r-nope", "verdict": "correct"})["error"]["code"] == "NOT_FOUND"
    verdict = _ok(bank, "memory:trace:feedback", runId=run, verdict="incorrect", reason="Maren was not in the scene")
    assert verdict["source"].startswith(".writenow/journal/") and "#L" in verdict["source"]
    _ok(bank, "ai:skill:feedback", runId=run, action="partial", editDistance=0.3, sceneType="action")
    trace = _ok(bank, "memory:trace:get", runId=run)
    assert trace["skillId"] == "continue" and trace["documentId"] == CH05 and trace["stablePrefixHash"]
    assert {p["kind"] for p in trace["pieces"]} >= {"identity", "skill", "card"}
    assert [(f["kind"], f.get("verdict") or f.get("action")) for f in trace["feedback"]] == \
        [("verdict", "incorrect"), ("skill", "partial")]
    bank.sync(rebuild=True)  # the journal is the truth
    assert _ok(bank, "memory:trace:get", runId=run) == trace
    shutil.rmtree(sample / ".writenow/.index")
    reopened = membank.open(sample)
    try:
        assert _ok(reopened, "memory:trace:get", runId=run) == trace
        assert _ok(reopened, "index:status")["episodes"]["total"] == 1
    finally:
        reopened.close()


def test_the_loop_end_to_end_through_skill_feedback(bank: Bank) -> None:  # seed 000
    _ok(bank, "memory:settings:update", patch={"injectionEnabled": True, "preferenceLearningEnabled": True,
                                               "preferenceLearningThreshold": 3})
    for i in range(3):
        got = _ok(bank, "ai:skill:feedback", runId=_run(bank), action="accept", sceneType="action",
                  evidenceRef="end scenes on an image")
    assert got["preference"]["learned"]["content"] == "Prefer: end scenes on an image"
    assert got["signal"] == {"name": "DIRECT_ACCEPT", "base": 1.0, "weight": 1.3, "repeats": 2, "replaced": False}
    on = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION},
             sceneType="action")
    assert "Prefer: end scenes on an image" in on["systemPrompt"]
    assert [i["kind"] for i in on["items"]].count("episode") == 3  # `episodes: 3` in the continue skill
    _ok(bank, "memory:settings:update", patch={"injectionEnabled": False})
    off = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION},
              sceneType="action")
    assert not {"preference", "memory", "episode"} & {i["kind"] for i in off["items"]}
    assert "end scenes on an image" not in off["systemPrompt"] + off["userContent"]
    headings = [[line for line in (d["systemPrompt"] + d["userContent"]).splitlines() if line.startswith("#")]
                for d in (on, off)]
    assert headings[0] == headings[1]


def test_episodes_enter_layer_four_and_count_as_recalled(bank: Bank, sample: Path) -> None:
    for summary in ("Lin bargains with the harbour master", "Maren fixes the lamp"):
        _ok(bank, "memory:episode:record", sceneType="dialogue", skillUsed="continue", summary=summary, wait=True)
    d = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION},
            sceneType="dialogue", queryText="a bargain at the harbour")
    pieces = [i for i in d["items"] if i["kind"] == "episode"]
    assert len(pieces) == 2 and all(p["source"].startswith(".writenow/journal/") for p in pieces)
    assert "Lin bargains with the harbour master" in d["userContent"] and pieces[0]["source"] in d["userContent"]
    run = next(e for e in _journal(sample) if e.get("runId") == d["runId"])
    assert [p["kind"] for p in run["pieces"]].count("episode") == 2
    bank.sync()
    items = _ok(bank, "memory:episode:query", sceneType="dialogue")["items"]
    assert [i["recallCount"] for i in items] == [1, 1]


def test_privacy_keeps_the_summary_out_of_the_journal(bank: Bank, sample: Path) -> None:
    before = _run(bank)
    _ok(bank, "memory:trace:feedback", runId=before, verdict="incorrect", reason="Lin never meets Maren at dawn")
    _ok(bank, "memory:episode:record", sceneType="romance", summary="Lin meets Maren at dawn", wait=True)
    _ok(bank, "memory:settings:update", patch={"privacyModeEnabled": True})  # what was journaled before goes too
    [old] = _ok(bank, "memory:episode:query", sceneType="romance")["items"]
    assert old["summary"] is None
    run = _run(bank)
    got = _ok(bank, "ai:skill:feedback", runId=run, action="accept", summary="Lin kisses Maren at dawn",
              tags=["romance"], evidenceRef="slow the kiss down")
    assert got["episode"]["summary"] is None and got["episode"]["tags"] == ["romance"]
    _ok(bank, "memory:trace:feedback", runId=run, verdict="correct", reason="Lin kisses Maren")
    text = "".join(f.read_text("utf-8") for f in (sample / ".writenow/journal").rglob("*.jsonl"))
    assert "kisses" not in text and "slow the kiss" not in text and "at dawn" not in text


def test_the_cli(sample: Path) -> None:
    runner = CliRunner()
    bank = membank.open(sample)
    try:
        run = _run(bank)
    finally:
        bank.close()
    fed = runner.invoke(app, ["skill-feedback", run, "accept", "--edit-distance", "0.1", "--scene", "action",
                              "-C", str(sample)])
    assert fed.exit_code == 0, fed.output
    assert "signal: LIGHT_EDIT +0.45" in fed.output
    shown = runner.invoke(app, ["trace", run, "-C", str(sample)])
    assert shown.exit_code == 0 and "what the prompt held" in shown.output and "LIGHT_EDIT" in shown.output
    recorded = runner.invoke(app, ["episode-record", "--scene", "dialogue", "--summary", "a quarrel", "-C", str(sample)])
    assert recorded.exit_code == 0 and "accepted" in recorded.output
    listed = runner.invoke(app, ["episodes", "--scene", "dialogue", "--json", "-C", str(sample)])
    assert [i["summary"] for i in json.loads(listed.output)["data"]["items"]][0] == "a quarrel"  # written before exit
    missing = runner.invoke(app, ["trace", "r-nope", "-C", str(sample)])
    assert missing.exit_code == 1 and "NOT_FOUND" in missing.output


def _state(bank: Bank, run: str) -> Any:
    return (_ok(bank, "index:status")["episodes"], _ok(bank, "memory:trace:get", runId=run),
            sorted((i["id"], i["recallCount"], i["implicitSignal"]) for i in
                   bank.call("memory:episode:query", {"limit": 5})["data"]["items"]),
            [d for d in _ok(bank, "index:diagnostics")["items"] if "journal" in d["source"]])


def test_a_growing_journal_is_read_on_from_where_it_was_left(bank: Bank, sample: Path) -> None:
    run = _run(bank)
    _ok(bank, "ai:skill:feedback", runId=run, action="accept", sceneType="action")
    month = next((sample / ".writenow/journal").rglob("*.jsonl"))
    with month.open("ab") as f:
        f.write(b'{"event": "episode", "at": "2026-11-25T1')  # a torn line: membank stopped mid-write
    _ok(bank, "memory:episode:record", sceneType="action", summary="after the tear", wait=True)
    _ok(bank, "memory:episode:query", sceneType="action")
    bank.sync()
    grown = _state(bank, run)
    assert grown[0]["total"] == 2 and len(grown[3]) == 1 and "cut off" in grown[3][0]["message"]
    bank.sync(rebuild=True)
    rebuilt = _state(bank, run)  # read on line by line = read whole (less the recall `_state` itself journaled)
    assert rebuilt[:2] + rebuilt[3:] == grown[:2] + grown[3:]
    assert rebuilt[2] == [(i, n + 1, s) for i, n, s in grown[2]]

    lines = month.read_text("utf-8").splitlines(keepends=True)
    month.write_text("".join(line for line in lines if "after the tear" not in line), "utf-8")  # edited by hand
    bank.sync()
    assert _ok(bank, "index:status")["episodes"]["total"] == 1


def test_the_sidecar_sends_episode_failed(sample: Path, home: Path) -> None:  # MS1-X-S1, as the app sees it
    from tests.sidecar import Sidecar

    journal = sample / ".writenow" / "journal"
    shutil.rmtree(journal, ignore_errors=True)
    journal.write_text("not a folder", "utf-8")
    server = Sidecar("--project", str(sample), "--no-watch", home=home)
    try:
        accepted = server.ok("memory:episode:record", {"sceneType": "dialogue", "summary": "never written"})
        note = server.wait_for(lambda: next(iter(server.notifications("episode:failed")), None), "episode:failed")
        assert note["params"]["id"] == accepted["id"] and note["params"]["code"] == "MEMORY_EPISODE_WRITE_FAILED"
        assert server.ok("index:status")["episodes"]["failed"] == 1
        waited = server.call("memory:episode:record", {"sceneType": "dialogue", "wait": True})
        assert waited["error"]["code"] == "MEMORY_EPISODE_WRITE_FAILED"
        assert server.close() == 0
    finally:
        server.kill()


def test_a_query_past_its_deadline_journals_no_recall(bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.kernel import cancel

    _ok(bank, "memory:episode:record", sceneType="dialogue", summary="a quarrel", wait=True)
    now = [0.0]
    real = flows.rank

    def slow(*args: Any) -> Any:  # ranking takes two minutes
        now[0] += 120
        return real(*args)
    monkeypatch.setattr(flows, "rank", slow)
    before = len(_journal(sample))
    with cancel.use(lambda: now[0]):
        late = bank.call("memory:episode:query", {"sceneType": "dialogue", "deadlineMs": 60_000})
    assert late["error"]["code"] == "TIMEOUT" and len(_journal(sample)) == before
    assert _ok(bank, "memory:episode:query", sceneType="dialogue", deadlineMs=600_000)["items"][0]["recallCount"] == 0
    assert _journal(sample)[-1]["event"] == "episode-recalled"


def _layer_four_episodes(bank: Bank) -> list[tuple[str, float]]:
    d = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION},
            sceneType="dialogue", queryText="a bargain at the harbour")
    return [(i["id"], i["reason"]["score"]) for i in d["items"] if i["kind"] == "episode"]


def test_the_ranking_kept_in_memory_follows_every_change(bank: Bank, sample: Path) -> None:
    ids = [_ok(bank, "memory:episode:record", sceneType=scene, summary=summary, wait=True)["id"]
           for scene, summary in [("dialogue", "a bargain with the harbour master"), ("action", "a chase on the docks"),
                                  ("dialogue", "Maren haggles over rope")]]
    first = _layer_four_episodes(bank)  # read whole
    _ok(bank, "memory:episode:query", sceneType="dialogue", queryText="haggling")  # recalls: patched in
    ids.append(_ok(bank, "memory:episode:record", sceneType="dialogue", summary="a bargain struck at the harbour",
                   importance=1.0, wait=True)["id"])  # a new one: added
    month = next((sample / ".writenow/journal").rglob("*.jsonl"))
    later = (datetime.now(timezone.utc) + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # after its record
    with month.open("a", encoding="utf-8") as f:  # evicted by hand: taken out
        f.write(json.dumps({"event": "episode-evicted", "at": later, "episodeId": ids[0]}) + "\n")
    bank.sync()
    patched = _layer_four_episodes(bank)
    assert patched != first and ids[0] not in [i for i, _ in patched] and patched[0][0] == ids[3]
    fresh = membank.open(sample)  # a new process reads the table whole
    try:
        assert _layer_four_episodes(fresh) == patched
    finally:
        fresh.close()
