"""CLI runs in processes of their own, started cheaply: a forkserver imports membank.shells.cli once and
forks each run from it, so twenty processes at once cost twenty forks, not twenty interpreter starts.
Each run is still a separate process with its own files and locks, as `membank` from a shell is."""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

from membank.shells.cli import app

_context = multiprocessing.get_context("forkserver")
_context.set_forkserver_preload(["membank.shells.cli"])


def _run(args: list[str], cwd: str, env: dict[str, str], out: str) -> None:
    os.chdir(cwd)
    os.environ.update(env)
    with open(out, "w", encoding="utf-8") as sink:
        os.dup2(sink.fileno(), 1)
    sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
    try:
        app(args, prog_name="membank")
    finally:
        sys.stdout.flush()


class CliProcess:
    """`membank <args>` running in a process of its own; `finish()` gives (exit code, stdout)."""

    def __init__(self, *args: str, cwd: Path, home: Path, out: Path, env: dict[str, str] | None = None):
        self.out = out
        extra = {"WRITENOW_HOME": str(home), **(env or {})}
        self.process = _context.Process(target=_run, args=(list(args), str(cwd), extra, str(out)))
        self.process.start()

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    @property
    def ended(self) -> bool:
        return not self.process.is_alive()

    def finish(self, timeout: float = 180) -> tuple[int, str]:
        self.process.join(timeout)
        assert self.process.exitcode is not None, "the CLI process did not end"
        return self.process.exitcode, self.out.read_text("utf-8")
