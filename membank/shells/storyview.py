"""Human views of the story graph: `membank story` (a table of entities, or one entity's timeline),
`relations`, `state`, `mentions` and `check` (flags with their evidence)."""

from __future__ import annotations

from typing import Any


from . import render
from .render import out, styled


def _cite(v: dict[str, Any] | None) -> str:
    return f"{v['source']}:{v['line']}" if v else ""


def _facets(facets: dict[str, Any]) -> str:
    return ", ".join(f"{k}: {render.shown(v['value'] if isinstance(v, dict) and 'value' in v else v)}"
                     for k, v in facets.items())


def _edge(e: dict[str, Any]) -> str:
    arrow = "→" if e["direction"] == "out" else "←"
    span = "".join(part for part in (f" from {e['since']}" if e["since"] else "",
                                     f" until {e['until']}" if e["until"] else ""))
    return f"{e['type']} {arrow} {e['name']}{'' if e['to'] else ' (no such card)'}{span}"


def entities_view(d: dict[str, Any]) -> None:
    render.position_warnings(d)
    if not d["items"]:
        out.print("no characters or world entries")
        return
    table = render.table("characters and world", ("name", "kind", "state", "facets", "source:line"))
    for e in d["items"]:
        table.add_row(e["name"], e["kind"], e["state"]["value"] if e["state"] else "", _facets(e["facets"]),
                      _cite(e["state"]) or f"{e['source']}:{e['line']}")
    out.print(table)


def entity_view(e: dict[str, Any]) -> None:
    """One entity: a timeline of every position where something about it happens (or its state at
    one position, with --at)."""
    render.position_warnings(e)
    out.print(styled((e["name"], "bold"), f"  ({e['kind']}, {e['id']}, {e['source']})"))
    if e["summary"]:
        out.print(e["summary"])
    if e["introduced"]:
        out.print(f"introduced: {e['introduced']['value']} ({_cite(e['introduced'])})")
    timeless = [r for r in e["relations"] if not r["since"]]
    if not e["timeline"] and not timeless:
        out.print(f"no timeline yet: add progressions or run a capture (one by hand: membank progress "
                  f"\"{e['name']}\" --at CHAPTER --state …)")
        _now(e)
        return
    table = render.table("timeline", ("position", "state", "facets", "relations", "source:line"))
    steps: dict[str, list[dict[str, Any]]] = {}
    for p in e["progressions"]:
        steps.setdefault(p["at"], []).append(p)
    if timeless:
        table.add_row("(throughout)", "", "", "\n".join(_edge(r) for r in timeless),
                      "\n".join(_cite(r) for r in timeless))
    held: dict[str, Any] = {}  # each facet's value so far: a change shows as `old → new`
    for position in e["timeline"]:
        rels = [r for r in e["relations"] if r["since"] == position or r["until"] == position]
        here = steps.get(position, [])
        state = "; ".join(p["state"] for p in here if p["state"])
        changes = []
        for p in here:
            for k, v in p["set"].items():
                before = f"{render.shown(held[k])} → " if k in held and held[k] != v else ""
                changes.append(f"{k}: {before}{render.shown(v)}")
                held[k] = v
        facets = ", ".join(changes)
        cites = [_cite(p) for p in here] + [_cite(r) for r in rels]
        table.add_row(position, state, facets, "\n".join(_edge(r) for r in rels), "\n".join(dict.fromkeys(cites)))
    out.print(table)
    _now(e)


def _now(e: dict[str, Any]) -> None:
    if e["state"] or e["facets"]:
        out.print(styled(("now: ", "bold"), e["state"]["value"] if e["state"] else "",
                                f"  {_facets(e['facets'])}" if e["facets"] else ""))
    if e["hidden"]:
        out.print(f"{e['hidden']} later progression(s) or relation(s) not shown")


def edges_view(d: dict[str, Any]) -> None:
    render.position_warnings(d)
    if not d["edges"]:
        out.print("no relations hold there")
        return
    table = render.table("relations", ("depth", "from", "relation", "source:line"))
    for e in d["edges"]:
        table.add_row(str(e["depth"]), e["from"], _edge(e), _cite(e))
    out.print(table)


def state_view(d: dict[str, Any]) -> None:
    render.position_warnings(d)
    out.print(styled(("state: ", "bold"), d["state"] or "(none)",
                            f"  (since {d['since']}, {d['source']}:{d['line']})" if d["state"] else ""))
    for key, v in d["facets"].items():
        out.print(f"{key}: {render.shown(v['value'])}  ({v['source']}:{v['line']}, since {v['at']})")


def mentions_view(d: dict[str, Any]) -> None:
    if not d["items"]:
        out.print("no character or world entry is named")
        return
    for m in d["items"]:
        out.print(f"{m['offset']:>7}  {m['match']}  → {m['name']} ({m['id']})")
    if d.get("total", 0) > len(d["items"]):
        out.print(f"… and {d['total'] - len(d['items']):,} more mentions (send a shorter text to see them)")
    _skipped(d)


def _skipped(d: dict[str, Any]) -> None:
    """The regex keys a scan could not run (story.md): the first few, and how many in all."""
    skipped = d.get("skipped") or []
    for s in skipped[:5]:
        out.print(styled(("skipped ", "yellow"), s["message"]))
    if d.get("skippedTotal", 0) > min(len(skipped), 5):
        out.print(f"… {d['skippedTotal']:,} regular-expression keys skipped in all (`--json` lists the first 200)")


def check_view(d: dict[str, Any]) -> None:
    where = d["documentId"] + ("" if d["positionKnown"] else " (not a story position: timeless values only)")
    out.print(styled(("check ", "bold"), where, f": {d.get('entitiesTotal', len(d['entities'])):,} entities, "
                            f"{d.get('factsTotal', len(d['facts'])):,} facts, {d.get('flagsTotal', len(d['flags'])):,} "
                            "flag(s)"))
    for f in d["flags"]:
        out.print(styled((f["code"], "red bold"), f"  {f['message']}"))
        for ev in f["evidence"]:
            out.print(f"    {ev['source']}:{ev['line']}")
    for e in d["entities"]:
        out.print(styled(("  " + e["name"], "bold"), f"  ×{e.get('mentionsTotal', len(e['mentions']))}  ",
                                e["state"]["value"] if e["state"] else "", f"  {_facets(e['facets'])}"))
    if d.get("entitiesTotal", 0) > len(d["entities"]):
        out.print(f"  … and {d['entitiesTotal'] - len(d['entities']):,} more entities (the first 200 by first mention "
                  "are listed)")
    _skipped(d)
