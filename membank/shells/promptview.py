"""Human views of skills and of an assembled prompt (`membank skills`, `skill`, `context`, the demo)."""

from __future__ import annotations

import functools
from typing import Any

from . import render
from .console import shown_console
from .render import err, out, styled


@functools.cache
def _boxes() -> Any:
    """Wraps long lines inside the boxes (`out` does not wrap); piped, as wide as the tables: a skill's
    80-column lines are not broken in two."""
    return shown_console(highlight=False, markup=False, emoji=False)

_RULE_ORDER = ("surrounding", "characters", "project-settings", "preferences", "memories", "episodes", "history",
               "working", "recall", "recap", "threads", "scene", "max_tokens")


def _rules(rules: dict[str, Any]) -> str:
    shown = []
    for key in _RULE_ORDER:
        value = rules.get(key)
        if value in (False, 0, None) and key != "preferences":
            continue
        shown.append(f"{key}={str(value).lower() if isinstance(value, bool) else value}")
    return " ".join(shown)


def skills_view(d: dict[str, Any]) -> None:
    if not d["items"]:
        out.print("no skills (membank init adds the built-in ones)")
        return
    columns = ("id", "name", "rules in effect", "source")
    if not out.is_terminal:  # piped: plain columns, as `membank list` prints them (rich's import and layout: ~1/6 of it)
        render.plain_columns(columns, [(s["id"], s["name"], _rules(s["rules"]) if s["valid"] else
                                        f"{len(s['problems'])} problem(s): membank doctor", s["source"])
                                       for s in d["items"]], "skills")
        return
    from rich.text import Text

    table = render.table("skills", columns)
    for s in d["items"]:
        rules = _rules(s["rules"]) if s["valid"] else Text(f"{len(s['problems'])} problem(s): membank doctor", "red")
        table.add_row(s["id"], s["name"], rules, s["source"])
    out.print(table)


def skill_view(s: dict[str, Any]) -> None:
    out.print(styled((s["name"], "bold"), f"  ({s['id']}, {s['source']})"))
    if s["description"]:
        out.print(s["description"])
    out.print(styled(("rules: ", "bold"), _rules(s["rules"])))
    for p in s["problems"]:
        err.print(f"problem [{p['field']}] line {p['line']}: {p['message']}")
    out.print()
    out.print(s["content"])


def prompt_view(d: dict[str, Any]) -> None:
    """The prompt as boxed layers with their tokens, then what was dropped or hidden and why."""
    from rich.panel import Panel
    from rich.text import Text

    diag = d["diagnostics"]
    for block in d["blocks"]:
        part = "systemPrompt" if block["layer"] <= 3 else "userContent"
        title = f"Layer {block['layer']} · {block['name']} · {block['tokens']} tokens · {part}"
        _boxes().print(Panel(Text(block["text"].rstrip("\n")), title=title, title_align="left", expand=True))
    for reason in diag["reasons"]:
        err.print(f"note [{reason['code']}]: {reason['message']}")
    for drop in diag["dropped"]:
        what = drop["source"] or drop["kind"]
        out.print(f"dropped: layer {drop['layer']} {drop['kind']} {what} ({drop['tokens']} tokens): {drop['reason']}")
    if diag["hidden"]:
        h = diag["hiddenDetail"]
        out.print(f"hidden (later in the story): {diag['hidden']} ({h['progressions']} progressions, "
                  f"{h['relations']} relations, {h['memories']} memories)")
    if diag["hardCut"]:
        out.print("hard cut (no paragraph or sentence end in the window): " + ", ".join(diag["hardCut"]))
    cacheable = "reaches" if diag["prefixCacheable"] else "is under"
    out.print(f"prefix {d['stablePrefixHash']} · {diag['prefixTokens']} tokens ({cacheable} the 1,024-token cache "
              f"minimum) · breakpoints after blocks {d['cacheBreakpoints']} · run {d['runId']} · {diag['tookMs']} ms")
