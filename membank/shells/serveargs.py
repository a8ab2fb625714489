"""`membank serve` without the CLI framework: typer converts each option through a pydantic
TypeAdapter, so running any typer command imports pydantic, which the sidecar would then hold
resident for its whole life (~11 MB of the ~180 MB it held at 10,000 files, docs/performance.md) to
read three options.

`parse` reads exactly the options the `serve` command declares in cli.py, written as the app writes
them. Anything else (`--help`, an option it does not know, a value that looks like an option, `-C`
with its value attached) gives None, and the typer command answers it as before, so help, usage and
errors read the same either way."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Serve(NamedTuple):
    projects: list[Path]
    watch: bool
    log_level: str


def parse(args: list[str]) -> Serve | None:
    """The options after `serve`, or None when the typer command should read them."""
    projects: list[Path] = []
    watch, level = True, "info"
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        name, eq, attached = arg.partition("=")
        if arg == "--no-watch":
            watch = False
            continue
        if (name not in ("--project", "--log-level") or not eq) and arg not in ("--project", "-C", "--log-level"):
            return None
        value = attached if eq else (rest.pop(0) if rest else "")
        if not value or value.startswith("-"):
            return None
        if name == "--log-level":
            level = value
        else:
            projects.append(Path(value))
    return Serve(projects, watch, level)


def run(args: list[str]) -> int | None:
    """Serve when `args` (after `serve`) are plain options; None when the typer command should take them."""
    parsed = parse(args)
    if parsed is None:
        return None
    from .server import run as serve_forever

    return serve_forever(parsed.projects, watch=parsed.watch, log_level=parsed.log_level)
