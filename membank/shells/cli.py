"""The `membank` command: thin wrappers that call channels and print envelopes or tables.

Every command that reads or changes a bank is declared with `@command(channel)`: its name and help
come from the catalog entry (`Channel.cli`, `Channel.summary`), and it calls that channel through
`dispatch`. tests/test_catalog.py fails when a channel has no command."""

from __future__ import annotations

import gc
import sys

if __name__ == "__main__":  # `python -m membank.shells.cli`: no collection while the imports run (main, below)
    from .blas import one_blas_thread

    one_blas_thread()  # before numpy loads (blas.py says why)
    gc.disable()
    from .codecache import install

    install()  # the dataclasses' methods compiled once, not by every process (codecache.py)
    from .clireads import fast

    fast(sys.argv[1:])  # a reading command the bench times runs here, before typer is imported (clireads.py)

import json
import os
from pathlib import Path
from typing import Any, NoReturn, Optional

import typer

from ..kernel import clock
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from .clicall import here
from .clikit import JsonOpt, PathArg, ProjectOpt, app, command, finish, only, open_registry, call
from . import clireads as reads
from .demo import run_demo
from .render import err, out, preview_view, styled
from .cells import visible



# -- commands ------------------------------------------------------------------------------------


@command("project:init")
def init(path: Optional[Path] = PathArg, name: Optional[str] = typer.Option(None, "--name", help="The project's name."),
         bare: bool = typer.Option(False, "--bare", help="The layout without the example memories, character and place."),
         as_json: bool = JsonOpt) -> None:
    payload: dict[str, Any] = {"path": here(path)}
    if bare:
        payload["bare"] = True
    if name is not None:
        payload["name"] = name

    def show(d: dict[str, Any]) -> None:
        made = len(d["created"])
        out.print(styled("project ", (d["name"], "bold"), f" ({d['projectId']}): "
                                + (f"{made} file{'' if made == 1 else 's'} created" if made else "already set up, nothing changed")))
        if any(c.startswith((".writenow/memories/", ".writenow/characters/", ".writenow/world/")) for c in d["created"]):
            out.print("the example memories, character and place are switched off (they reach no prompt); each "
                      "file's comment says how to use it (`membank list --all` lists the memories)")
    finish(dispatch(Registry(), "project:init", payload), as_json, show)


@command("project:open")
def open_(path: Optional[Path] = PathArg, as_json: bool = JsonOpt) -> None:
    registry = Registry()
    try:
        envelope = dispatch(registry, "project:open", {"path": here(path)})
    finally:
        registry.close()
    finish(envelope, as_json, lambda d: out.print(styled((d["name"], "bold"), f" ({d['projectId']}) in {d['root']}")))


@command("index:sync")
def index(path: Optional[Path] = PathArg, rebuild: bool = typer.Option(False, "--rebuild", help="Start from scratch."),
          as_json: bool = JsonOpt) -> None:
    registry = open_registry(path, as_json, sync=False)
    try:
        if not as_json and err.is_terminal:
            from rich.progress import Progress
            with Progress(console=err, transient=True) as bar:
                task = bar.add_task("indexing", total=None)
                envelope = dispatch(registry, "index:sync", {"rebuild": rebuild},
                                    progress=lambda done, total: bar.update(task, completed=done, total=total))
        else:
            envelope = dispatch(registry, "index:sync", {"rebuild": rebuild})
    finally:
        registry.close()

    def show(d: dict[str, Any]) -> None:
        out.print(f"added {d['added']}, updated {d['updated']}, removed {d['removed']}, unchanged {d['unchanged']}, "
                  f"errors {d['errors']} in {d['tookMs']:.0f} ms" + (" (run `membank doctor`)" if d["errors"] else ""))
    finish(envelope, as_json, show)


@command("index:status")
def status(path: Optional[Path] = PathArg, as_json: bool = JsonOpt) -> None:
    reads.status(path, as_json)


@command("index:diagnostics")
def doctor(path: Optional[Path] = PathArg, as_json: bool = JsonOpt) -> None:
    reads.doctor(path, as_json)


@command("memory:list")
def list_(path: Optional[Path] = PathArg, type_: Optional[str] = typer.Option(None, "--type"),
          scope: Optional[str] = typer.Option(None, "--scope"), origin: Optional[str] = typer.Option(None, "--origin"),
          include_deleted: bool = typer.Option(False, "--all", help="Include soft-deleted memories."),
          as_json: bool = JsonOpt) -> None:
    reads.list_memories(path, type_, scope, origin, include_deleted, as_json)


