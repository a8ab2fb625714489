"""The lifecycle triggers (episodes.md, Lifecycle), each run on demand and reporting what it did:

- `realtime`: each store back within its capacity (TTL-expired first, then least recently used);
- `daily`: every episode's decay stored as of now when a level moved (the journal keeps the time: a
  rebuild agrees);
- `weekly`: `to_compress` episodes compressed (or evicted when they do not fit), and runs older than a
  week written to history (a file the writer edited is kept);
- `monthly`: `to_evict` episodes evicted (journaled, never erased).

Re-running a trigger changes nothing, and each journals a line only when it changed something: opening
a project (`serve` and `watch` run `daily`) writes no file when nothing moved. A run dated after now
(the clock was ahead) is ignored with a warning (runs.py)."""

from __future__ import annotations

import time
from datetime import datetime, timedelta
from typing import Any

from ...files import journal
from ...files.conflicts import RESOLVE, conflict_line
from ...files.scan import PROJECT_PREFIX
from ...files.write import atomic_write, check_inside
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ...kernel.log import log
from ..contract import Bank
from ..episodes import capacity, flows as episodes, store, traces
from ..episodes.episode import clean
from ..episodes.decay import TO_COMPRESS, TO_EVICT, level, scores
from . import history, runs

DAY = timedelta(days=1)


def due(last_daily: str | None, now: datetime) -> bool:
    """Whether the daily trigger should run: never ran, or a day has passed since."""
    if last_daily is None:
        return True  # (a run dated after now is never the last one: runs.last leaves it out)
    return now - datetime.fromisoformat(last_daily.replace("Z", "+00:00")) >= DAY


def _levels_now(bank: Bank, now: float) -> dict[str, tuple[str, bool, bool]]:
    """Each live episode's (level as of now, compressed, kept) — kept: pinned or confirmed."""
    import numpy as np  # here: `membank status` imports this module for the last runs, and reads no level

    confirmed = traces.confirmed_runs(bank.index)
    rows = bank.index.db.execute("SELECT id, importance, since, recall_count, pinned, compressed, run_id FROM episodes"
                                 " WHERE evicted = 0").fetchall()
    if not rows:
        return {}
    cols = list(zip(*rows))
    values = scores(np.asarray(cols[1], dtype=float), np.asarray(cols[2], dtype=float),
                    np.asarray(cols[3], dtype=float), np.asarray(cols[4], dtype=np.int64), now)
    return {r[0]: (level(float(v)), bool(r[5]), bool(r[4]) or r[6] in confirmed) for r, v in zip(rows, values)}


def _journal(bank: Bank, trigger: str, report: dict[str, Any]) -> None:
    # daily's line is bookkeeping (the time stored decay is computed at), not something the writer made:
    # it goes where git does not look, so opening a project never dirties the work tree; weekly and
    # monthly lines record what they changed and stay in the tracked journal.
    folder = journal.TRACES if trigger == "daily" else journal.FOLDER
    episodes.journaled(bank, {"event": runs.EVENT, "trigger": trigger, "report": report}, folder=folder)


def realtime(bank: Bank) -> dict[str, Any]:
    settings = bank.settings_files.lifecycle()
    evicted: dict[str, list[str]] = {"ttl": [], "lru": []}
    for compressed in (False, True):
        choice = capacity.room(bank.index, settings, adding=0, compressed=compressed)
        evicted["ttl"] += choice.ttl
        evicted["lru"] += choice.lru
    episodes.evict(bank, evicted["ttl"], "ttl")
    episodes.evict(bank, evicted["lru"], "lru")
    return {"evicted": len(evicted["ttl"]) + len(evicted["lru"]), "ttl": len(evicted["ttl"]),
            "lru": len(evicted["lru"]), "changed": bool(evicted["ttl"] or evicted["lru"])}


def moved(stored: dict[str, str], now: dict[str, str]) -> list[str]:
    """The episodes whose level as of now is not the stored one."""
    return sorted(i for i, name in now.items() if stored.get(i) != name)


