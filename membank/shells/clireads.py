"""The reading commands the bench times as whole processes (status, doctor, show, list, settings get,
skills; docs/performance.md, "The CLI as a writer waits for it"): their bodies, which the typer
commands call, and `fast`, which runs them from `python -m membank.shells.cli` before typer is
imported (~80 M instructions, ~8 % of `membank show`, plus click building the command).

`fast` takes only an argument list it reads exactly as click would: the command's name, its
positional arguments and its own options each given once, as separate words (`-C P`, not `-CP` or
`--project=P`), no value starting with `-`, no empty word. Anything else (help, a misspelt option, a
missing argument) returns None and typer parses it, so its messages and exit codes stay typer's."""

from __future__ import annotations

import errno
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional

from ..kernel import errors
from ..kernel.errors import MembankError
from ..kernel.log import log
from ..runtime.dispatch import dispatch
from .clicall import call, finish, open_registry
from .promptview import skills_view
from .render import diagnostic_lines, memory_table, memory_view, out, settings_view, styled


def status(path: Optional[Path], as_json: bool) -> None:
    call(path, "index:status", {}, as_json, _status_view)


def _status_view(d: dict[str, Any]) -> None:
    out.print(styled((d["name"], "bold"), f" ({d['projectId']})"))
    for key, value in d["counts"].items():
        out.print(f"  {key}: {value}")
    out.print(f"  last sync: {d['lastSync']}")
    model = d.get("model") or {}
    name = (model.get("name") or "none").split(":")[0]  # the folder; the rest of the identity is for the index
    out.print(f"  model: {name}" + (f" ({model['dim']} dimensions, {model['vocabulary']:,} tokens)"
                                    if model.get("dim") else ""))
    if model.get("problem"):
        out.print(f"  semantic recall off: {model['problem']['message']}")
    strong = d.get("strong") or {}
    if strong.get("state") in ("ready", "filling"):
        out.print(f"  strong tier: {strong['done']:,} of {strong['total']:,} vectors"
                  f" ({(strong['model'] or '').split(':')[0]})" + (
                      f"; {strong['total'] - strong['done']:,} wait for the background (`membank serve` or `watch`);"
                      " recall uses the static vectors until then" if strong["state"] == "filling" else ""))
    elif strong:
        out.print(f"  strong tier {strong['state']}: {strong['problem']}; recall uses the static vectors")
    diag = d["diagnostics"]
    out.print(f"  problems: {diag['errors']} errors, {diag['warnings']} warnings")
    episodes, life = d["episodes"], d["lifecycle"]
    out.print(f"  episodes: {episodes['live']} (" + ", ".join(f"{k} {v}" for k, v in life["levels"].items())
              + f"; decay as of the last daily run){', ' + str(episodes['failed']) + ' failed' if episodes['failed'] else ''}")
    out.print("  lifecycle last ran: " + ", ".join(f"{k} {v or 'never'}" for k, v in life["lastRun"].items()))
    for warning in life.get("warnings") or ():  # the clock was ahead (docs/lifecycle.md, Clocks)
        out.print(f"  warning: {warning}")


def doctor(path: Optional[Path], as_json: bool) -> None:
    registry = open_registry(path, as_json)
    envelope = dispatch(registry, "index:diagnostics", {})
    merges = dispatch(registry, "story:duplicates", {}) if envelope["ok"] and not as_json else None
    registry.close()
    if as_json:
        sys.stdout.write(json.dumps(envelope, ensure_ascii=False, indent=2) + "\n")
    elif envelope["ok"]:
        items = envelope["data"]["items"]
        diagnostic_lines(items)
        out.print("no problems found" if not items else f"{len(items)} problem(s)")
        if merges is not None and merges["ok"] and merges["data"]["items"]:  # suggestions, not problems
            from .narrativeview import duplicates_view  # here: only when there are suggestions

            duplicates_view(merges["data"])
    else:
        finish(envelope, as_json)
    has_error = envelope["ok"] and any(d["severity"] == "error" for d in envelope["data"]["items"])
    raise SystemExit(1 if has_error or not envelope["ok"] else 0)


def list_memories(path: Optional[Path], type_: Optional[str], scope: Optional[str], origin: Optional[str],
                  include_deleted: bool, as_json: bool) -> None:
    payload: dict[str, Any] = {"includeDeleted": include_deleted}
    for key, value in (("type", type_), ("scope", scope), ("origin", origin)):
        if value is not None:
            payload[key] = value
    call(path, "memory:list", payload, as_json, lambda d: memory_table(d["items"]))


def show(memory_id: str, project: Optional[Path], as_json: bool) -> None:
    call(project, "memory:get", {"id": memory_id}, as_json, memory_view)


def settings_get(project: Optional[Path], as_json: bool) -> None:
    call(project, "memory:settings:get", {}, as_json, settings_view)


def skills(project: Optional[Path], as_json: bool) -> None:
    call(project, "skill:list", {}, as_json, skills_view)


# -- the fast path ---------------------------------------------------------------------------------

