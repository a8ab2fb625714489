"""The run and episode commands: `membank trace RUN`, `trace-feedback RUN VERDICT`, `skill-feedback RUN
ACTION`, `episode-record`, `episodes`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .clikit import JsonOpt, ProjectOpt, call, command
from .episodeview import episodes_view, feedback_view, lifecycle_view, recorded_view, trace_view, verdict_view

RunArg = typer.Argument(..., metavar="RUN", help="A run id (`runId` of `membank context --json`).")
SceneOpt = typer.Option(None, "--scene", help="The kind of scene: action, dialogue, description, …")


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != []}


@command("memory:trace:get")
def trace(run: str = RunArg, project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:trace:get", {"runId": run}, as_json, trace_view)


@command("memory:trace:feedback")
def trace_feedback(run: str = RunArg, verdict: str = typer.Argument(..., metavar="VERDICT", help="correct or incorrect."),
                   reason: Optional[str] = typer.Option(None, "--reason", help="Why, in a few words."),
                   project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:trace:feedback", _given(runId=run, verdict=verdict, reason=reason), as_json, verdict_view)


@command("ai:skill:feedback")
def skill_feedback(run: str = RunArg,
                   action: str = typer.Argument(..., metavar="ACTION", help="accept, reject, partial or undo."),
                   evidence: Optional[str] = typer.Option(None, "--evidence", help="A short label of what was liked."),
                   tag: list[str] = typer.Option([], "--tag", help="An abstract label (repeatable)."),
                   edit_distance: Optional[float] = typer.Option(None, "--edit-distance", help="0..1: how much was rewritten."),
                   scene: Optional[str] = SceneOpt,
                   summary: Optional[str] = typer.Option(None, "--summary", help="One line about the run."),
                   selected: Optional[int] = typer.Option(None, "--selected", help="The chosen candidate's index."),
                   project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "ai:skill:feedback", _given(runId=run, action=action, evidenceRef=evidence, tags=tag or None,
                                              editDistance=edit_distance, sceneType=scene, summary=summary,
                                              selectedIndex=selected), as_json, feedback_view)


@command("memory:episode:record")
def episode_record(scene: Optional[str] = SceneOpt,
                   skill: Optional[str] = typer.Option(None, "--skill", help="The skill that ran."),
                   run: Optional[str] = typer.Option(None, "--run", help="The run it belongs to."),
                   action: str = typer.Option("accept", "--action", help="accept, partial or reject."),
                   edit_distance: Optional[float] = typer.Option(None, "--edit-distance", help="0..1."),
                   summary: Optional[str] = typer.Option(None, "--summary", help="One line about the run."),
                   tag: list[str] = typer.Option([], "--tag", help="A label (repeatable)."),
                   pinned: bool = typer.Option(False, "--pinned", help="Never forget it."),
                   wait: bool = typer.Option(False, "--wait", help="Return after the write (errors come back)."),
                   project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:episode:record",
         _given(sceneType=scene, skillUsed=skill, runId=run, action=action, editDistance=edit_distance,
                summary=summary, tags=tag or None, pinned=pinned or None, wait=wait or None), as_json, recorded_view)


@command("memory:episode:query")
def episodes(scene: Optional[str] = SceneOpt, query: Optional[str] = typer.Option(None, "--query", "-q"),
             limit: int = typer.Option(5, "--limit", min=3, max=5, help="3-5."),
             project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:episode:query", _given(sceneType=scene, queryText=query, limit=limit), as_json, episodes_view)


@command("memory:lifecycle:run")
def lifecycle(trigger: str = typer.Argument(..., metavar="TRIGGER", help="realtime, daily, weekly or monthly."),
              project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:lifecycle:run", {"trigger": trigger}, as_json, lifecycle_view)
