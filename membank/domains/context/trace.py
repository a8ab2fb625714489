"""The run's trace (episodes.md): one journal line per assembled prompt, under journal/traces/."""

from __future__ import annotations

from typing import Any

from ...files import journal
from ...kernel.errors import MembankError
from ..contract import Bank

PASSAGE_KINDS = ("instruction", "before", "selection", "after")  # never in the trace: manuscript text
ENTRIES_KEPT = 4096
_entries: dict[tuple[Any, ...], str] = {}


def entry(item: dict[str, Any]) -> str:
    """An item's entry in the run's trace line, encoded (`journal.encode`) once per process for the same
    fields: a session's prompts list the same identity, skill, preferences and cards again and again. A
    score is keyed by its repr: 1 and 1.0, or 0.0 and -0.0, are equal keys but not the same JSON."""
    score = item.get("score")
    key = (item["layer"], item["kind"], item["id"], item["source"], item["tokens"],
           None if score is None else repr(score), type(score), type(item["tokens"]), type(item["layer"]))
    made = _entries.get(key)
    if made is None:
        made = journal.encode({"layer": item["layer"], "kind": item["kind"], "id": item["id"],
                               "source": item["source"], "tokens": item["tokens"], "score": score})
        if len(_entries) >= ENTRIES_KEPT:
            _entries.clear()
        _entries[key] = made
    return made


def journal_run(bank: Bank, data: dict[str, Any], document: str | None) -> None:
    """The generation trace (episodes.md): ids, sources, tokens, scores and the prefix hash; never
    manuscript text. Not fsynced: a trace lost to a crash costs one run's history, while an fsync per
    prompt would cost every prompt (feedback and memories are still fsynced)."""
    event = {"event": "run", "runId": data["runId"], "skillId": data["skillId"], "documentId": document,
             "stablePrefixHash": data["stablePrefixHash"]}
    try:
        pieces = "[" + ", ".join([entry(i) for i in data["items"] if i["kind"] not in PASSAGE_KINDS]) + "]"
        journal.append(bank.project.path, event, durable=False, folder=journal.TRACES,  # not tracked by git
                       raw={"pieces": pieces})
    except (OSError, MembankError) as e:
        data["diagnostics"]["reasons"].append({"code": "TRACE_NOT_WRITTEN", "message": "the run could not be "
                                               f"journaled ({getattr(e, 'message', e.__class__.__name__)})"})