# command words -> (positional arguments: fewest, most; value options, each spelling -> its name; flags)
FORMS: dict[tuple[str, ...], tuple[int, int, dict[str, str], tuple[str, ...]]] = {
    ("status",): (0, 1, {}, ("--json",)),
    ("doctor",): (0, 1, {}, ("--json",)),
    ("show",): (1, 1, {"-C": "project", "--project": "project"}, ("--json",)),
    ("list",): (0, 1, {"--type": "type", "--scope": "scope", "--origin": "origin"}, ("--all", "--json")),
    ("settings", "get"): (0, 0, {"-C": "project", "--project": "project"}, ("--json",)),
    ("skills",): (0, 0, {"-C": "project", "--project": "project"}, ("--json",)),
}


# On Windows typer expands each word as a shell would (`~`, `$VAR`/`%VAR%`, a glob: click's _expand_args)
WINDOWS_EXPANDS = frozenset("~$%*?[")


def parse(args: list[str], windows: bool = os.name == "nt"
          ) -> tuple[tuple[str, ...], list[str], dict[str, str], set[str]] | None:
    """(command words, positional arguments, options, flags) of an argument list `fast` may run, or None.
    On Windows a word typer would expand (`~\\book`, `%USERPROFILE%\\book`) is typer's too."""
    if windows and any(WINDOWS_EXPANDS.intersection(word) for word in args):
        return None
    words = next((w for w in FORMS if tuple(args[:len(w)]) == w), None)
    if words is None:
        return None
    fewest, most, valued, flags = FORMS[words]
    positional: list[str] = []
    options: dict[str, str] = {}
    given: set[str] = set()
    rest = args[len(words):]
    i = 0
    while i < len(rest):
        word = rest[i]
        if not word or not word.isprintable():
            return None
        if word in valued:
            name = valued[word]
            if name in options or i + 1 == len(rest) or not rest[i + 1] or rest[i + 1].startswith("-") \
                    or not rest[i + 1].isprintable():
                return None
            options[name] = rest[i + 1]
            i += 2
            continue
        if word in flags and word not in given:
            given.add(word)
        elif word.startswith("-"):
            return None
        else:
            positional.append(word)
        i += 1
    if not fewest <= len(positional) <= most:
        return None
    return words, positional, options, given


def _path(word: str | None) -> Path | None:
    return Path(word) if word is not None else None  # click's Path, as typer gives it: not resolved


def fast(args: list[str]) -> None:
    """Run the command `args` name when `parse` takes them (the process ends: SystemExit); else return.
    Around it what typer's `main` does: Ctrl-C exits 130, a closed pipe exits 1 without a traceback."""
    parsed = parse(args)
    if parsed is None or any(k.endswith("_COMPLETE") for k in os.environ):  # click's shell completion asks
        return
    words, positional, options, flags = parsed
    folder = options.get("project") if "project" in options else positional[0] if positional and words != ("show",) \
        else None
    if folder is not None and os.path.exists(folder) and not os.access(folder, os.R_OK):
        return  # click's Path refuses a folder it cannot read: its message
    as_json = "--json" in flags
    try:
        if words == ("show",):
            show(positional[0], _path(folder), as_json)
        elif words == ("list",):
            list_memories(_path(folder), options.get("type"), options.get("scope"), options.get("origin"),
                          "--all" in flags, as_json)
        else:
            RUN[words](_path(folder), as_json)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except OSError as e:
        if e.errno != errno.EPIPE:
            crashed(words, as_json)
        from typer._click.utils import PacifyFlushWrapper  # typer only now: the reader of the pipe left

        sys.stdout = PacifyFlushWrapper(sys.stdout)  # type: ignore[assignment]
        sys.stderr = PacifyFlushWrapper(sys.stderr)  # type: ignore[assignment]
        raise SystemExit(1) from None
    except Exception:  # a bug outside the channel (its view, the printing): dispatch's answer, not a traceback
        crashed(words, as_json)


def crashed(words: tuple[str, ...], as_json: bool) -> NoReturn:
    """A bug in a fast command outside its channel call ends as a bug inside one does (dispatch.py): the
    traceback to membank's log (stderr, as no handler is set), then the usual `error [INTERNAL]: …` line
    (or the envelope, with --json) and exit code 1. Called from an `except` block."""
    channel = CHANNELS[words]
    log.exception("internal error in %s", channel)
    try:
        finish(MembankError(errors.INTERNAL, f"internal error in {channel}; this is a bug in membank, see its log"
                            ).envelope(), as_json)
    except OSError:  # the stdout that failed (ENOSPC, EIO) fails again: logged above, the exit code says it
        raise SystemExit(1) from None


CHANNELS = {("status",): "index:status", ("doctor",): "index:diagnostics", ("show",): "memory:get",
            ("list",): "memory:list", ("settings", "get"): "memory:settings:get", ("skills",): "skill:list"}

RUN: dict[tuple[str, ...], Callable[[Optional[Path], bool], None]] = {
    ("status",): status, ("doctor",): doctor, ("settings", "get"): settings_get, ("skills",): skills}
