"""`membank settings`: show the effective settings, or set dotted keys in settings.yaml
(`memory.*` through the app's channel, `embedding.*`, `context.*` and `lifecycle.*` through theirs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from ..runtime.dispatch import dispatch
from . import clireads as reads
from .clikit import JsonOpt, ProjectOpt, command, finish, open_registry, call, settings_app
from .render import err, settings_view


@settings_app.callback()
def settings_main(ctx: typer.Context, project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    """Show the effective settings (or use `get` / `set KEY=VALUE`)."""
    if ctx.invoked_subcommand is None:
        reads.settings_get(project, as_json)


@command("memory:settings:get", group=settings_app)
def settings_get(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    reads.settings_get(project, as_json)


# `settings set` runs memory:settings:update for `memory.*` keys, embedding:settings:update for
# `embedding.*`, context:settings:update for `context.*` and lifecycle:settings:update for `lifecycle.*`
# keys (the channels name this command)
@command("memory:settings:update", group=settings_app)
def settings_set(pairs: list[str] = typer.Argument(..., metavar="KEY=VALUE...",
                                                   help="Dotted keys: memory.injectionEnabled=false, embedding.model=PATH, "
                                                        "context.layerTokens.retrieved=4000, lifecycle.activeEpisodes=2000"),
                 global_: bool = typer.Option(False, "--global", help="Change the global bank's settings."),
                 project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    import yaml

    by_section: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        section, dot, name = key.partition(".")
        if not sep or not dot or section not in _SETTINGS_CHANNELS:
            err.print(f"`{pair}` is not KEY=VALUE with KEY in one of the sections {', '.join(_SETTINGS_CHANNELS)}"
                      " (like memory.injectionEnabled, embedding.model, context.maxTokens, lifecycle.activeEpisodes)")
            raise typer.Exit(2)
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            value = raw  # not a YAML value: taken as the text typed, which the setting's check then refuses
        name, dot, leaf = name.partition(".")  # context.layerTokens.retrieved: one key of a mapping
        target = by_section.setdefault(section, {})
        if dot and isinstance(target.setdefault(name, {}), dict):
            target[name][leaf] = value
        else:
            target[name] = value
    scope = "global" if global_ else "project"
    if set(by_section) == {"memory"}:
        call(project, "memory:settings:update", {"patch": by_section["memory"], "scope": scope}, as_json, settings_view)
    registry = open_registry(project, as_json)
    try:
        shown: dict[str, Any] = {}
        for section, patch in by_section.items():  # in the order typed; the first refusal stops
            envelope = dispatch(registry, _SETTINGS_CHANNELS[section], {"patch": patch, "scope": scope})
            if not envelope["ok"]:
                finish(envelope, as_json)
            if section != "memory":
                shown.update({f"{section}.{k}": v for k, v in envelope["data"].items()})
        memory = dispatch(registry, "memory:settings:get", {})
        if not memory["ok"]:
            finish(memory, as_json)
        data = {**memory["data"], **shown}
    finally:
        registry.close()
    finish({"ok": True, "data": data}, as_json, settings_view)


_SETTINGS_CHANNELS = {"memory": "memory:settings:update", "embedding": "embedding:settings:update",
                      "context": "context:settings:update", "lifecycle": "lifecycle:settings:update"}