def daily(bank: Bank) -> dict[str, Any]:
    """Every decay as of now. Journaled (its time is the basis of the stored scores, runs.py) only when
    that changes something: an episode's level moves, or the stored scores were computed at a time after
    now (the clock was ahead). Otherwise the stored scores stay as of the last run that moved one, and
    the files stay untouched: opening a project changes no tracked file (files.md, Git)."""
    index = bank.index
    now = clock.now()
    live = store.counts(index)["live"]
    with index.transaction():
        runs.settle(index)  # a run dated after now is ignored (the clock was ahead): as a rebuild would store
    stored = dict(index.db.execute("SELECT id, level FROM episodes WHERE evicted = 0").fetchall())
    changes = moved(stored, {i: name for i, (name, _, _) in _levels_now(bank, now.timestamp()).items()})
    basis = store.decayed_at(index)
    ahead = basis is not None and basis > clock.now_precise()
    report: dict[str, Any] = {"episodes": live, "changed": bool(changes) or ahead, "moved": len(changes)}
    if report["changed"]:
        _journal(bank, "daily", {k: v for k, v in report.items() if k != "changed"})  # stores every decay (runs.put)
    return {**report, "levels": store.levels(index)}


def _joining(bank: Bank, levels: dict[str, tuple[str, bool, bool]]) -> tuple[capacity.Held, ...]:
    """The live `to_compress` episodes not compressed yet, as the compressed store's capacity sees them."""
    chosen = [i for i, (name, compressed, _) in levels.items() if name == TO_COMPRESS and not compressed]
    if not chosen:
        return ()
    since = dict(bank.index.db.execute(f"SELECT id, since FROM episodes WHERE id IN ({','.join('?' * len(chosen))})",
                                       chosen).fetchall())
    return tuple(capacity.Held(i, since[i], levels[i][2]) for i in chosen)


def compression(bank: Bank, settings: dict[str, Any],
                joining: tuple[capacity.Held, ...]) -> tuple[capacity.Choice, set[str]]:
    """What makes room in the compressed store for the episodes joining it, decided before anything is
    written, and the kept episodes that stay uncompressed. Those that do not fit go themselves, least
    recently used first (`compressedEpisodes: 0`: each one not kept); a kept one (pinned, confirmed) that
    cannot fit stays where it is. MEMORY_CAPACITY_EXCEEDED only when the store's own kept episodes
    overflow it (then nothing was written)."""
    try:
        return capacity.room(bank.index, settings, adding=0, compressed=True, joining=joining), set()
    except MembankError as e:
        if e.code != capacity.CAPACITY_EXCEEDED or not any(h.kept for h in joining):
            raise
        free = tuple(h for h in joining if not h.kept)
        return (capacity.room(bank.index, settings, adding=0, compressed=True, joining=free),
                {h.id for h in joining if h.kept})


def weekly(bank: Bank) -> dict[str, Any]:
    now = clock.now()
    settings = bank.settings_files.lifecycle()
    joining = _joining(bank, _levels_now(bank, now.timestamp()))
    choice, staying = compression(bank, settings, joining)  # refused before anything is written, if it must be
    gone = set(choice.ids)
    chosen = [h.id for h in joining if h.id not in gone and h.id not in staying]
    report: dict[str, Any] = {"compressed": 0, "evicted": 0, "history": [], "runs": 0}
    entries = _entries(bank, history.cutoff(now))
    report["runs"] = len(entries)
    report["history"], kept = _write_history(bank, entries)
    if kept:
        report["kept"] = kept
        conflicted = [c for c in kept if conflict_line(bank.project.file(c.removeprefix(PROJECT_PREFIX)).read_text(
            "utf-8", errors="replace")) is not None]
        report["warnings"] = [f"{c} holds git conflict markers (both machines' weekly runs wrote it): membank leaves "
                              f"it as it is; {RESOLVE}, or delete it to have membank write it again from this "
                              "machine's journal" for c in conflicted]
    episodes.evict(bank, choice.ttl, "ttl")
    episodes.evict(bank, choice.lru, "lru")
    if chosen:
        episodes.journaled(bank, {"event": "episode-updated", "ids": chosen, "changes": {"compressed": True}})
    report.update(compressed=len(chosen), evicted=len(choice.ids))
    report["changed"] = bool(chosen or choice.ids or report["history"])
    return report


def monthly(bank: Bank) -> dict[str, Any]:
    chosen = [i for i, (name, _, kept) in _levels_now(bank, clock.now().timestamp()).items()
              if name == TO_EVICT and not kept]
    episodes.evict(bank, chosen, "decayed")
    return {"evicted": len(chosen), "changed": bool(chosen)}


