"""The story commands: `membank story [NAME] [--at D]`, `relations`, `state`, `mentions`, `progress`,
`check D` (which exits 1 when there are flags) `threads [--at D]`, `scene D`,
`reader --at D` and `duplicates`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ..domains.story.manuscript import SEND_TEXT
from ..runtime.dispatch import dispatch
from .clikit import JsonOpt, ProjectOpt, call, command, finish, open_registry
from .narrativeview import duplicates_view, reader_view, scene_view, threads_view
from .storyview import check_view, edges_view, entities_view, entity_view, mentions_view, state_view

AtOpt = typer.Option(None, "--at", help="A story position, e.g. chapters/ch05.md.")
NameArg = typer.Argument(..., metavar="NAME", help="A name, an alias or an id.")


def _who(name: str) -> dict[str, Any]:
    """A card named by its id (`characters/lin-mo`) or by a name or alias."""
    return {"id": name} if "/" in name else {"name": name}


def _given(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@command("kg:entity:list")
def story(name: Optional[str] = typer.Argument(None, metavar="[NAME]", help="A character or world entry."),
          at: Optional[str] = AtOpt, kind: Optional[str] = typer.Option(None, "--kind"),
          project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    if name is None:
        call(project, "kg:entity:list", _given(at=at, kind=kind), as_json, entities_view)
    else:
        call(project, "kg:entity:get", {**_who(name), **_given(at=at)}, as_json, entity_view)


@command("kg:relations")
def relations(name: str = NameArg, at: Optional[str] = AtOpt,
              depth: int = typer.Option(1, "--depth", min=1, max=3, help="How far to follow (1-3)."),
              project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "kg:relations", {**_who(name), **_given(at=at), "depth": depth}, as_json, edges_view)


@command("kg:state")
def state(name: str = NameArg, at: str = typer.Option(..., "--at", help="A story position, e.g. chapters/ch05.md."),
          project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "kg:state", {**_who(name), "at": at}, as_json, state_view)


@command("kg:mentions")
def mentions(text: str = typer.Argument(..., help="The text; - reads it from standard input."),
             project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "kg:mentions", {"text": sys.stdin.read() if text == "-" else text}, as_json, mentions_view)


def _facet(pair: str) -> tuple[str, Any]:
    import yaml

    key, sep, raw = pair.partition("=")
    if not sep or not key.strip():
        raise typer.BadParameter(f"`{pair}` is not KEY=VALUE, like location=the cliffs or alive=false")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


@command("kg:state:update")
def progress(name: str = NameArg, at: str = typer.Option(..., "--at", help="Where it happens, e.g. chapters/ch07.md."),
             state_: Optional[str] = typer.Option(None, "--state", help="The new one-line state."),
             facets: list[str] = typer.Option([], "--set", metavar="KEY=VALUE", help="A facet (repeatable)."),
             revision: Optional[int] = typer.Option(None, "--revision", help="Refuse unless the card is at it."),
             project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    payload = {**_who(name), "at": at, **_given(state=state_, expectedRevision=revision)}
    if facets:
        payload["set"] = dict(_facet(p) for p in facets)
    call(project, "kg:state:update", payload, as_json, entity_view)


@command("kg:consistency:check")
def check(document: str = typer.Argument(..., metavar="DOCUMENT",
                                         help="A chapter or a scene, e.g. chapters/ch05.md or chapters/ch05.md#2."),
          stdin: Optional[str] = typer.Argument(None, metavar="[-]", help="-: read the passage to check from stdin."),
          text: Optional[str] = typer.Option(None, "--text", help="The passage to check (-: read it from stdin)."),
          project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    if stdin is not None and (stdin != "-" or text is not None):
        finish({"ok": False, "error": {"code": "INVALID_ARGUMENT", "message": "after DOCUMENT only `-` (read the "
                "passage from stdin) is accepted; send a passage with --text TEXT"}}, as_json)
    if stdin == "-" or text == "-":
        text = sys.stdin.read()
    registry = open_registry(project, as_json)
    try:
        envelope = dispatch(registry, "kg:consistency:check",
                            {"documentId": document, **({} if text is None else {"text": text})})
    finally:
        registry.close()
    if not envelope["ok"] and SEND_TEXT in envelope["error"]["message"]:  # name the CLI's way, not the payload's
        envelope["error"]["message"] = envelope["error"]["message"].replace(
            SEND_TEXT, f"send its text with --text TEXT, or on stdin: membank check {document} - < passage.txt")
    if envelope["ok"] and envelope["data"]["flags"]:
        if as_json:
            sys.stdout.write(json.dumps(envelope, ensure_ascii=False, indent=2) + "\n")
        else:
            check_view(envelope["data"])
        raise typer.Exit(1)  # flags: the passage contradicts the cards
    finish(envelope, as_json, check_view)


@command("story:threads")
def threads(at: Optional[str] = AtOpt,
            status: Optional[str] = typer.Option(None, "--status", help="open, resolved or dropped."),
            project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "story:threads", _given(at=at, status=status), as_json, threads_view)


@command("story:scene")
def scene(document: str = typer.Argument(..., metavar="DOCUMENT", help="A chapter, or chapter#scene heading."),
          project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "story:scene", {"at": document}, as_json, scene_view)


@command("story:reader")
def reader(at: str = typer.Option(..., "--at", help="A story position, e.g. chapters/ch05.md."),
           project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "story:reader", {"at": at}, as_json, reader_view)


@command("story:duplicates")
def duplicates(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "story:duplicates", {}, as_json, duplicates_view)
