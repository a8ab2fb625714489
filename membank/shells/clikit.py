"""What every `membank` command is made of: the app, its shared options, `@command(channel)` (name
and help from the catalog), and opening a project, calling a channel and printing the envelope (those
from clicall.py, which imports no typer)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import typer
from typer.main import get_command_name

from ..runtime.catalog import describe
from .clicall import call as call, finish as finish, open_registry as open_registry  # noqa: F401  # the commands import them here
from .render import err as err  # noqa: F401

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="membank: a file-first memory bank for an AI writing assistant.")
settings_app = typer.Typer(help="Read or change settings.", invoke_without_command=True)
app.add_typer(settings_app, name="settings")


JsonOpt = typer.Option(False, "--json", help="Print the envelope as JSON and nothing else.")
PathArg = typer.Argument(None, help="A folder in the project (default: the current folder).", show_default=False)
ProjectOpt = typer.Option(None, "--project", "-C", help="A folder in the project (default: the current folder).")


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
