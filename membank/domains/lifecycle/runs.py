"""When each lifecycle trigger last ran (its `lifecycle` journal lines), and the stored decay kept as
of the last daily trigger the journal holds: a rebuild at any time stores the same scores.

A run dated after now (the clock was ahead when it ran: files.md, Time) counts for nothing: not as
a trigger's last run (the daily trigger is not skipped for the time the clock was ahead), nor as the
time the stored decay is computed at. `ahead` says so, for a warning."""

from __future__ import annotations

import bisect
import json
from typing import Any

from ...files import journal
from ...files.scan import PROJECT_PREFIX
from ...index import Index
from ...index.schema import DomainSchema, register
from ...kernel import clock
from ..episodes import store as episodes
from ..episodes.decay import seconds

EVENT = "lifecycle"
TRIGGERS = ("realtime", "daily", "weekly", "monthly")

register(DomainSchema(
    "lifecycle.runs", 1,
    """CREATE TABLE lifecycle_runs(      -- every lifecycle trigger that ran, from the journal
    source TEXT NOT NULL, line INTEGER NOT NULL, at TEXT NOT NULL, trigger TEXT NOT NULL, report TEXT NOT NULL
);
CREATE INDEX lifecycle_runs_trigger ON lifecycle_runs(trigger, at);""",
    "DROP TABLE IF EXISTS lifecycle_runs",
    derived_from=(f"{PROJECT_PREFIX}{journal.FOLDER}/",),
    forget="DELETE FROM lifecycle_runs WHERE source = ?"))


def put(index: Index, source: str, found: list[journal.Event], whole: bool) -> None:
    if whole:
        index.db.execute("DELETE FROM lifecycle_runs WHERE source = ?", (source,))
    rows = [(source, e.line, e.data["at"], e.data["trigger"], json.dumps(e.data.get("report") or {}))
            for e in found if e.data.get("event") == EVENT and isinstance(e.data.get("at"), str)
            and e.data.get("trigger") in TRIGGERS]
    index.db.executemany("INSERT INTO lifecycle_runs(source, line, at, trigger, report) VALUES (?, ?, ?, ?, ?)", rows)
    if whole or any(r[3] == "daily" for r in rows):
        settle(index)


def settle(index: Index) -> bool:
    """Store every decay as of the last daily run the journal holds that is not after now (a rebuild
    does the same); whether the stored scores moved."""
    latest = last(index).get("daily")
    if latest is None or latest == episodes.decayed_at(index):
        return False
    episodes.redecay(index, latest)
    return True


def _now() -> str:
    return clock.now_precise()


def last(index: Index) -> dict[str, str]:
    """The time each trigger last ran, leaving out runs dated after now."""
    return {trigger: at for trigger, at in index.db.execute(
        "SELECT trigger, max(at) FROM lifecycle_runs WHERE at <= ? GROUP BY trigger", (_now(),))}


def ahead(index: Index) -> dict[str, str]:
    """Runs dated after now, by trigger: the latest of each (the clock was ahead when they ran)."""
    return {trigger: at for trigger, at in index.db.execute(
        "SELECT trigger, max(at) FROM lifecycle_runs WHERE at > ? GROUP BY trigger", (_now(),))}


def report(index: Index) -> dict[str, Any]:
    """For `index:status`: the last time each trigger ran (from the journal, or this index's own record
    of a run that changed nothing: `ran_key`; null: never), and the live episodes per decay level.
    What it reads is kept while the index's view holds (`_view`): only the clock is read each time."""
    view, now = _view(index), _now()
    ran = {}
    for trigger in TRIGGERS:
        runs = view["runs"].get(trigger, ())
        upto = bisect.bisect_right(runs, now)  # `last`: runs dated after now left out
        seen = [t for t in (runs[upto - 1] if upto else None, view["ran"][trigger]) if t and t <= now]
        ran[trigger] = max(seen) if seen else None
    later = {t: runs[-1] for t, runs in view["runs"].items() if runs[-1] > now}  # `ahead`
    return {"lastRun": ran, "levels": dict(view["levels"]),
            "warnings": _warnings(later, episodes.dated_after(index, now) if view["latest"] > seconds(now) else 0)}


def _view(index: Index) -> dict[str, Any]:
    """Every run's time by trigger (sorted), the `ran_key` metas, the decay levels and the latest
    `since` of a live episode: for as long as this connection's view of the index holds."""
    memo = index.view_memo("lifecycle.report")
    memo = {} if memo is None else memo  # (in the middle of a write: read, keep nothing)
    if "runs" not in memo:
        runs: dict[str, list[str]] = {}
        for trigger, at in index.db.execute("SELECT DISTINCT trigger, at FROM lifecycle_runs ORDER BY trigger, at"):
            runs.setdefault(trigger, []).append(at)
        memo.update(ran={t: index.get_meta(ran_key(t)) for t in TRIGGERS}, levels=episodes.levels(index),
                    latest=episodes.latest_since(index), runs=runs)
    return memo


def warnings(index: Index) -> list[str]:
    """What the clock being ahead left behind: runs and episodes dated after now, ignored (files.md, Time)."""
    return _warnings(ahead(index), episodes.dated_after(index, _now()))


def _warnings(later: dict[str, str], episodes_ahead: int) -> list[str]:
    out = []
    if later:
        out.append(f"lifecycle runs dated after now are ignored ({', '.join(f'{t} {at}' for t, at in sorted(later.items()))}"
                   "): the clock was ahead when they ran; triggers and decay go by the runs before now")
    if episodes_ahead:
        out.append(f"{episodes_ahead} episode(s) are dated after now (the clock was ahead when they were "
                   "recorded or last recalled): they count as fresh until then")
    return out


def ran_key(trigger: str) -> str:
    """meta: when `trigger` last ran without anything to write to the journal."""
    return f"lifecycle.ran.{trigger}"
