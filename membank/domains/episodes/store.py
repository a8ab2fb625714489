"""Episodes in the index: their steps as read from the journal, and each episode's state folded
from them (episode.py), with the three indexes seed 003 names and a vector of its text.

The journal is the truth: a journal file read again whole replaces its steps, and every episode
it touched is folded again from all its steps, whichever file they are in."""

from __future__ import annotations

import json
from datetime import datetime
from typing import TYPE_CHECKING, Any, Iterable

from ...files import journal
from ...files.scan import PROJECT_PREFIX
from ...index import Index
from ...index.schema import DomainSchema, register
from .decay import LEVELS, TO_EVICT, level, score, seconds
from .episode import RECALLED, Step, embed_text, fold, steps_of

if TYPE_CHECKING:  # the model's code (and numpy) where it computes: opening a project needs neither
    from ...index.embed import Embedder

EMBED_BATCH = 256
LEVEL_NAMES = tuple(name for _, name in LEVELS) + (TO_EVICT,)
MODEL = "episodes.model"  # meta: the embedding model's identity the vectors were made with
GENERATION = "episodes.generation"  # meta: moves whenever an episode's vector or its set of episodes changes
FAILED = "episodes.failed"  # bank.memo: episodes given up on since the project opened (flows.py counts them)


def forget(index: Index, source: str) -> None:
    """A journal file is gone: its steps go, and the episodes they spoke of are folded again."""
    touched = [r[0] for r in index.db.execute("SELECT DISTINCT episode_id FROM episode_steps WHERE source = ?",
                                              (source,)).fetchall()]
    index.db.execute("DELETE FROM episode_steps WHERE source = ?", (source,))
    refold(index, touched)
    _moved(index, touched)


register(DomainSchema(
    "episodes.store", 7,
    """CREATE TABLE episode_steps(       -- every journal event about an episode, one row per episode
    source TEXT NOT NULL, line INTEGER NOT NULL, at TEXT NOT NULL, episode_id TEXT NOT NULL,
    kind TEXT NOT NULL, data TEXT NOT NULL,
    ekey TEXT NOT NULL                 -- the event's identity: its copies count once (files.md, Git)
);
CREATE INDEX episode_steps_id ON episode_steps(episode_id, at);
CREATE INDEX episode_steps_source ON episode_steps(source);
CREATE INDEX episode_steps_key ON episode_steps(ekey);
CREATE TABLE episodes(               -- each episode's state after its steps
    id TEXT PRIMARY KEY, project_id TEXT, run_id TEXT, scene_type TEXT, skill_used TEXT,
    created_at TEXT NOT NULL, last_recalled_at TEXT, since REAL NOT NULL, recall_count INTEGER NOT NULL, importance REAL NOT NULL,
    signal_weight REAL NOT NULL, pinned INTEGER NOT NULL, compressed INTEGER NOT NULL, evicted INTEGER NOT NULL,
    record TEXT NOT NULL, text TEXT NOT NULL, vec BLOB,
    decay REAL NOT NULL DEFAULT 1, level TEXT NOT NULL DEFAULT 'active'  -- as of the last daily trigger
);
CREATE INDEX episodes_level ON episodes(level) WHERE evicted = 0;
CREATE INDEX episodes_active ON episodes(since) WHERE evicted = 0 AND compressed = 0;
CREATE INDEX episodes_compressed ON episodes(since) WHERE evicted = 0 AND compressed = 1;
CREATE INDEX episodes_project_created ON episodes(project_id, created_at);
CREATE INDEX episodes_scene ON episodes(scene_type, skill_used, evicted);  -- covers `repeats`: no row read
CREATE INDEX episodes_recalled ON episodes(last_recalled_at);
CREATE INDEX episodes_run ON episodes(run_id);
CREATE INDEX episodes_unembedded ON episodes(id) WHERE vec IS NULL AND text != '';
CREATE INDEX episodes_evicted ON episodes(id) WHERE evicted = 1;
CREATE TABLE episode_changes(        -- which episodes each generation changed: a ranking table is patched, not reread
    generation INTEGER PRIMARY KEY, ids TEXT NOT NULL, unlisted INTEGER NOT NULL
);""",
    "DROP TABLE IF EXISTS episode_steps; DROP TABLE IF EXISTS episodes; DROP TABLE IF EXISTS episode_changes",
    derived_from=(f"{PROJECT_PREFIX}{journal.FOLDER}/",),
    forget=forget))


