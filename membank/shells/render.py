"""Human views of channel data, shared by the CLI and the demo: tables and plain lines on the terminal."""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

from rich.console import Console
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from .cells import cells, clip, pad, visible


class Shown(Console):
    """A console that shows the writer's text and never runs it: control characters (an escape sequence
    in a card's name, a memory's body) are printed as their control pictures (`cells.visible`)."""

    def render_str(self, text: str, *args: Any, **kwargs: Any) -> Text:
        return super().render_str(visible(text), *args, **kwargs)

    def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):  # a Text made elsewhere: its text too
            yield segment if segment.control or segment.text.isprintable() else \
                Segment(visible(segment.text), segment.style, segment.control)


# markup off: sources, ids and memory text are the writer's own and may hold [brackets]; styles are given as Text
# emoji off: `:smile:` in a memory is its text, not 😄
out = Shown(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Shown(stderr=True, highlight=False, markup=False, emoji=False)

PIPED_WIDTH = 120  # without a terminal (piped, redirected, CI) rich would lay tables out in 80 columns


def piped_width(console: Console) -> None:
    """A console writing to no terminal gets PIPED_WIDTH columns, unless $COLUMNS says otherwise."""
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console.width = PIPED_WIDTH


for _console in (out, err):
    piped_width(_console)


def table(title: str, columns: tuple[str, ...]) -> Table:
    """A table with these columns, long values folded rather than cut."""
    made = Table(title=title)
    for col in columns:
        made.add_column(col, overflow="fold")
    return made


TABLE_ROWS = 100  # above this many rows (or when piped) a list is printed as plain columns: a rich
# table of 2,000 rows takes over a second to lay out, plain columns a few milliseconds


def memory_table(items: list[dict[str, Any]], title: str | None = None) -> None:
    if not items:
        out.print("no memories")
        return
    rows = []
    for m in items:
        content = m["content"].replace("\n", " ")
        flags = " (deleted)" if m.get("deletedAt") else ""
        rows.append((m["id"], m["type"], m["scope"], (m["updatedAt"] or "")[:10], clip(content, 70) + flags,
                     m["source"]))
    columns = ("id", "type", "scope", "updated", "content", "source")
    if len(rows) > TABLE_ROWS or not out.is_terminal:
        plain_columns(columns, rows, title)
        return
    table = Table(title=title, show_lines=False)
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*row)
    out.print(table)


def plain_columns(columns: tuple[str, ...], rows: list[tuple[str, ...]], title: str | None = None) -> None:
    """Rows as left-aligned columns two spaces apart (the last one unpadded), written straight out; widths
    in terminal cells, so a column of Chinese lines up."""
    rows = [tuple(map(visible, r)) for r in rows]  # shown, never run by the terminal; then measured
    widths = [max(cells(c), *(cells(r[i]) for r in rows)) for i, c in enumerate(columns[:-1])]
    lines = [visible(title)] if title else []
    for row in (columns, *rows):
        lines.append("  ".join(pad(v, w) for v, w in zip(row, widths)) + "  " + row[-1])
    out.file.write("\n".join(lines) + "\n")
    out.file.flush()


def plain_lines(lines: list[str]) -> None:
    """Lines written straight out (no rich layout: fast for thousands), shown and never run by the terminal."""
    out.file.write(visible("\n".join(lines)) + "\n")
    out.file.flush()


def diagnostic_lines(items: list[dict[str, Any]]) -> None:
    """One line per problem, its severity coloured on a terminal; plain above TABLE_ROWS or when piped
    (rich lays out each line on its own: 1,800 of them took ~0.1 s of `membank doctor`)."""
    if len(items) > TABLE_ROWS or not out.is_terminal:
        out.file.write("".join(f"{d['severity']} {visible(d['source'])}:{d['line']}: {visible(d['message'])}\n"
                               for d in items))
        out.file.flush()
        return
    for d in items:
        style = "red" if d["severity"] == "error" else "yellow"
        out.print(Text.assemble((d["severity"], style), f" {d['source']}:{d['line']}: {d['message']}"))


