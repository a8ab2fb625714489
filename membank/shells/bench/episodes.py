"""The bench's rows for episodes (quality.md): `memory:episode:record` and `memory:episode:query` on a
project holding 1,000 active and 5,000 compressed episodes, written into its journal as membank
writes them (one line per episode, and one `episode-updated` line per compressed one)."""

from __future__ import annotations

import gc
import json
import random
from datetime import timedelta
from pathlib import Path
from typing import Any

from ...kernel import clock
from .corpus import TOPICS, english
from .measure import caller
from .rows import Row, timed

SCENES = ("action", "dialogue", "description", "exposition", "romance", "transition")
SKILLS = ("continue", "rewrite", "polish", "summarize")
ACTIVE, COMPRESSED = 1_000, 5_000


def _line(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, sort_keys=True) + "\n"


def write_episodes(root: Path, project_id: str, rng: random.Random, active: int = ACTIVE,
                   compressed: int = COMPRESSED) -> int:
    """Episodes appended to the project's journal: `active` from the last ten days, `compressed` from
    two months to a year ago (each with its compression line). Returns how many were written."""
    now = clock.now()
    by_month: dict[str, list[str]] = {}
    for i in range(active + compressed):
        old = i >= active
        at = now - timedelta(days=rng.uniform(60, 365) if old else rng.uniform(0, 10))
        stamp = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        episode = {"id": f"e-bench{i:06d}", "projectId": project_id, "runId": f"r-bench{i:06d}",
                   "sceneType": rng.choice(SCENES), "skillUsed": rng.choice(SKILLS), "action": "accept",
                   "editDistance": round(rng.random() * 0.8, 2), "implicitSignal": "EDITED_ACCEPT",
                   "signalWeight": 0.1, "importance": round(rng.random(), 2),
                   "summary": english(rng, rng.choice(list(TOPICS)), rng.randint(40, 120)), "tags": []}
        lines = by_month.setdefault(stamp[:7], [])
        lines.append(_line({"event": "episode", "at": stamp, "episode": episode}))
        if old:
            later = (at + timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            lines.append(_line({"event": "episode-updated", "at": later, "episodeId": episode["id"],
                                "changes": {"compressed": True}}))
    folder = root / ".writenow" / "journal"
    folder.mkdir(parents=True, exist_ok=True)
    for month, lines in by_month.items():
        with (folder / f"{month}.jsonl").open("a", encoding="utf-8") as f:
            f.writelines(lines)
    return active + compressed


def episode_rows(bank: Any, root: Path, reps: int, rng: random.Random) -> list[Row]:
    call = caller(bank)
    write_episodes(root, bank.info.id, rng)
    bank.sync()
    assert call("index:status", {})["episodes"]["live"] >= ACTIVE + COMPRESSED
    size = ACTIVE + COMPRESSED
    record = Row("episode_record", "memory:episode:record, wait: true (journal fsynced, index updated)", "ms", size,
                 target=15, target_text="p95 ≤ 15 ms", note="1,000 active + 5,000 compressed episodes")
    query = Row("episode_query", "memory:episode:query (sceneType + queryText; recall journaled)", "ms", size,
                target=22, target_text="p95 ≤ 22 ms", note="1,000 active + 5,000 compressed episodes")
    accepted = Row("episode_record_async", "memory:episode:record, returned at once (written in the background)",
                   "ms", size, note="the caller's wait; the write follows off its path")
    gc.collect()
    for _ in range(reps):
        payload = {"sceneType": rng.choice(SCENES), "skillUsed": rng.choice(SKILLS), "editDistance": 0.1,
                   "summary": english(rng, rng.choice(list(TOPICS)), 80)}
        record.samples.append(timed(lambda: call("memory:episode:record", {**payload, "wait": True})))
        query.samples.append(timed(lambda: call("memory:episode:query", {
            "sceneType": rng.choice(SCENES), "queryText": english(rng, rng.choice(list(TOPICS)), 60)})))
    for _ in range(max(10, reps // 4)):
        accepted.samples.append(timed(lambda: call("memory:episode:record", {"sceneType": rng.choice(SCENES)})))
    bank.drain()
    return [record, query, accepted, *trigger_rows(call, size)]


def trigger_rows(call: Any, size: int) -> list[Row]:
    """Each lifecycle trigger three times in a row: the first does the work, the others find it done."""
    rows = []
    for trigger in ("realtime", "daily", "weekly", "monthly"):
        row = Row(f"lifecycle_{trigger}", f"memory:lifecycle:run {trigger} (3 runs: the work, then nothing to do)",
                  "ms", size, note="1,000 active + 5,000 compressed episodes; no target")
        reports = []
        for _ in range(3):
            row.samples.append(timed(lambda: reports.append(call("memory:lifecycle:run", {"trigger": trigger}))))
        done = {k: v for k, v in reports[0].items() if k not in ("trigger", "at", "tookMs", "changed", "levels")
                and v not in (0, [], None)}
        row.note += "; first run: " + (", ".join(f"{k} {len(v) if isinstance(v, list) else v}" for k, v in done.items())
                                        or "nothing to do")
        rows.append(row)
    return rows
