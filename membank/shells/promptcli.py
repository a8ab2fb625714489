"""The prompt commands: `membank skills`, `membank skill SKILL` and `membank context SKILL` (the
assembled prompt as boxed layers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from . import clireads as reads
from .clikit import JsonOpt, ProjectOpt, command, call
from .promptview import prompt_view, skill_view


@command("skill:list")
def skills(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    reads.skills(project, as_json)


@command("skill:get")
def skill(skill_id: str = typer.Argument(..., metavar="SKILL"), project: Optional[Path] = ProjectOpt,
          as_json: bool = JsonOpt) -> None:
    call(project, "skill:get", {"skillId": skill_id}, as_json, skill_view)


def _selection(select: Optional[str], selection: Optional[str]) -> dict[str, Any] | None:
    if select is not None and selection is not None:
        raise typer.BadParameter("give --select START:END or --selection TEXT, not both")
    if selection is not None:
        return {"text": selection}
    if select is None:
        return None
    start, sep, end = select.partition(":")
    if not sep or not start.strip().isdecimal() or not end.strip().isdecimal():
        raise typer.BadParameter("--select takes START:END, two character offsets like 1200:1450")
    return {"start": int(start), "end": int(end)}


@command("context:assemble")
def context(skill_id: str = typer.Argument(..., metavar="SKILL"),
            document: Optional[str] = typer.Option(None, "--document", "-d", help="The chapter, e.g. chapters/ch05.md."),
            select: Optional[str] = typer.Option(None, "--select", help="START:END character offsets in the document."),
            selection: Optional[str] = typer.Option(None, "--selection", help="The selected text itself."),
            instruction: Optional[str] = typer.Option(None, "--instruction", "-i"),
            query: Optional[str] = typer.Option(None, "--query", "-q", help="Search memories with this instead."),
            project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    payload: dict[str, Any] = {"skillId": skill_id}
    chosen = _selection(select, selection)
    for key, value in (("documentId", document), ("selection", chosen), ("instruction", instruction),
                       ("queryText", query)):
        if value is not None:
            payload[key] = value
    call(project, "context:assemble", payload, as_json, prompt_view)
