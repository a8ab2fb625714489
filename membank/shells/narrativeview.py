"""Human views of the story's narrative state: `membank threads` (the threads at a position, each with
its source:line), `membank scene` (who is here, where and when) `membank reader` (what the reader knows)
and the near-duplicates `membank duplicates` and `doctor` suggest merging."""

from __future__ import annotations

from typing import Any


from .render import out, position_warnings as _warnings, styled

_STYLE = {"open": "yellow bold", "resolved": "green", "dropped": "dim"}


def threads_view(d: dict[str, Any]) -> None:
    where = f" at {d['at']}" if d.get("at") else " (the whole story)"
    out.print(styled(("threads", "bold"), where, f": {d['total']:,}"))
    for t in d["items"]:
        closed = t.get("resolved") or t.get("dropped")
        span = f"{t['opened']} → {closed}" if closed else f"since {t['opened']}"
        out.print(styled((f"  {t['status']:<9}", _STYLE.get(t["status"], "")), (t["title"], "bold"),
                                f"  {span}  {t['source']}:{t['line']}"))
        if t["note"]:
            out.print(f"             {t['note'].splitlines()[0]}")
    for p in d.get("problems") or []:
        out.print(styled(("  not a thread ", "red"), f"{p['source']}:{p['line']}  {p['message']}"))
    _warnings(d)


def scene_view(d: dict[str, Any]) -> None:
    out.print(styled(("scene ", "bold"), d["at"], f"  {d['line'] or '(nothing recorded)'}"))
    for key, v in d["state"].items():
        value = ", ".join(map(str, v["value"])) if isinstance(v["value"], list) else v["value"]
        out.print(f"  {key:<9} {value}  ({v['at']}, {v['source']}:{v['line']})")
    for p in d.get("problems") or []:
        out.print(styled(("  not read ", "red"), f"{p['source']}:{p['line']}  {p['message']}"))
    _warnings(d)


def reader_view(d: dict[str, Any]) -> None:
    out.print(styled(("the reader knows", "bold"), f" at {d['at']}: {d['total']:,} fact(s)"))
    _warnings(d)
    for f in d["items"]:
        since = f"revealed {f['revealed']}" if f["revealed"] else "from the start"
        out.print(styled(f"  {f['content'].splitlines()[0] if f['content'] else f['id']}",
                                (f"  ({since}, {f['source']})", "dim")))


def duplicates_view(d: dict[str, Any]) -> None:
    if not d["items"]:
        out.print("no near-duplicates")
        return
    for item in d["items"]:
        out.print(styled(("  merge? ", "yellow bold"), item["message"]))
        for s in item["sources"]:
            out.print(f"    {s['source']}:{s['line']}")
    out.print(f"{d['total']} near-duplicate(s)")
