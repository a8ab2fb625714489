"""`index:status` and `index:diagnostics`: what the index holds and every problem found in the files."""

from __future__ import annotations

from typing import Any

from ...files import gitfiles
from ...files.records import ERROR, Diagnostic
from ...kernel import callmemo
from ..contract import Bank
from . import journals
from ..capture.problems import problems as capture_problems
from ..episodes import store as episode_store
from ..lifecycle import history, runs as lifecycle_runs
from ..recall.readiness import semantic_problem
from ..story.narrativeproblems import problems as narrative_problems
from ..story.problems import diagnostics as story_problems


def _found(bank: Bank) -> list[Diagnostic]:
    with bank.index.lock:
        found = list(bank.index.diagnostics())
    found.extend(bank.settings_files.diagnostics())
    found.extend(story_problems(bank))  # relations naming no card, positions outside `chapters:`
    with bank.index.lock:
        found.extend(journals.duplicates(bank.index))  # copies of journal events, each counted once
    found.extend(gitfiles.check(bank.project.path, bank.project.source))  # lines the git files lack
    found.extend(narrative_problems(bank))  # facet values against their schema, thread and scene files
    found.extend(capture_problems(bank))  # applied capture values whose quote is gone from the chapter
    found.extend(history.conflicts(bank.project.file(history.FOLDER), bank.project.source,
                                   bank.memo.setdefault("history.conflicts", {})))  # a merge's markers
    return found


def diagnostics(bank: Bank) -> dict[str, Any]:
    with callmemo.remembering():  # the settings files and the index's data version looked at once
        found = _found(bank)
    found.sort(key=lambda d: (d.source, d.line, d.message))
    return {"items": [d.to_dict() for d in found]}


def status(bank: Bank) -> dict[str, Any]:
    """What the index holds and how it stands. One call scope (kernel/callmemo.py): the settings files
    are looked at once, and whether another connection committed once, not by every part that asks."""
    with callmemo.remembering():
        return _status(bank)


def _status(bank: Bank) -> dict[str, Any]:
    severities = [d.severity for d in _found(bank)]  # counted, not listed: at 2,000 cards ~1,800 of them
    errors = severities.count(ERROR)
    info = bank.model_info()  # from the model's files: a status never waits for the model to load
    model = info if not isinstance(info, str) else None
    problem = semantic_problem(bank, info)
    with bank.index.lock:
        recorded, counts, last_sync, stored = _read(bank)
        life = lifecycle_runs.report(bank.index)
    return {
        "projectId": bank.info.id,
        "name": bank.info.name,
        "counts": counts,
        "lastSync": last_sync,
        "model": {
            "name": model.name if model else None,
            "dim": model.dim if model else None,
            "vocabulary": model.vocabulary if model else None,
            "indexModel": recorded[0] if recorded else None,
            "indexDim": recorded[1] if recorded else None,
            "semantic": problem is None,
            "problem": problem.to_api() if problem else None,
        },
        "diagnostics": {
            "errors": errors,
            "warnings": len(severities) - errors,
        },
        "episodes": {**stored, "pending": bank.background.pending,
                     "failed": int(bank.memo.get(episode_store.FAILED, 0))},
        "lifecycle": life,
        "watch": bank.watcher.status() if bank.watcher is not None else None,
        "strong": strong_status(bank),
    }


def _read(bank: Bank) -> tuple[Any, dict[str, int], str | None, dict[str, int]]:
    """What the index says (its vector model, counts, last sync, episode counts): read again only when
    this connection's view of the index moved (a status after no change reads nothing)."""
    memo = bank.index.view_memo("index.status")
    found = memo.get("read") if memo is not None else None
    if found is None:
        index = bank.index
        found = (index.vector_model(), index.counts(), index.get_meta("last_sync"), episode_store.counts(index))
        if memo is not None:
            memo["read"] = found
    recorded, counts, last_sync, stored = found
    return recorded, dict(counts), last_sync, dict(stored)


def strong_status(bank: Bank) -> dict[str, Any]:
    """The strong tier (recall.md, Tiers): on or why not, its model, and how many entries have their
    vector of that model. Asking never loads the model: its files say what it is (`StrongHandle.describe`)."""
    from ...index import strongload
    from . import strongfill

    on = strongload.switched_on(bank.settings_files.embedding())
    described = strongload.handle(bank.memo).describe() if on else None
    model = described if isinstance(described, tuple) else None
    with bank.index.lock:
        recorded = bank.index.strong_model()
        done, total = bank.index.strong_counts()
    if model is not None and recorded != model:
        done = 0  # another model's vectors (or none yet): every entry is embedded again
    if not on:
        state, problem = "off", "turned off in settings (embedding.strong: off)"
    elif model is None:
        state, problem = "unavailable", str(described or "the strong model cannot run here")
    else:  # a batch that failed (a bug, a broken model) is said here, and tried again at the next save
        failed = bank.memo.get(strongfill.MEMO)
        state, problem = ("ready" if done == total else "filling"), getattr(failed, "failure", None)
    return {"setting": "auto" if on else "off", "state": state, "problem": problem,
            "model": model[0] if model is not None else None,
            "indexModel": recorded[0] if recorded else None, "done": done, "total": total}
