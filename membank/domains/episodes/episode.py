"""An episode (episodes.md): one skill run and what the writer did with it. Pure: its journal events
folded into its state, its API shape, the text it is embedded as, and its line in a prompt.

Journal events (each with `at`):
- `episode` (or a `feedback` event of `ai:skill:feedback`) carrying `episode: {id, runId, …}`: born;
- `episode-updated` {episodeId, changes}: a later verdict (an undo), a pin, compression;
- `episode-recalled` {ids}, and every `run` whose pieces list it: recalled once more;
- `episode-evicted` {episodeId}: gone from the stores (never erased from the journal).
The journal is written by membank but may be edited by hand, so every value read back is checked."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .decay import seconds

BORN, UPDATED, RECALLED, EVICTED = "episode", "episode-updated", "episode-recalled", "episode-evicted"
# the fields an `episode` event carries, with their kind (`text`, `number`, `int`, `bool`, `tags`)
FIELDS = {"id": "text", "projectId": "text", "runId": "text", "chapterId": "text", "sceneType": "text",
          "skillUsed": "text", "action": "text", "selectedIndex": "int", "candidates": "int",
          "editDistance": "unit", "implicitSignal": "text", "signalWeight": "number", "signalRepeats": "int",
          "importance": "unit", "pinned": "bool", "summary": "text", "tags": "tags"}
CHANGEABLE = ("implicitSignal", "signalWeight", "signalRepeats", "importance", "pinned", "compressed", "undoneAt",
              "action")


@dataclass(frozen=True)
class Step:
    """One event about one episode, as the index keeps it: `kind` BORN, UPDATED, RECALLED or EVICTED."""
    kind: str
    at: str
    data: dict[str, Any]
    cite: str  # `.writenow/journal/2026-11.jsonl#L120`


def clean(kind: str, value: Any) -> Any:
    """A value read back from the journal, or None when it is not of its kind."""
    if value is None:
        return None
    if kind == "text":
        return value if isinstance(value, str) and len(value) <= 4000 else None
    if kind == "bool":
        return value if isinstance(value, bool) else None
    if kind == "tags":
        return [t for t in value if isinstance(t, str)][:100] if isinstance(value, list) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    if kind == "int":
        return int(value) if float(value).is_integer() and abs(value) < 2 ** 31 else None
    if kind == "unit":
        return float(value) if 0 <= value <= 1 else None
    return float(value) if abs(value) <= 100 else None


def _time(at: str) -> bool:
    try:
        seconds(at)
    except ValueError:
        return False
    return True


def born(data: dict[str, Any], at: str, cite: str) -> dict[str, Any] | None:
    """An episode's first state from its `episode` payload; None without a usable id."""
    fields = {name: clean(kind, data.get(name)) for name, kind in FIELDS.items()}
    if not fields["id"]:
        return None
    fields["tags"] = fields["tags"] or []
    fields["pinned"] = bool(fields["pinned"])
    fields["signalWeight"] = fields["signalWeight"] if fields["signalWeight"] is not None else 0.0
    fields["signalRepeats"] = fields["signalRepeats"] or 0
    fields["importance"] = fields["importance"] if fields["importance"] is not None else 0.5
    fields.update({"recallCount": 0, "lastRecalledAt": None, "compressed": False, "undoneAt": None,
                   "evictedAt": None, "createdAt": at, "source": cite})
    return fields


def fold(steps: list[Step]) -> dict[str, Any] | None:
    """An episode's state after its events, oldest first; None if it was never born (an update
    without its episode, say after a hand edit)."""
    state: dict[str, Any] | None = None
    for step in steps:
        if step.kind == BORN:
            state = state or born(step.data, step.at, step.cite)  # a second birth (a retried write) changes nothing
        elif state is None:
            continue
        elif step.kind == UPDATED:
            for name in CHANGEABLE:
                if name in step.data:
                    kind = FIELDS.get(name, "bool" if name in ("compressed", "pinned") else "text")
                    value = clean(kind, step.data[name])
                    if value is not None or name == "undoneAt":
                        state[name] = value
        elif step.kind == RECALLED:
            state["recallCount"] += 1
            state["lastRecalledAt"] = step.at
        elif step.kind == EVICTED:
            state["evictedAt"] = step.at
    return state


def steps_of(event: dict[str, Any], cite: str) -> list[tuple[str, Step]]:
    """(episode id, step) for every episode one journal event speaks of."""
    name, at = event.get("event"), event.get("at")
    if not isinstance(at, str) or not _time(at):
        return []
    if name in (BORN, "feedback") and isinstance(event.get("episode"), dict):
        found = event["episode"].get("id")
        return [(found, Step(BORN, at, event["episode"], cite))] if isinstance(found, str) and found else []
    if name in (UPDATED, EVICTED):  # one episode (`episodeId`), or many at once (`ids`: the lifecycle's)
        changes = event.get("changes") if isinstance(event.get("changes"), dict) else {}
        ids = [event["episodeId"]] if isinstance(event.get("episodeId"), str) else \
            [i for i in event.get("ids") or () if isinstance(i, str)] if isinstance(event.get("ids"), list) else []
        kind = UPDATED if name == UPDATED else EVICTED
        return [(i, Step(kind, at, changes, cite)) for i in dict.fromkeys(ids)]
    if name == RECALLED and isinstance(event.get("ids"), list):
        ids = dict.fromkeys(i for i in event["ids"] if isinstance(i, str))
        return [(i, Step(RECALLED, at, {}, cite)) for i in ids]
    if name == "run" and isinstance(event.get("pieces"), list):  # an assembled prompt that held episodes
        ids = dict.fromkeys(p.get("id") for p in event["pieces"]
                            if isinstance(p, dict) and p.get("kind") == "episode" and isinstance(p.get("id"), str))
        return [(i, Step(RECALLED, at, {}, cite)) for i in ids]
    return []


def embed_text(state: dict[str, Any]) -> str:
    """What an episode is embedded as: the app's summary of the run and its tags (never manuscript
    text: the app's `summary` is left out of the journal in privacy mode)."""
    return "\n".join(filter(None, (state.get("summary") or "", " ".join(state.get("tags") or ()))))


def to_api(state: dict[str, Any]) -> dict[str, Any]:
    """The episode as channels return it."""
    return {k: state.get(k) for k in (
        "id", "projectId", "runId", "chapterId", "sceneType", "skillUsed", "action", "selectedIndex", "candidates",
        "editDistance", "implicitSignal", "signalWeight", "importance", "recallCount", "lastRecalledAt", "compressed",
        "pinned", "createdAt", "undoneAt", "summary", "tags", "source", "decay", "level")}


def prompt_line(state: dict[str, Any]) -> str:
    """An episode in Layer 4: what was done, how the writer took it, and where the full record is."""
    what = " · ".join(filter(None, (state.get("sceneType"), state.get("skillUsed"),
                                    f"{state.get('implicitSignal') or 'no signal'} ({state['signalWeight']:+.2f})",
                                    state.get("summary"))))
    return f"- {what}\n  ({state['source']})"
