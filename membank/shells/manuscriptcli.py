"""The manuscript commands: `membank search QUERY [--before POSITION]` and `membank manuscript`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .cells import cells, clip, pad
from .clikit import JsonOpt, ProjectOpt, call, command
from .render import out, plain_columns, plain_lines, position_warnings

EXCERPT = 80  # terminal cells of a passage or summary shown on its line


def _excerpt(text: str) -> str:
    return clip(" ".join(text.split()), EXCERPT)


def passages_view(d: dict[str, Any]) -> None:
    position_warnings(d)
    if not d["items"]:
        out.print("no passages")
        return
    lines = []
    for item in d["items"]:
        lines.append(f"{item['source']}:{item['line']}  [{item['scene']}]  {_excerpt(item['text'])}")
    plain_lines(lines)


def status_view(d: dict[str, Any]) -> None:
    if not d["items"]:
        out.print("no manuscript documents (chapters: in project.yaml, else *.md / *.txt outside .writenow/)")
        return
    rows = [(item["source"], str(item["passages"]), str(len(item["scenes"])), str(item["codePoints"]),
             str(len(item["characters"])), item["summary"], item["problem"] or "") for item in d["items"]]
    plain_columns(("document", "passages", "scenes", "code points", "characters", "summary", "problem"), rows)
    out.print(f"{d['passages']} passages, {d['embedded']} with a vector")


@command("manuscript:search")
def search(query: str = typer.Argument(..., metavar="QUERY", help="What to look for."),
           before: Optional[str] = typer.Option(None, "--before", help="Only passages before this story position, "
                                                "e.g. chapters/ch05.md#雨夜."),
           document: Optional[str] = typer.Option(None, "--document", help="Only this document's passages."),
           limit: int = typer.Option(10, "--limit", min=1, max=50),
           project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    payload: dict[str, Any] = {"queryText": query, "limit": limit}
    if before is not None:
        payload["before"] = before
    if document is not None:
        payload["documentId"] = document
    call(project, "manuscript:search", payload, as_json, passages_view)


@command("manuscript:status")
def manuscript(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "manuscript:status", {}, as_json, status_view)


BAR = 30  # cells of the longest bar


def heat_view(d: dict[str, Any]) -> None:
    """One line per chapter: a bar of its mentions (a heat strip), the count, and first/last line seen."""
    if not d["items"]:
        out.print(f"{d['name']} is not mentioned in the manuscript")
        return
    chapters: dict[str, list[int]] = {}
    for item in d["items"]:
        row = chapters.setdefault(item["source"], [0, item["firstLine"], item["lastLine"]])
        row[0] += item["count"]
        row[1], row[2] = min(row[1], item["firstLine"]), max(row[2], item["lastLine"])
    top = max(count for count, _, _ in chapters.values())
    width = max(cells(source) for source in chapters)  # terminal cells: a Chinese file name takes two each
    lines = [f"{d['name']}: {d['total']} mentions, first {d['first']}, last {d['last']}"]
    for source, (count, first, last) in chapters.items():
        bar = "█" * max(1, round(BAR * count / top))
        lines.append(f"{pad(source, width)}  {pad(bar, BAR)}  {count:>4}  lines {first}–{last}")
    plain_lines(lines)


@command("kg:appearances")
def appearances(name: str = typer.Argument(..., metavar="NAME", help="A name, an alias or an id."),
                project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "kg:appearances", {"id": name} if "/" in name else {"name": name}, as_json, heat_view)


def summaries_view(d: dict[str, Any]) -> None:
    if not d["items"]:
        out.print("no summaries (.writenow/summaries/)")
        return
    lines = []
    for s in d["items"]:
        lines.append(f"{s['of']}  [{s['level']}]{'  (stale)' if s['stale'] else ''}  {_excerpt(s['text'])}")
    plain_lines(lines)


@command("summary:put")
def summary(of: str = typer.Argument(..., metavar="OF", help="A document, a scene (doc#scene) or an arc (a..b)."),
            text: str = typer.Argument(..., help="The summary; - reads it from standard input."),
            level: str = typer.Option("chapter", "--level", help="scene | chapter | arc"),
            by: Optional[str] = typer.Option(None, "--by", help="Who wrote it (writer, app …)."),
            project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    import sys

    payload: dict[str, Any] = {"of": of, "level": level, "text": sys.stdin.read() if text == "-" else text}
    if by is not None:
        payload["by"] = by
    call(project, "summary:put", payload, as_json, lambda d: summaries_view({"items": [d]}))


@command("summary:list")
def summaries(before: Optional[str] = typer.Option(None, "--before", help="Only what lies before this position."),
              project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "summary:list", {"before": before} if before is not None else {}, as_json, summaries_view)
