"""A command's call of a channel: the project opened, the channel run, the envelope printed (JSON or
the human view) and the process's exit code. Imports no typer: the reading commands the bench times
run through here before typer is imported (clireads.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn, Optional

from ..kernel.errors import MembankError
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from .render import err


def finish(envelope: dict[str, Any], as_json: bool, show: Any = None) -> NoReturn:
    """Print the envelope (JSON) or the human view; exit 0 when ok, 1 when not. SystemExit, which click
    lets through as it does its own Exit: the same exit code either way."""
    if as_json:
        sys.stdout.write(json.dumps(envelope, ensure_ascii=False, indent=2) + "\n")
    elif not envelope["ok"]:
        e = envelope["error"]
        err.print(f"error [{e['code']}]: {e['message']}")
    elif show is not None:
        show(envelope["data"])
    raise SystemExit(0 if envelope["ok"] else 1)


def here(path: Optional[Path]) -> str:
    """`path`, else the current folder; `.` when that folder was removed under the shell (Path.cwd() raises):
    `project:open` then answers NOT_FOUND instead of the command ending in a traceback."""
    if path is not None:
        return str(path)
    try:
        return str(Path.cwd())
    except FileNotFoundError:
        return os.curdir


def open_registry(path: Optional[Path], as_json: bool, sync: bool = True) -> Registry:
    """A registry with the project at or above `path` open: `project:open` (which syncs), or, for the
    commands that sync themselves (`index`, `watch`), the project opened as it is."""
    registry = Registry()
    where = here(path)
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
