"""When each lifecycle trigger last ran (its `lifecycle` journal lines), and the stored decay kept as
of the last daily trigger the journal holds: a rebuild at any time stores the same scores."""

from __future__ import annotations

import json
from typing import Any

from ...files import journal
from ...files.scan import PROJECT_PREFIX
from ...index import Index
from ...index.schema import DomainSchema, register
from ..episodes import store as episodes

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
        latest = last(index).get("daily")
        if latest is not None and latest != episodes.decayed_at(index):
            episodes.redecay(index, latest)


def last(index: Index) -> dict[str, str]:
    """The time each trigger last ran."""
    return {trigger: at for trigger, at in index.db.execute(
        "SELECT trigger, max(at) FROM lifecycle_runs GROUP BY trigger")}


def report(index: Index) -> dict[str, Any]:
    """For `index:status`: the last time each trigger ran (from the journal, or this index's own record
    of a run that changed nothing: `ran_key`; null: never), and the live episodes per decay level."""
    from_journal = last(index)
    ran = {}
    for trigger in TRIGGERS:
        seen = [t for t in (from_journal.get(trigger), index.get_meta(ran_key(trigger))) if t]
        ran[trigger] = max(seen) if seen else None
    return {"lastRun": ran, "levels": episodes.levels(index)}


def ran_key(trigger: str) -> str:
    """meta: when `trigger` last ran without anything to write to the journal."""
    return f"lifecycle.ran.{trigger}"
