"""Human views of channel data, shared by the CLI and the demo: tables and plain lines on the terminal."""

from __future__ import annotations

import json
from typing import Any

from .cells import cells, clip, visible
from .console import err, out, styled  # noqa: F401  # the consoles (console.py), imported from here by the commands


def table(title: str, columns: tuple[str, ...]) -> Any:
    """A rich Table with these columns, long values folded rather than cut."""
    from rich.table import Table

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
    from rich.table import Table

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
    measured = [(row, tuple(map(cells, row[:-1]))) for row in (columns, *rows)]  # once a value, not twice
    widths = [max(m[i] for _, m in measured) for i in range(len(columns) - 1)]
    lines = [visible(title)] if title else []
    for row, sizes in measured:
        lines.append("".join(v + " " * (w - n + 2) for v, n, w in zip(row, sizes, widths)) + row[-1])
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
        out.print(styled((d["severity"], style), f" {d['source']}:{d['line']}: {d['message']}"))


def position_warnings(d: dict[str, Any]) -> None:
    """An answer's `warnings` about its position (`--at`/`--before` naming a scene its chapter lacks)."""
    for warning in d.get("warnings") or ():
        out.print(styled(("  warning ", "yellow"), warning))


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
            out.print(styled((key, "bold"), f": {shown(m[key])}"))
    if m.get("metadata"):
        out.print(styled(("metadata", "bold"), f": {shown(m['metadata'])}"))
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