def put(index: Index, source: str, found: list[journal.Event], whole: bool) -> None:
    """Store the steps one journal file holds (`whole`) or had appended, and fold what they touched.
    Appended recalls of known episodes are counted in place; anything else is folded again whole."""
    touched: dict[str, None] = {}
    recalls: dict[str, list[str]] = {}
    if whole:
        touched.update((r[0], None) for r in index.db.execute(
            "SELECT DISTINCT episode_id FROM episode_steps WHERE source = ?", (source,)).fetchall())
        index.db.execute("DELETE FROM episode_steps WHERE source = ?", (source,))
    rows = []
    seen = set() if whole else _known(index, [e.key for e in found])  # (episode, event) already counted
    for event in found:
        for episode_id, step in steps_of(event.data, event.cite):
            rows.append((source, event.line, step.at, episode_id, step.kind, json.dumps(step.data, ensure_ascii=False),
                         event.key))
            if (episode_id, event.key) in seen:
                continue  # a copy of an event already counted (a union merge, a sync tool's copy): nothing changes
            seen.add((episode_id, event.key))
            if step.kind == RECALLED and not whole:
                recalls.setdefault(episode_id, []).append(step.at)
            else:
                touched[episode_id] = None
    index.db.executemany("INSERT INTO episode_steps(source, line, at, episode_id, kind, data, ekey)"
                         " VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    counted = _count_recalls(index, {k: v for k, v in recalls.items() if k not in touched})
    touched.update((k, None) for k in recalls if k not in counted)  # not in the index yet: folded whole
    refold(index, list(touched))
    if touched or counted:
        _moved(index, [*touched, *counted])


def _known(index: Index, keys: list[str]) -> set[tuple[str, str]]:
    """(episode id, event key) of the steps the index already holds for these events."""
    out: set[tuple[str, str]] = set()
    unique = list(dict.fromkeys(keys))
    for i in range(0, len(unique), 500):
        part = unique[i:i + 500]
        out.update(index.db.execute(f"SELECT episode_id, ekey FROM episode_steps WHERE ekey IN ({','.join('?' * len(part))})",
                                    part).fetchall())
    return out


def _count_recalls(index: Index, recalls: dict[str, list[str]]) -> set[str]:
    """Recalls appended after everything an episode already counts: added to its row as they are."""
    if not recalls:
        return set()
    marks = ",".join("?" * len(recalls))
    rows = index.db.execute(f"SELECT id, created_at, last_recalled_at FROM episodes WHERE id IN ({marks})",
                            list(recalls)).fetchall()
    done = set()
    for episode_id, created, last in rows:
        ats = recalls[episode_id]
        if min(ats) < (last or created):
            continue  # out of order (an older line appended by hand): folded whole instead
        newest = max(ats)
        index.db.execute("UPDATE episodes SET recall_count = recall_count + ?, last_recalled_at = ?, since = ?"
                         " WHERE id = ?", (len(ats), newest, seconds(newest), episode_id))
        done.add(episode_id)
    at = decayed_at(index)
    for episode_id, record, recalls, last, _, _ in index.db.execute(
            f"{_RECORD} WHERE id IN ({','.join('?' * len(done))})", list(done)).fetchall() if done else ():
        value, name = _decay(state_of(record, recalls, last), at)  # as a fold from scratch would store it
        index.db.execute("UPDATE episodes SET decay = ?, level = ? WHERE id = ?", (value, name, episode_id))
    return done


DECAYED_AT = "episodes.decayed_at"  # meta: the time of the last daily trigger the journal holds


def decayed_at(index: Index) -> str | None:
    return index.get_meta(DECAYED_AT)


def _decay(state: dict[str, Any], at: str | None) -> tuple[float, str]:
    """An episode's stored decay: as of the last daily trigger (as of its birth before any), so a
    rebuild at any later time gives the same stored scores."""
    when = datetime.fromisoformat((at or state["createdAt"]).replace("Z", "+00:00"))
    value = score(state["importance"], state["createdAt"], state["lastRecalledAt"], state["recallCount"], when,
                  state["pinned"])
    return value, level(value)


def redecay(index: Index, at: str) -> dict[str, int]:
    """Store every episode's decay as of `at` (the daily trigger); the live ones' count per level."""
    index.set_meta(DECAYED_AT, at)
    rows = index.db.execute("SELECT id, record, recall_count, last_recalled_at FROM episodes").fetchall()  # all
    updates = []
    for episode_id, record, recalls, last in rows:
        value, name = _decay(state_of(record, recalls, last), at)
        updates.append((value, name, episode_id))
    index.db.executemany("UPDATE episodes SET decay = ?, level = ? WHERE id = ?", updates)
    return levels(index)


def levels(index: Index) -> dict[str, int]:
    """Live episodes per stored decay level."""
    found = {name: 0 for name in LEVEL_NAMES}
    for name, n in index.db.execute("SELECT level, count(*) FROM episodes WHERE evicted = 0 GROUP BY level"):
        found[name] = int(n)
    return found


def refold(index: Index, ids: Iterable[str]) -> None:
    """Fold each episode again from all its steps, wherever they are."""
    db = index.db
    at = decayed_at(index)
    for episode_id in ids:
        seen: set[str] = set()  # each event once, however many copies of it the journal holds
        steps = [Step(kind, at, json.loads(data), f"{source}#L{line}") for kind, at, data, source, line, key in db.execute(
            "SELECT kind, at, data, source, line, ekey FROM episode_steps WHERE episode_id = ? ORDER BY at, source, line",
            (episode_id,)).fetchall() if not (key in seen or seen.add(key))]
        state = fold(steps)
        if state is None:
            db.execute("DELETE FROM episodes WHERE id = ?", (episode_id,))
            continue
        value, name = _decay(state, at)
        db.execute(
            "INSERT INTO episodes(id, project_id, run_id, scene_type, skill_used, created_at, last_recalled_at, since,"
            " recall_count, importance, signal_weight, pinned, compressed, evicted, record, text, decay, level)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET"
            " project_id = excluded.project_id, run_id = excluded.run_id, scene_type = excluded.scene_type,"
            " skill_used = excluded.skill_used, created_at = excluded.created_at,"
            " last_recalled_at = excluded.last_recalled_at, since = excluded.since, recall_count = excluded.recall_count,"
            " importance = excluded.importance, signal_weight = excluded.signal_weight, pinned = excluded.pinned,"
            " compressed = excluded.compressed, evicted = excluded.evicted, record = excluded.record,"
            " vec = CASE WHEN episodes.text = excluded.text THEN episodes.vec END, text = excluded.text,"
            " decay = excluded.decay, level = excluded.level",
            (episode_id, state["projectId"], state["runId"], state["sceneType"], state["skillUsed"],
             state["createdAt"], state["lastRecalledAt"], seconds(state["lastRecalledAt"] or state["createdAt"]),
             state["recallCount"], state["importance"], state["signalWeight"], int(state["pinned"]),
             int(state["compressed"]), int(state["evictedAt"] is not None),
             json.dumps(state, ensure_ascii=False, sort_keys=True), embed_text(state), value, name))


KEPT_CHANGES = 256  # generations whose changed ids are kept for patching


def _moved(index: Index, ids: list[str], unlisted: bool = False) -> None:
    """A new generation: the episode ids it changed are logged, so a ranking table a step behind is
    patched (`candidates.py`); `unlisted` when they are too many to list (it is read whole then)."""
    gen = int(index.get_meta(GENERATION) or 0) + 1
    index.set_meta(GENERATION, str(gen))
    unlisted = unlisted or len(ids) > 500
    index.db.execute("INSERT OR REPLACE INTO episode_changes(generation, ids, unlisted) VALUES (?, ?, ?)",
                     (gen, json.dumps([] if unlisted else ids), int(unlisted)))
    index.db.execute("DELETE FROM episode_changes WHERE generation <= ?", (gen - KEPT_CHANGES,))


def changes(index: Index, after: int, upto: int) -> list[tuple[list[str], bool]] | None:
    """(ids, unlisted) of each generation in (after, upto], or None when one of them is not known."""
    rows = index.db.execute("SELECT ids, unlisted FROM episode_changes WHERE generation > ? AND generation <= ?"
                            " ORDER BY generation", (after, upto)).fetchall()
    if len(rows) != upto - after:
        return None
    return [(json.loads(ids), bool(unlisted)) for ids, unlisted in rows]


def generation(index: Index) -> int:
    return int(index.get_meta(GENERATION) or 0)


def unembedded(index: Index) -> bool:
    return bool(index.db.execute("SELECT 1 FROM episodes WHERE vec IS NULL AND text != '' LIMIT 1").fetchall())


def model(index: Index) -> str | None:
    """The model the episodes' vectors were made with."""
    return index.get_meta(MODEL)


def embed_pending(index: Index, embedder: Embedder) -> None:
    """Give every episode with text and no vector one (in the caller's transaction); with another model
    than the one the vectors were made with, every episode is embedded again."""
    import numpy as np

    if model(index) != embedder.name:
        index.db.execute("UPDATE episodes SET vec = NULL WHERE vec IS NOT NULL")
        index.set_meta(MODEL, embedder.name)
    done: list[str] = []
    while rows := index.db.execute("SELECT id, text FROM episodes WHERE vec IS NULL AND text != '' LIMIT ?",
                                   (EMBED_BATCH,)).fetchall():
        vectors = np.asarray(embedder.encode([text for _, text in rows]), dtype=np.float32)
        index.db.executemany("UPDATE episodes SET vec = ? WHERE id = ?",
                             [(v.tobytes(), episode_id) for (episode_id, _), v in zip(rows, vectors)])
        done += [episode_id for episode_id, _ in rows]
    if done:
        _moved(index, done)


_RECORD = "SELECT id, record, recall_count, last_recalled_at, decay, level FROM episodes"


def state_of(record: str, recall_count: int, last_recalled_at: str | None, decay: float | None = None,
             level_: str | None = None) -> dict[str, Any]:
    """An episode's state from its row: the folded record, with the columns kept in place (recalls
    counted as they come, the decay stored by the daily trigger)."""
    state: dict[str, Any] = json.loads(record)
    state.update(recallCount=recall_count, lastRecalledAt=last_recalled_at)
    if decay is not None:
        state.update(decay=decay, level=level_)
    return state


def records(index: Index, ids: list[str]) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return {i: state_of(*rest) for i, *rest in index.db.execute(f"{_RECORD} WHERE id IN ({marks})", ids).fetchall()}


def get(index: Index, episode_id: str) -> dict[str, Any] | None:
    return records(index, [episode_id]).get(episode_id)


def of_run(index: Index, run_id: str) -> list[dict[str, Any]]:
    """The episodes of one run, oldest first."""
    return [state_of(*rest) for _, *rest in index.db.execute(
        f"{_RECORD} WHERE run_id = ? ORDER BY created_at, id", (run_id,)).fetchall()]


def repeats(index: Index, skill: str | None, scene: str | None) -> int:
    """Earlier live episodes of the same skill on the same kind of scene (REPEATED_SCENE_SKILL)."""
    if not skill or not scene:
        return 0
    return int(index.db.execute("SELECT count(*) FROM episodes WHERE skill_used = ? AND scene_type = ? AND evicted = 0",
                                (skill, scene)).fetchall()[0][0])


def counts(index: Index) -> dict[str, int]:
    """Episodes in all and live ones (from indexes alone: `index:status` is the sidecar's liveness probe)."""
    total = index.db.execute("SELECT count(*) FROM episodes").fetchall()[0][0]
    evicted = index.db.execute("SELECT count(*) FROM episodes WHERE evicted = 1").fetchall()[0][0]
    return {"total": int(total), "live": int(total - evicted)}


def latest_since(index: Index) -> float:
    """The latest `since` of a live episode (-inf: none): `dated_after` is 0 for any time not before it."""
    found = [r[0] for compressed in (0, 1) for r in index.db.execute(
        "SELECT max(since) FROM episodes WHERE evicted = 0 AND compressed = ?", (compressed,)) if r[0] is not None]
    return max(found, default=float("-inf"))


def dated_after(index: Index, at: str) -> int:
    """Live episodes created or last recalled after `at` (the clock was ahead when they were written):
    `since` is the later of the two, counted over the stores' own indexes."""
    when = seconds(at)
    return sum(int(index.db.execute("SELECT count(*) FROM episodes WHERE evicted = 0 AND compressed = ? AND since > ?",
                                    (compressed, when)).fetchall()[0][0]) for compressed in (0, 1))