@command("memory:get")
def show(memory_id: str = typer.Argument(..., metavar="ID"), project: Optional[Path] = ProjectOpt,
         as_json: bool = JsonOpt) -> None:
    reads.show(memory_id, project, as_json)


@command("memory:create")
def add(content: str = typer.Argument(..., help="The memory's text; - reads it from standard input."),
        type_: str = typer.Option("note", "--type", "-t", help="preference, fact, note or another word."),
        scope: str = typer.Option("project", "--scope", "-s", help="project, document or global."),
        document: Optional[str] = typer.Option(None, "--document", "-d", help="The document, for scope document."),
        tags: list[str] = typer.Option([], "--tag", help="A tag (repeatable)."),
        confidence: Optional[float] = typer.Option(None, "--confidence"),
        pinned: bool = typer.Option(False, "--pin", help="Never evicted by lifecycle rules."),
        project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    if content == "-":
        content = sys.stdin.read()
    payload: dict[str, Any] = {"type": type_, "scope": scope, "content": content, "tags": tags, "pinned": pinned}
    if document is not None:
        payload["documentId"] = document
    if confidence is not None:
        payload["confidence"] = confidence
    call(project, "memory:create", payload, as_json, lambda m: out.print(f"created {m['id']} in {m['source']}"))


@command("memory:update")
def edit(memory_id: str = typer.Argument(..., metavar="ID"),
         content: Optional[str] = typer.Option(None, "--content", help="New text; - reads it from standard input."),
         type_: Optional[str] = typer.Option(None, "--type", "-t"),
         tags: Optional[list[str]] = typer.Option(None, "--tag", help="Replace the tags (repeatable)."),
         confidence: Optional[float] = typer.Option(None, "--confidence"),
         pinned: Optional[bool] = typer.Option(None, "--pin/--unpin"),
         document: Optional[str] = typer.Option(None, "--document", "-d", help="Tie it to a document ('' unties it)."),
         expected: Optional[int] = typer.Option(None, "--expected-revision", help="Refuse unless the memory is at this revision."),
         project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    patch: dict[str, Any] = {}
    if content is not None:
        patch["content"] = sys.stdin.read() if content == "-" else content
    if type_ is not None:
        patch["type"] = type_
    if tags is not None:
        patch["tags"] = tags
    if confidence is not None:
        patch["confidence"] = confidence
    if pinned is not None:
        patch["pinned"] = pinned
    if document is not None:
        patch["documentId"] = document or None
    if not patch:
        _edit_in_editor(memory_id, project, as_json)
    payload: dict[str, Any] = {"id": memory_id, "patch": patch}
    if expected is not None:
        payload["expectedRevision"] = expected
    call(project, "memory:update", payload, as_json, lambda m: out.print(f"updated {m['id']} (revision {m['revision']})"))


def _edit_in_editor(memory_id: str, project: Optional[Path], as_json: bool) -> NoReturn:
    """`edit ID` with no option: the file in $VISUAL or $EDITOR, on a terminal, then a sync."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if as_json or not editor or not sys.stdin.isatty():
        err.print("nothing to change: give --content, --type, --tag, --confidence, --pin/--unpin or --document "
                  "(or, on a terminal, set $VISUAL or $EDITOR to edit the file)")
        raise typer.Exit(2)
    registry = open_registry(project, as_json)
    try:
        envelope = dispatch(registry, "memory:get", {"id": memory_id})
        if not envelope["ok"]:
            finish(envelope, as_json)
        path = registry.get(None).file_of(envelope["data"]["source"])
        import shlex  # here: only this command splits a command line
        import subprocess

        try:  # shlex: an editor path with spaces may be quoted, as a shell would take it
            subprocess.call([*shlex.split(editor, posix=os.name != "nt"), str(path)])
        except (OSError, ValueError) as e:
            err.print(f"could not start the editor `{editor}`: {getattr(e, 'strerror', None) or e}")
            raise typer.Exit(1) from None
        synced = dispatch(registry, "index:sync", {})
        if not synced["ok"]:
            finish(synced, as_json)
    finally:
        registry.close()
    raise typer.Exit(0)


@command("memory:delete")
def rm(memory_id: str = typer.Argument(..., metavar="ID"), project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:delete", {"id": memory_id}, as_json, lambda d: out.print(f"deleted {d['id']} at {d['deletedAt']}"))


@command("memory:restore")
def restore(memory_id: str = typer.Argument(..., metavar="ID"), project: Optional[Path] = ProjectOpt,
            as_json: bool = JsonOpt) -> None:
    call(project, "memory:restore", {"id": memory_id}, as_json, lambda m: out.print(f"restored {m['id']}"))


@command("memory:injection:preview")
def preview(path: Optional[Path] = PathArg, query: Optional[str] = typer.Option(None, "--query", "-q"),
            document: Optional[str] = typer.Option(None, "--document", "-d"), as_json: bool = JsonOpt) -> None:
    payload: dict[str, Any] = {}
    if query is not None:
        payload["queryText"] = query
    if document is not None:
        payload["documentId"] = document
    call(path, "memory:injection:preview", payload, as_json, preview_view)


@app.command()
def serve(projects: list[Path] = typer.Option([], "--project", "-C", metavar="PATH",
                                              help="A project to open at start (repeatable)."),
          no_watch: bool = typer.Option(False, "--no-watch", help="Do not watch the files; the app calls index:sync."),
          log_level: str = typer.Option("info", "--log-level", metavar="LEVEL",
                                        help="debug, info, warning or error (logs go to stderr).")
          ) -> None:
    """The sidecar: every channel over JSON-RPC 2.0 on stdin/stdout, one JSON object per line (docs/sidecar.md)."""
    from .server import run as serve_forever

    raise typer.Exit(serve_forever(projects, watch=not no_watch, log_level=log_level))


@app.command()
def mcp(project: Optional[Path] = typer.Option(None, "--project", "-C", metavar="PATH",
                                             help="A folder in the project (default: the current folder)."),
        no_watch: bool = typer.Option(False, "--no-watch", help="Do not watch the files (edits made meanwhile go unseen)."),
        log_level: str = typer.Option("info", "--log-level", metavar="LEVEL",
                                      help="debug, info, warning or error (logs go to stderr).")) -> None:
    """A Model Context Protocol server on stdin/stdout: recall, context, story state and memory tools (docs/mcp.md)."""
    from .mcpserver import run as serve_mcp  # the SDK itself is imported only when it starts: membank[mcp]

    raise typer.Exit(serve_mcp(project, watch=not no_watch, log_level=log_level))


@app.command()
def watch(path: Optional[Path] = PathArg,
          debounce: float = typer.Option(0.1, "--debounce", help="Seconds of quiet before a batch of changes is applied."),
          polling: bool = typer.Option(False, "--polling", help="Poll the folders instead of using native file events."),
          as_json: bool = JsonOpt) -> None:
    """Keep the index in sync with the files until interrupted (Ctrl-C); one line per applied batch, and one
    per problem a batch introduces or fixes (as `membank doctor` words it)."""
    import signal
    import threading
    import time

    from .daily import Daily
    from .watch import Watcher
    from .watchreport import Report, lines as problem_lines, listed

    registry = open_registry(path, as_json, sync=False)
    bank = next(iter(registry.banks.values()))
    from ..domains.indexing import strongfill

    strongfill.start(bank)  # the strong tier fills in the background while the watcher runs
    stop = threading.Event()

    def show(report: Report) -> None:
        sources = report.sources
        if as_json:
            line = json.dumps({"ok": True, "data": {"changed": sources, "at": clock.now_iso(), **listed(report)}},
                              ensure_ascii=False)
        else:
            shown = ", ".join(sources[:5]) + (f" and {len(sources) - 5} more" if len(sources) > 5 else "")
            line = "\n".join([f"{time.strftime('%H:%M:%S')} {len(sources)} changed: {shown}",
                              *(f"  {shown_line}" for shown_line in problem_lines(report))])
        sys.stdout.write((line if as_json else visible(line)) + "\n")
        sys.stdout.flush()

    watcher = Watcher(bank, on_report=show, debounce=debounce, force_polling=True if polling else None)
    daily = Daily(registry, lambda pid: dispatch(registry, "memory:lifecycle:run", {"projectId": pid, "trigger": "daily"}))
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        watcher.start()
        daily.start()  # the lifecycle's daily run, when a day has passed since the last (then hourly looks)
        status = watcher.status()
        if not as_json:  # a fallback to polling is said once, by the watcher's log warning
            err.print(f"watching {bank.info.name} ({status['mode']}, debounce {debounce:g} s); Ctrl-C stops")
        while not stop.wait(0.5):
            pass
    finally:
        daily.stop()
        watcher.stop()
        registry.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    raise typer.Exit(0)


@command("memory:preferences:ingest")
def feedback(action: str = typer.Option(..., "--action", "-a", help="accept, reject or partial."),
             evidence: str = typer.Option(..., "--evidence", "-e", help="A short label, like 'omit needless words'."),
             run: Optional[str] = typer.Option(None, "--run", help="The AI run the feedback is about."),
             skill: str = typer.Option("cli", "--skill", help="The skill that produced it."),
             tags: list[str] = typer.Option([], "--tag", help="An abstract label (repeatable)."),
             project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    run_id = run or "cli-" + clock.now().strftime("%Y%m%dT%H%M%S%f")
    payload = {"runId": run_id, "skillId": skill, "action": action, "evidenceRef": evidence, "tags": tags}

    def show(d: dict[str, Any]) -> None:
        if d["ignored"]:
            out.print(f"ignored ({d['reason']})")
            return
        out.print(f"signal {d['signalKey']}: {d['count']:g} of {d['threshold']}")
        if d.get("learned"):
            out.print(f"learned preference {d['learned']['id']} in {d['learned']['source']}: ", end="")
            out.print(d["learned"]["content"])
    call(project, "memory:preferences:ingest", payload, as_json, show)


@command("memory:preferences:clear")
def clear_preferences(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "memory:preferences:clear", {}, as_json, lambda d: out.print(f"cleared {d['cleared']} learned preference(s)"))


@command("project:git:setup")
def git_setup(project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    def show(d: dict[str, Any]) -> None:
        out.print("\n".join(f"added the missing lines to {source}" for source in d["written"])
                  or "nothing to add: the git files already have every line membank needs")
    call(project, "project:git:setup", {}, as_json, show)


@app.command()
def bench(quick: bool = typer.Option(False, "--quick", help="Reduced sizes (2,000 and 10,000 files): under a minute."),
          as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON and nothing else."),
          output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the JSON figures to this file."),
          compare: Optional[Path] = typer.Option(None, "--compare", help="An earlier --output file, shown alongside."),
          size: Optional[int] = typer.Option(None, "--size", help="Files in the main corpus (default 10,000)."),
          large: Optional[int] = typer.Option(None, "--large", help="Files in the large corpus (default 100,000; 0 skips)."),
          seed: Optional[int] = typer.Option(None, "--seed", help="The corpus seed (fixed by default)."),
          keep: bool = typer.Option(False, "--keep", help="Keep the generated corpora and print where they are.")) -> None:
    """Measure every performance target (docs/performance.md) on a seeded corpus and print one table."""
    from . import bench as bench_

    opts = bench_.options(quick, size, large, bench_.SEED if seed is None else seed, keep)
    raise typer.Exit(bench_.execute(opts, as_json, output, compare))


@app.command()
def demo(keep: bool = typer.Option(False, "--keep", help="Keep the demo folder and print where it is.")) -> None:
    """Build a sample project in a temporary folder and walk through the main job."""
    import shutil
    import tempfile  # here: only the demo makes a temporary folder

    folder = Path(tempfile.mkdtemp(prefix="membank-demo-"))
    try:
        run_demo(folder, out)
    finally:
        if keep:
            out.print(f"\nthe demo project is in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


# the prompt and settings commands live in modules of their own; importing them registers them,
# after the commands above (the order `membank --help` lists)
from . import capturecli, cardcli, episodecli, manuscriptcli, promptcli, settingscli, storycli, workingcli  # noqa: E402

COMMAND_MODULES = (promptcli, settingscli, storycli, episodecli, workingcli, cardcli, manuscriptcli, capturecli)
# the commands that run until stopped, or for minutes (`index --rebuild` of a large project, the demo)
LONG_RUNNING = ("serve", "mcp", "watch", "bench", "index", "demo")


def main() -> None:
    # What the imports made lives as long as the process: frozen, the collector never walks it again.
    # Otherwise a full collection over it falls inside the command, as the sync allocates: ~25-30 ms of
    # `membank status` at 10,000 files. A long-lived process settles its heap later (kernel/heap.py);
    # the little garbage the imports left is not worth a collection now.
    gc.freeze()
    # A command that calls one channel and ends runs without the cycle collector (imported as well, run
    # as `python -m`): its ~90 young-generation passes were ~5 % of `membank status`'s CPU, over objects
    # that live until the process ends, and the few cycles it leaves go with the process. A sync that
    # reads thousands of files runs without it anyway (domains/indexing/sync.py).
    if sys.argv[1:2] and sys.argv[1] in LONG_RUNNING:
        gc.enable()
    else:
        gc.disable()
    reads.fast(sys.argv[1:])  # returns unless it ran the command
    with only(sys.argv[1:2]):
        app()


if __name__ == "__main__":
    main()