RUN = {"realtime": realtime, "daily": daily, "weekly": weekly, "monthly": monthly}


def run(bank: Bank, trigger: str) -> dict[str, Any]:
    """`memory:lifecycle:run`: one trigger, under the write lock, reporting what it did."""
    started = time.perf_counter()
    with bank.write_lock, bank.index.lock:
        at = clock.now_precise()
        report = RUN[trigger](bank)
        said = report.pop("warnings", [])
        if trigger != "daily" and report["changed"]:
            _journal(bank, trigger, {k: v for k, v in report.items() if k != "changed"})
        bank.index.set_meta(runs.ran_key(trigger), at)
        warnings = said + runs.warnings(bank.index)
    for warning in warnings:
        log.warning("%s: %s", bank.info.id, warning)
    return {"trigger": trigger, "at": at, **report, "warnings": warnings,
            "tookMs": round((time.perf_counter() - started) * 1000, 2)}


# -- history -------------------------------------------------------------------------------------


def _entries(bank: Bank, before: str) -> list[history.Entry]:
    """Every run before `before` (and every episode recorded without a run), as history lists it."""
    index = bank.index
    privacy = bank.settings_files.memory()["privacyModeEnabled"]
    names = {c["id"]: c.get("name") or c["id"] for c in index.cards()}
    files: dict[str, bytes | None] = {}
    out = []
    for source, line, offset, run_id, at, _ in index.db.execute(  # each run once, however many copies of its line
            "SELECT source, line, offset, run_id, at, min(source || printf(':%012d', line)) FROM traces"
            " WHERE event = 'run' AND at < ? GROUP BY ekey ORDER BY at", (before,)).fetchall():
        rel = bank.project.rel(source)
        if rel is None:
            continue
        if rel not in files:
            files[rel] = traces.read_journal(bank, rel)
        data = files[rel]
        event = traces.line_at(data, offset) if data is not None else None
        if event is None or traces.run_of(event) != run_id:
            continue
        pieces = [p for p in event.get("pieces") or [] if isinstance(p, dict)]
        cards = tuple(dict.fromkeys(str(names.get(p.get("id"), p.get("id"))) for p in pieces
                                    if p.get("kind") in ("card", "state") and isinstance(p.get("id"), str)))
        found = store.of_run(index, run_id)
        last = found[-1] if found else {}
        out.append(history.Entry(at, clean("text", event.get("documentId")), clean("text", event.get("skillId")), last.get("action"),
                                 last.get("implicitSignal"), last.get("signalWeight"), cards,
                                 None if privacy else last.get("summary"), f"{rel}#L{line}"))
    for (record,) in index.db.execute("SELECT record FROM episodes WHERE run_id IS NULL AND created_at < ?"
                                      " ORDER BY created_at", (before,)).fetchall():
        e = store.state_of(record, 0, None)
        out.append(history.Entry(e["createdAt"], e.get("chapterId"), e.get("skillUsed"), e.get("action"),
                                 e.get("implicitSignal"), e.get("signalWeight"), (),
                                 None if privacy else e.get("summary"), e["source"].removeprefix(PROJECT_PREFIX)))
    return out


def _write_history(bank: Bank, entries: list[history.Entry]) -> tuple[list[str], list[str]]:
    """Each month's file rewritten when its text changed, unless the writer edited it or it would list
    fewer runs (history.replaceable): the files written, and those kept, as citations."""
    written, kept = [], []
    for month, found in sorted(history.by_month(entries).items()):
        rel = f"{history.FOLDER}/{month}.md"
        path = bank.project.file(rel)
        text = history.render(month, found)
        try:
            check_inside(bank.project.path, path, bank.project.source)
            old = path.read_bytes() if path.is_file() else None
            if old is not None and old == text.encode("utf-8"):
                continue
            if old is not None and not history.replaceable(old, text):
                kept.append(bank.project.source(rel))
                continue
            atomic_write(path, text.encode("utf-8"))
        except OSError as e:
            before = f"only {', '.join(written)} written before it" if written else "nothing was written"
            raise MembankError(errors.DB_ERROR, f"could not write {bank.project.source(rel)}: "
                               f"{e.strerror or e.__class__.__name__}; {before}, no episode was compressed or "
                               "evicted", {"source": bank.project.source(rel), "written": written}) from None
        written.append(bank.project.source(rel))
    return written, kept
