"""Episodes' flows: recording one (at once or off the caller's path, with retries), finding the most
alike, and the one call that turns a writer's verdict on a run into an episode, a signal and a
preference signal (thin shells; the decisions are in signal.py, decay.py, rank.py, episode.py)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from ...files import journal
from ...files.write import new_id
from ...kernel import cancel, clock, errors
from ...kernel.errors import MembankError
from ...kernel.log import log
from ...index import StorageError
from ..contract import Bank
from ..skills import read as skills
from ..learning import events as learning_events, flows as learning
from . import capacity, store, traces
from .decay import seconds
from .episode import to_api
from .rank import Ranked, rank
from .signal import UNDO_AFTER_ACCEPT, WEIGHTS, Signal, implicit_signal, importance, undo_replaces

WRITE_FAILED = "MEMORY_EPISODE_WRITE_FAILED"
TRIES = 3
BACKOFF = (0.05, 0.2)  # seconds before the second and the third try


@dataclass(frozen=True)
class Fields:
    """An episode as the app describes it (`memory:episode:record`)."""
    run_id: str | None = None
    chapter_id: str | None = None
    scene_type: str | None = None
    skill_used: str | None = None
    action: str = "accept"
    selected_index: int | None = None
    candidates: int | None = None
    edit_distance: float | None = None
    implicit_signal: str | None = None
    signal_weight: float | None = None
    importance: float | None = None
    pinned: bool = False
    summary: str | None = None
    tags: tuple[str, ...] = ()


def _signal(bank: Bank, f: Fields) -> Signal:
    if f.implicit_signal is None:
        return implicit_signal(f.action, f.edit_distance, store.repeats(bank.index, f.skill_used, f.scene_type))
    weight = f.signal_weight if f.signal_weight is not None else WEIGHTS[f.implicit_signal]
    return Signal(f.implicit_signal, weight, weight)


def episode(bank: Bank, episode_id: str, f: Fields) -> dict[str, Any]:
    """The `episode` payload a journal line carries (under the write lock: the repeat count is read)."""
    sig = _signal(bank, f)
    privacy = bank.settings_files.memory()["privacyModeEnabled"]
    out = {"id": episode_id, "projectId": bank.info.id, "runId": f.run_id, "chapterId": f.chapter_id,
           "sceneType": f.scene_type, "skillUsed": f.skill_used, "action": f.action, "selectedIndex": f.selected_index,
           "candidates": f.candidates, "editDistance": f.edit_distance, "implicitSignal": sig.name,
           "signalWeight": sig.weight, "signalRepeats": sig.repeats,
           "importance": f.importance if f.importance is not None else importance(sig.weight),
           "pinned": f.pinned, "summary": None if privacy else f.summary, "tags": list(f.tags)}
    return {k: v for k, v in out.items() if v is not None}


def _forget_text(bank: Bank) -> bool:
    """In privacy mode (perhaps just turned on by hand in settings.yaml), no summary, reason or label
    written before stays in the journal (learning's clean-up; files seen clean are not read again)."""
    privacy = bool(bank.settings_files.memory()["privacyModeEnabled"])
    if privacy:
        learning.forget_labels(bank)
    return privacy


def _append(bank: Bank, event: dict[str, Any], durable: bool = True, folder: str = journal.FOLDER) -> str:
    return learning.write_journal(bank, event, durable, folder)


def _index(bank: Bank, rel: str) -> None:
    """Index a journal line just written. The line is the truth: an index that cannot take it now
    catches up at the next sync, so this never fails the write."""
    try:
        bank.sync_one(bank.project, rel)
    except Exception as e:  # the index is derived; the journal line is written
        log.warning("the index could not take a journal line now (%s); the next sync will", e.__class__.__name__)


def journaled(bank: Bank, event: dict[str, Any], durable: bool = True, folder: str = journal.FOLDER) -> None:
    """Append one event to the journal (`folder`: `journal.TRACES` for untracked bookkeeping) and index it."""
    _index(bank, _append(bank, event, durable, folder))


def persist(bank: Bank, episode_id: str, f: Fields, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Write one episode to the journal, trying up to TRIES times; MEMORY_EPISODE_WRITE_FAILED after."""
    problem: MembankError | None = None
    for attempt in range(TRIES):
        if attempt:
            sleep(BACKOFF[attempt - 1])
        try:
            with bank.write_lock, bank.index.lock:
                _forget_text(bank)
                make_room(bank)
                payload = episode(bank, episode_id, f)
                rel = _append(bank, {"event": "episode", "episode": payload})
                _index(bank, rel)
                found = store.get(bank.index, episode_id)
            return found if found is not None else payload
        except MembankError as e:
            if e.code == capacity.CAPACITY_EXCEEDED:
                raise  # full: trying again changes nothing
            problem = e
            log.warning("episode %s not written (try %d of %d): %s", episode_id, attempt + 1, TRIES, e.message)
    message = problem.message if problem else "unknown"
    raise MembankError(WRITE_FAILED, f"the episode could not be written after {TRIES} tries: {message}",
                       {"id": episode_id, "tries": TRIES})


def evict(bank: Bank, ids: tuple[str, ...] | list[str], reason: str, index: bool = True) -> None:
    """Journal episodes as evicted (never erased from the journal); indexed now unless the caller
    indexes the journal after its own line (then this one is not fsynced either: the caller's is)."""
    if ids:
        event = {"event": "episode-evicted", "ids": list(ids), "reason": reason}
        if index:
            journaled(bank, event)
        else:
            _append(bank, event, durable=False)


def make_room(bank: Bank) -> list[str]:
    """Before an episode is written (under the write lock, its line appended and indexed next): the
    realtime trigger when the active store is full — TTL-expired first, then least recently used;
    MEMORY_CAPACITY_EXCEEDED (nothing written) when only pinned or confirmed episodes are left."""
    choice = capacity.room(bank.index, bank.settings_files.lifecycle())
    evict(bank, choice.ttl, "ttl", index=False)
    evict(bank, choice.lru, "lru", index=False)
    return list(choice.ids)


def record(bank: Bank, f: Fields, wait: bool) -> dict[str, Any]:
    """`memory:episode:record`: accepted at once and written off the caller's path, or (`wait`) written now."""
    episode_id = new_id("e")
    if bank.background.closed:  # refused before anything is written, not written and then failed
        raise _closed()
    if wait:
        return {"accepted": True, "id": episode_id, "episode": to_api(persist(bank, episode_id, f))}

    def later() -> None:
        try:
            persist(bank, episode_id, f)
        except Exception as e:  # a MembankError after three tries, or a bug: either way the app hears it
            code, message = (e.code, e.message) if isinstance(e, MembankError) else \
                (errors.INTERNAL, "internal error writing the episode; this is a bug in membank, see its log")
            bank.memo[store.FAILED] = bank.memo.get(store.FAILED, 0) + 1
            log.error("episode %s was not written: %s", episode_id, message, exc_info=not isinstance(e, MembankError))
            bank.notify("episode:failed", {"id": episode_id, "code": code, "message": message})

    if not bank.background.submit(later):
        raise _closed()
    return {"accepted": True, "id": episode_id}


def _closed() -> MembankError:
    return MembankError(errors.DB_ERROR, "the project is closed; the episode was not written (open it again)")


# -- finding the most alike ----------------------------------------------------------------------


def best(bank: Bank, scene: str | None, query: str | None, limit: int) -> tuple[list[tuple[dict[str, Any], Ranked]],
                                                                                list[dict[str, str]]]:
    """The `limit` best episodes with their rank, and why semantic ranking was not used (if it was not)."""
    import numpy as np  # with the candidates, at the first ranking: importing this module needs neither

    from . import candidates

    with bank.index.lock:
        found = candidates.table(bank.index)
        made_with = store.model(bank.index)
    if not found.live:
        return [], []  # nothing to rank: the query is not even embedded (every prompt of a new project)
    reasons: list[dict[str, str]] = []
    vector = None
    if query is None or not query.strip():
        reasons.append({"code": "EMPTY_QUERY", "message": "no queryText: ranked by sceneType and decay"})
    elif (model := bank.embedder()) is None:
        reasons.append({"code": "MODEL_UNAVAILABLE", "message": "no embedding model could be loaded"})
    elif made_with not in (None, model.name):
        reasons.append({"code": "EMBEDDING_DIM_MISMATCH", "message": "the episodes were embedded with another "
                        "model; run `membank index --rebuild` to embed them with this one"})
    else:
        vector = np.asarray(model.encode([query])[0], dtype=np.float32)
        if not vector.any():
            vector = None
            reasons.append({"code": "QUERY_NOT_EMBEDDABLE", "message": "the query has no known tokens"})
    similarity = found.similarity(vector) if vector is not None else None
    ranked = rank(found, similarity, scene, clock.now().timestamp(), limit)
    with bank.index.lock:
        states = store.records(bank.index, [r.id for r in ranked])
    return [(states[r.id], r) for r in ranked if r.id in states], reasons


def query(bank: Bank, scene: str | None, query_text: str | None, limit: int) -> dict[str, Any]:
    """`memory:episode:query`: the most alike episodes, each with its reason; the recall is journaled.
    With the index unreadable: no episodes, the built-in default rules and `memoryDegraded: true`."""
    try:
        chosen, reasons = best(bank, scene, query_text, limit)
    except StorageError as e:
        return {"items": [], "reasons": [{"code": skills.MEMORY_DEGRADED, "message": f"the index could not be read "
                                          f"({e.__class__.__name__}); run `membank index --rebuild`"}],
                "memoryDegraded": True, "defaultRules": list(skills.DEFAULT_RULES)}
    items = [{**to_api(state), "reason": r.reason(scene)} for state, r in chosen]
    cancel.check()  # the last point where stopping leaves nothing behind: the recall is journaled next
    if chosen:
        with cancel.shielded(), bank.write_lock, bank.index.lock:
            # not fsynced: a recall lost to a crash costs one recallCount, an fsync would cost every query
            try:
                rel = _append(bank, {"event": "episode-recalled", "ids": [s["id"] for s, _ in chosen]}, durable=False)
            except MembankError as e:  # the answer stands; only the count is lost, as a lost trace is
                reasons.append({"code": "RECALL_NOT_JOURNALED", "message": f"the recall was not journaled: {e.message}"})
            else:
                _index(bank, rel)
    return {"items": items, "reasons": reasons, "memoryDegraded": False, "defaultRules": []}


# -- the writer's verdict on a run ------------------------------------------------------------------


def skill_feedback(bank: Bank, run_id: str, action: str, f: Fields, evidence_ref: str | None,
                   tags: tuple[str, ...]) -> dict[str, Any]:
    """`ai:skill:feedback`: the episode, its implicit signal and the preference signal, one journal line."""
    with bank.write_lock, bank.index.lock:
        skill, document = traces.skill_of(bank, run_id)
        if action == "undo":
            return _undo(bank, run_id)
        fields = Fields(run_id=run_id, chapter_id=f.chapter_id or document, scene_type=f.scene_type,
                        skill_used=skill, action=action, selected_index=f.selected_index, candidates=f.candidates,
                        edit_distance=f.edit_distance, summary=f.summary, tags=tags)
        episode_id = new_id("e")
        make_room(bank)
        payload = episode(bank, episode_id, fields)
        preference = learning.ingest(bank, learning.Feedback(run_id, skill or "", action, evidence_ref or "", tags),
                                     extra={"episode": payload})
        found = store.get(bank.index, episode_id) or payload
    return {"episode": to_api(found), "signal": _signal_api(found), "preference": preference}


def _signal_api(state: dict[str, Any]) -> dict[str, Any]:
    name = state.get("implicitSignal")
    return {"name": name, "weight": state.get("signalWeight"), "base": WEIGHTS.get(name or "", state.get("signalWeight")),
            "repeats": state.get("signalRepeats", 0), "replaced": False}


def _undo(bank: Bank, run_id: str) -> dict[str, Any]:
    """An undo: within UNDO_WINDOW_S of the accept it replaces the accept's signal with
    UNDO_AFTER_ACCEPT and takes back the accept's preference feedback; later, it is noted only."""
    accepted = [e for e in store.of_run(bank.index, run_id)
                if e.get("action") in ("accept", "partial") and e.get("undoneAt") is None]
    if not accepted:
        raise MembankError(errors.NOT_FOUND, f"run `{run_id[:80]}` has no accepted output to undo",
                           {"runId": run_id[:200]})
    target = accepted[-1]
    now = clock.now_precise()
    replaces = undo_replaces(seconds(target["createdAt"]), seconds(now))
    changes: dict[str, Any] = {"action": "undo", "undoneAt": now}
    event: dict[str, Any] = {"event": "episode-updated", "at": now, "episodeId": target["id"], "runId": run_id,
                             "changes": changes}
    if replaces:
        changes.update(implicitSignal=UNDO_AFTER_ACCEPT, signalWeight=WEIGHTS[UNDO_AFTER_ACCEPT], signalRepeats=0,
                       importance=importance(WEIGHTS[UNDO_AFTER_ACCEPT]))
        taken = _accepted_feedback(bank, run_id, target["id"])
        if taken is not None:
            event["retracts"] = taken
    rel = _append(bank, event)
    _index(bank, rel)
    found = store.get(bank.index, target["id"]) or target
    signal = {**_signal_api(found), "replaced": replaces}
    preference = None
    if "retracts" in event:
        count, _, _ = learning_events.signal(bank.index, event["retracts"]["signalKey"],
                                             learning_events.last_event(bank.index, "preferences-cleared"))
        preference = {"ignored": False, "signalKey": event["retracts"]["signalKey"], "count": count,
                      "threshold": bank.settings_files.memory()["preferenceLearningThreshold"], "retracted": True}
    return {"episode": to_api(found), "signal": signal, "preference": preference}


def _accepted_feedback(bank: Bank, run_id: str, episode_id: str) -> dict[str, Any] | None:
    """The preference feedback the accept gave (its signal key and weight), if it counted."""
    cleared = learning_events.last_event(bank.index, "preferences-cleared")
    for e in traces.lines(bank, run_id):
        d = e.data
        if d.get("event") == "feedback" and isinstance(d.get("episode"), dict) and d["episode"].get("id") == episode_id:
            if d.get("ignored") or not isinstance(d.get("signalKey"), str):
                return None
            if cleared is not None and str(d.get("at")) <= cleared:
                return None  # counted before the preferences were cleared: there is nothing left to take back
            return {"signalKey": d["signalKey"], "weight": d.get("weight")}
    return None


def verdict(bank: Bank, run_id: str, verdict_: str, reason: str | None) -> dict[str, Any]:
    """`memory:trace:feedback`: the writer's verdict on what a run's prompt held, journaled."""
    with bank.write_lock, bank.index.lock:
        traces.lines(bank, run_id)  # NOT_FOUND for an unknown run
        privacy = _forget_text(bank)
        event: dict[str, Any] = {"event": traces.VERDICT, "runId": run_id, "verdict": verdict_}
        if reason and not privacy:
            event["reason"] = reason
        rel = _append(bank, event)
        _index(bank, rel)
        source = traces.cite(bank, rel, run_id, traces.VERDICT)
    return {"runId": run_id, "verdict": verdict_, "reason": event.get("reason"), "at": event["at"], "source": source}
