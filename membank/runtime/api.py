"""The Python API: an open project's methods, one per channel, made from the catalog.

Each method takes the handler's own parameters (`bank.create_memory("note", "project", "text")`),
checks them against the channel's payload type exactly as the sidecar does (INVALID_ARGUMENT naming
the field), runs the handler, and lets nothing but a MembankError out (boundary.py). A channel whose
payload has `deadlineMs` takes it as the keyword `deadline_ms` (the handler never sees it: dispatch's
cancellation scope does)."""

from __future__ import annotations

import functools
import inspect
from pathlib import Path
from typing import Any, Callable

from ..domains.contract import Channel
from ..kernel import errors
from ..kernel.errors import MembankError
from ..kernel.payload import build
from .boundary import converting, locate
from .catalog import CATALOG, cancellable, field_name, fields
from .dispatch import dispatch, run, scope
from .project import Project
from .registry import Registry, init_project


def _method(channel: Channel) -> Callable[..., Any]:
    handler = channel.function  # the Python API imports every handler: a method needs its signature now
    signature = inspect.signature(handler)
    if cancellable(channel):  # `deadlineMs` is dispatch's, not the handler's: the method takes it too
        signature = signature.replace(parameters=[*signature.parameters.values(), inspect.Parameter(
            "deadline_ms", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="int | None")])
    payload_fields = set(fields(channel))

    @functools.wraps(handler)
    def method(self: Project, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = signature.bind(self, *args, **kwargs)
        except TypeError as e:  # wrong arguments: said as the channel would say it, not a traceback
            raise MembankError(errors.INVALID_ARGUMENT, f"{channel.method}: {e}") from None
        sent, extras = {}, {}
        for name, value in list(bound.arguments.items())[1:]:  # only what the caller passed: absent stays absent
            if field_name(name) in payload_fields:
                sent[field_name(name)] = value
            else:
                extras[name] = value
        checked = build(channel.payload, sent)
        with scope(channel, checked):
            return run(channel, self, checked, extras)

    method.__signature__ = signature  # type: ignore[attr-defined]
    method.__name__ = method.__qualname__ = channel.method
    method.__doc__ = f"`{channel.name}`: {channel.summary}"
    return converting(channel.method)(method)


def call(self: Project, channel: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run a channel by name on this project and return its envelope, exactly as the sidecar would."""
    registry = Registry(self.home)
    registry.banks[self.info.id] = self
    return dispatch(registry, channel, payload or {})


for _channel in CATALOG.values():
    if _channel.target == "bank":
        setattr(Project, _channel.method, _method(_channel))
Project.call = call  # type: ignore[attr-defined]
Project.__init__ = converting("open")(Project.__init__)  # type: ignore[method-assign]  # an odd flock error too


def open_project(path: str | Path = ".", *, home: str | Path | None = None, sync: bool = True) -> Project:
    """The project at or above `path` (`~` expanded), its index brought up to date unless `sync` is
    False. Raises MembankError only: NOT_FOUND when no project is there or above, INVALID_ARGUMENT
    when its project.yaml is unusable, DB_ERROR when the index cannot be opened or written."""
    bank = Project(locate(path), Path(home).expanduser() if home is not None else None)
    if sync:
        try:
            bank.sync()  # type: ignore[attr-defined]
        except MembankError:
            bank.close()
            raise
    from ..domains.indexing import strongfill

    strongfill.start(bank)  # a program keeps its bank open: the strong tier fills in the background
    return bank


@converting("init")
def init(path: str | Path = ".", name: str | None = None, bare: bool = False) -> dict[str, Any]:
    """`project:init`: `.writenow/` from the template in `path`; never overwrites a file. `bare`: without
    the template's example memories, character and place (they are switched off either way)."""
    checked = build(CATALOG["project:init"].payload,
                    {"path": str(path), "bare": bare, **({"name": name} if name is not None else {})})
    return init_project(Registry(), checked.path, checked.name, checked.bare)