def shown(value: Any) -> str:
    """A value as YAML writes it on one line: `true`, `null`, `[讽刺, pacing]`, `{mood: wistful}`; text as it
    is (never a Python repr such as `['讽刺']` or `False`)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    import yaml

    try:
        return yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, sort_keys=False,
                              width=1 << 30).strip()
    except yaml.YAMLError:
        return json.dumps(value, ensure_ascii=False, default=str)


def memory_view(m: dict[str, Any]) -> None:
    for key in ("id", "type", "scope", "documentId", "origin", "confidence", "tags", "pinned", "revision",
                "createdAt", "updatedAt", "deletedAt", "source"):
        if m.get(key) not in (None, [], ""):
            out.print(Text.assemble((key, "bold"), f": {shown(m[key])}"))
    if m.get("metadata"):
        out.print(Text.assemble(("metadata", "bold"), f": {shown(m['metadata'])}"))
    out.print()
    out.print(m["content"])


def preview_view(d: dict[str, Any]) -> None:
    diag = d["diagnostics"]
    for reason in diag["reasons"]:
        err.print(f"note [{reason['code']}]: {reason['message']}")
    _preview_cards(d.get("cards") or [])
    if not d["items"]:
        out.print("nothing to inject")
    columns = ("#", "id", "type", "scope", "tokens", "why", "content")
    rows = []
    for item in d["items"]:
        r = item["reason"]
        why = r.get("detail", "")
        if "score" in r:
            sc = r["score"]
            why = " ".join(filter(None, (
                f"vector #{sc['vectorRank']} {sc['vector']:.2f}" if sc["vectorRank"] else "",
                f"words #{sc['lexicalRank']}" if sc["lexicalRank"] else "",
                f"= {sc['fused']:.4f}")))
        content = item["content"].replace("\n", " ")
        rows.append((str(r["rank"]), item["id"], item["type"], item["scope"], str(item["tokens"]), why,
                     clip(content, 80)))
    if rows:
        _columns_or_table(columns, rows, f"injection preview ({d['mode']})")
    _preview_passages(d.get("passages") or [])
    out.print(f"{len(d['items'])} items, {diag['tokens']} tokens, {diag['truncated']} left out, {diag['tookMs']} ms")


def _preview_passages(passages: list[dict[str, Any]]) -> None:
    """The manuscript passages before the document that a query finds (listed, not injected)."""
    if passages:
        _columns_or_table(("#", "source", "scene", "score", "text"),
                          [(str(n), f"{p['source']}:{p['line']}", clip(p["scene"], 30), f"{p['score']:.4f}",
                            clip(p["text"].replace("\n", " "), 70)) for n, p in enumerate(passages, start=1)],
                          "manuscript passages found, before the document")


def _preview_cards(cards: list[dict[str, Any]]) -> None:
    """The characters and world entries a query finds, before the memories (listed, not injected)."""
    if not cards:
        return
    columns = ("#", "kind", "name", "source", "why", "summary")
    rows = []
    for card in cards:
        sc = card["reason"]["score"]
        why = " ".join(filter(None, (f"vector #{sc['vectorRank']} {sc['vector']:.2f}" if sc["vectorRank"] else "",
                                     f"words #{sc['lexicalRank']}" if sc["lexicalRank"] else "",
                                     f"= {sc['fused']:.4f}")))
        where = f"{card['source']}:{card['line']}" if card.get("line") else card["source"]
        rows.append((str(card["reason"]["rank"]), card["kind"], card["name"], where, why,
                     clip(card["summary"].replace("\n", " "), 60)))
    _columns_or_table(columns, rows, "cards and world entries found (activated in a prompt by their words, or by "
                      "meaning when they ask)")


def _columns_or_table(columns: tuple[str, ...], rows: list[tuple[str, ...]], title: str) -> None:
    """Plain columns when piped or long (a table of many rows folds into unreadable cells), else a table."""
    if len(rows) > TABLE_ROWS or not out.is_terminal:
        plain_columns(columns, rows, title)
        return
    made = table(title, columns)
    for row in rows:
        made.add_row(*row)
    out.print(made)


def settings_view(d: dict[str, Any]) -> None:
    for key, value in d.items():  # the memory section's keys are bare; others come dotted (embedding.model)
        out.print(f"{key if '.' in key else 'memory.' + key} = {json.dumps(value)}")
