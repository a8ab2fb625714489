"""Human views of runs and episodes: `membank trace RUN` (what a prompt held and what the writer said),
`membank episodes` (the most alike past runs), and the outcome of feedback."""

from __future__ import annotations

from typing import Any


from . import render
from .render import out, styled


def _cell(value: Any) -> str:
    """A value as a table cell: nothing for null, two places for a score."""
    return "" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)


def trace_view(d: dict[str, Any]) -> None:
    out.print(styled(("run ", "bold"), d["runId"], f" · skill {_cell(d['skillId'])} · {_cell(d['at'])}"))
    out.print(f"document: {d['documentId'] or '(none)'} · prefix {d['stablePrefixHash'] or ''} · {d['source']}")
    table = render.table("what the prompt held", ("layer", "kind", "id", "source", "tokens", "score"))
    for p in d["pieces"]:
        table.add_row(*(_cell(p[k]) for k in ("layer", "kind", "id", "source", "tokens", "score")))
    out.print(table)
    if not d["feedback"]:
        out.print("no feedback on this run yet")
        return
    table = render.table("feedback", ("at", "kind", "what", "signal", "line"))
    for f in d["feedback"]:
        what = f.get("verdict") or f.get("action") or ""
        if f.get("reason"):
            what += f": {f['reason']}"
        signal = f"{f['signal']} ({f['weight']:+.2f})" if f.get("signal") and f.get("weight") is not None else ""
        table.add_row(_cell(f["at"]), f["kind"], what, signal, f["source"])
    out.print(table)


def verdict_view(d: dict[str, Any]) -> None:
    out.print(f"run {d['runId']}: {d['verdict']}{' (' + d['reason'] + ')' if d['reason'] else ''} · {d['source']}")


def episode_line(e: dict[str, Any]) -> str:
    return " · ".join(filter(None, (e["sceneType"], e["skillUsed"], f"{e['implicitSignal']} ({e['signalWeight']:+.2f})",
                                    e.get("summary"))))


def feedback_view(d: dict[str, Any]) -> None:
    e, s, p = d["episode"], d["signal"], d["preference"]
    out.print(styled(("episode ", "bold"), e["id"], f": {episode_line(e)} · {e['source']}"))
    replaced = " (replaced the accept's signal)" if s["replaced"] else ""
    out.print(f"signal: {s['name']} {s['weight']:+.2f}{replaced}" + (f", {s['repeats']} repeat(s)" if s["repeats"] else ""))
    if p is None:
        out.print("preference: nothing to learn from this")
    elif p.get("ignored"):
        out.print(f"preference: ignored ({p.get('reason')})")
    else:
        learned = f" → learned {p['learned']['source']}" if p.get("learned") else ""
        out.print(f"preference: {p['signalKey']} {p['count']:g} of {p['threshold']}{learned}")


def recorded_view(d: dict[str, Any]) -> None:
    if "episode" in d:
        out.print(f"episode {d['id']} written: {episode_line(d['episode'])} · {d['episode']['source']}")
    else:
        out.print(f"episode {d['id']} accepted")


def episodes_view(d: dict[str, Any]) -> None:
    for r in d["reasons"]:
        out.print(f"[{r['code']}] {r['message']}")
    if not d["items"]:
        out.print("no episodes yet")
        return
    table = render.table("episodes most like this run", ("#", "episode", "what", "score", "why", "line"))
    for e in d["items"]:
        table.add_row(str(e["reason"]["rank"]), e["id"], episode_line(e), f"{e['reason']['score']:.2f}",
                      e["reason"]["detail"], e["source"])
    out.print(table)


def lifecycle_view(d: dict[str, Any]) -> None:
    done = ", ".join(f"{k} {v}" for k, v in d.items() if k not in ("trigger", "at", "changed", "tookMs", "levels",
                                                                   "history", "kept", "warnings") and v)
    out.print(f"{d['trigger']} at {d['at']}: {done or 'nothing to do'}" + ("" if d["changed"] else " (nothing changed)"))
    for source in d.get("history") or []:
        out.print(f"  wrote {source}")
    for source in d.get("kept") or []:
        out.print(f"  kept {source} as it is (edited by hand, or it would lose runs; delete it to have it written again)")
    for warning in d.get("warnings") or []:
        out.print(f"  warning: {warning}")
    if d.get("levels"):
        out.print("  episodes by level: " + ", ".join(f"{k} {v}" for k, v in d["levels"].items()))
