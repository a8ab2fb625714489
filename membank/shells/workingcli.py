"""The working memory commands: `membank working-add SESSION KIND CONTENT`, `working SESSION`,
`session-end SESSION`. Working memory lives in the process that holds it: a CLI command is one process,
so a session lasts as long as the command (it ends, archiving what reached the threshold, when the
command closes the project). The writing app keeps sessions across calls in its sidecar."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from .clikit import JsonOpt, ProjectOpt, call, command
from .episodeview import episode_line
from .render import out

SessionArg = typer.Argument(..., metavar="SESSION", help="The session's id (the app's sessionId).")
LIFETIME = " In a CLI command the session lasts only as long as the command."


def _entry(e: dict[str, Any]) -> str:
    reached = " · reached the threshold" if e["reached"] else ""
    return f"{e['id']} [{e['kind']}] importance {e['importance']:.2f} · {e['tokenCount']} tokens · ×{e['count']}{reached}: " \
           f"{e['content'][:120]}"


def added_view(d: dict[str, Any]) -> None:
    out.print(f"held {_entry(d['entry'])}")
    for e in d["evicted"]:
        out.print(f"evicted {_entry(e)}")
    by = f" (ties by {d['relation']} relation to the focus)" if d["relation"] else ""
    out.print(f"{d['tokens']:,} of {d['capTokens']:,} tokens{by}.{LIFETIME}")


def list_view(d: dict[str, Any]) -> None:
    if not d["items"]:
        out.print(f"session {d['sessionId']} holds nothing.{LIFETIME}")
        return
    for e in d["items"]:
        out.print(_entry(e))
    out.print(f"{d['tokens']:,} of {d['capTokens']:,} tokens · focus: {d['focus'] or '(none)'}")


def ended_view(d: dict[str, Any]) -> None:
    if not d["ended"]:
        out.print(f"no session {d['sessionId']} was open here; nothing to end.{LIFETIME}")
        return
    for e in d["archived"]:
        out.print(f"archived episode {e['id']}: {episode_line(e)} · {e['source']}")
    out.print(f"{len(d['archived'])} archived, {d['dropped']} dropped")


@command("memory:working:add")
def working_add(session: str = SessionArg,
                kind: str = typer.Argument(..., metavar="KIND", help="signal, selection, instruction, note, …"),
                content: str = typer.Argument(..., metavar="CONTENT", help="The entry's text."),
                importance: float = typer.Option(0.5, "--importance", min=0.0, max=1.0, help="0..1: what goes last."),
                focus: Optional[str] = typer.Option(None, "--focus", help="What the writer is working on now."),
                project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    payload: dict[str, Any] = {"sessionId": session, "kind": kind, "content": content, "importance": importance}
    if focus is not None:
        payload["focus"] = focus
    call(project, "memory:working:add", payload, as_json, added_view)


@command("memory:working:list")
def working(session: str = SessionArg, project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:working:list", {"sessionId": session}, as_json, list_view)


@command("memory:session:end")
def session_end(session: str = SessionArg, project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:session:end", {"sessionId": session}, as_json, ended_view)
