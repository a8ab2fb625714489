"""What every `membank` command is made of: the app, its shared options, `@command(channel)` (name
and help from the catalog), and opening a project, calling a channel and printing the envelope."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, NoReturn, Optional

import typer
from typer.main import get_command_name

from ..kernel.errors import MembankError
from ..runtime.catalog import describe
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from .render import err

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="membank: a file-first memory bank for an AI writing assistant.")
settings_app = typer.Typer(help="Read or change settings.", invoke_without_command=True)
app.add_typer(settings_app, name="settings")


JsonOpt = typer.Option(False, "--json", help="Print the envelope as JSON and nothing else.")
PathArg = typer.Argument(None, help="A folder in the project (default: the current folder).", show_default=False)
ProjectOpt = typer.Option(None, "--project", "-C", help="A folder in the project (default: the current folder).")


def finish(envelope: dict[str, Any], as_json: bool, show: Any = None) -> NoReturn:
    """Print the envelope (JSON) or the human view; exit 0 when ok, 1 when not."""
    if as_json:
        sys.stdout.write(json.dumps(envelope, ensure_ascii=False, indent=2) + "\n")
    elif not envelope["ok"]:
        e = envelope["error"]
        err.print(f"error [{e['code']}]: {e['message']}")
    elif show is not None:
        show(envelope["data"])
    raise typer.Exit(0 if envelope["ok"] else 1)


def command(channel: str, *, group: Any = None) -> Any:
    """Register a command for `channel` under the name and help the catalog gives it (from its directory:
    registering every command imports no domain's table)."""
    cli, summary = describe(channel)
    return (group or app).command(cli.split(" ")[-1], help=summary)


@contextmanager
def only(args: list[str]) -> Iterator[None]:
    """While a process runs the command `args` name, that command alone: typer makes a click command of
    every registered one before it reads the arguments (~10 ms of `inspect` over ~40 commands, paid by
    each process for the one it runs). No name (`membank`, `membank --help`), or a word that names no
    command: all of them, so the list and click's own error are what they were."""
    name = args[0] if args else ""
    commands = [c for c in app.registered_commands
                if (c.name or (get_command_name(c.callback.__name__) if c.callback else None)) == name]
    if not (commands or any(g.name == name for g in app.registered_groups)):
        yield
        return
    saved = app.registered_commands[:]
    app.registered_commands[:] = commands  # the groups stay: an app of one command would become that command
    try:
        yield
    finally:
        app.registered_commands[:] = saved


def open_registry(path: Optional[Path], as_json: bool, sync: bool = True) -> Registry:
    """A registry with the project at or above `path` open: `project:open` (which syncs), or, for the
    commands that sync themselves (`index`, `watch`), the project opened as it is."""
    registry = Registry()
    where = str(path or Path.cwd())
    if sync:
        envelope = dispatch(registry, "project:open", {"path": where})
        if not envelope["ok"]:
            finish(envelope, as_json)
        return registry
    try:
        registry.open(where, sync=False)
    except MembankError as e:
        finish(e.envelope(), as_json)
    return registry


def call(path: Optional[Path], channel: str, payload: dict[str, Any], as_json: bool, show: Any = None) -> NoReturn:
    registry = open_registry(path, as_json)
    try:
        finish(dispatch(registry, channel, payload), as_json, show)
    finally:
        registry.close()
