"""The bench's rows for the CLI (issue 19): each reading command as a whole process on the main
corpus — interpreter start, imports, project open (its stat-only sync) and the command — as a writer
at a terminal waits for it. Target: 300 ms each.

The processes run with the bytecode an installed membank has: `pip install` compiles every module
(.pyc beside the source), and Python writes what is missing at the first import. A process started
under PYTHONDONTWRITEBYTECODE (some shells and CI set it) with no .pyc written would instead compile
all ~300 of membank's modules from source each time (~0.35 s), which no user's command pays. The
first run of each command, not counted, also writes what shells/codecache.py keeps (the dataclasses'
methods compiled), as a user's first command does."""

from __future__ import annotations

import compileall
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .rows import Row

TARGET_MS = 300.0
BYTECODE = "bytecode as installed: membank compiled (compileall, as pip does), PYTHONDONTWRITEBYTECODE unset"


def installed_env() -> dict[str, str]:
    """This process's environment for a whole-process row, with membank's .pyc written as `pip install`
    writes them and PYTHONDONTWRITEBYTECODE dropped, so the warm-up run writes any other module's."""
    package = Path(__file__).resolve().parents[2]  # membank/
    compileall.compile_dir(package, quiet=2)  # writes even under that variable
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _commands(root: Path, memory_id: str) -> list[tuple[str, list[str]]]:
    where = str(root)
    return [("status", ["status", where]), ("doctor", ["doctor", where]), ("show", ["show", memory_id, "-C", where]),
            ("list_preference", ["list", where, "--type", "preference"]),
            ("settings_get", ["settings", "get", "-C", where]), ("skills", ["skills", "-C", where])]


def cli_rows(bank: Any, root: Path, runs: int, size: int) -> list[Row]:
    memory_id = bank.call("memory:list", {"type": "fact"})["data"]["items"][0]["id"]
    rows = []
    env = installed_env()
    for key, args in _commands(root, memory_id):
        row = Row(f"cli_{key}", f"`membank {' '.join(a if a != str(root) else 'P' for a in args)}` (whole process)",
                  "ms", size, target=TARGET_MS, target_text=f"p95 ≤ {TARGET_MS:g} ms",
                  note=f"interpreter start, imports, project open and the command; output to a pipe; {BYTECODE}")
        for _ in range(runs + 1):  # the first warms the page cache (and writes any .pyc still missing)
            started = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "membank.shells.cli", *args], capture_output=True, env=env)
            took = (time.perf_counter() - started) * 1000
            if done.returncode not in (0, 1):  # doctor exits 1 when a file has an error
                row.note = f"failed: exit {done.returncode}: {done.stderr.decode(errors='replace')[-200:]}"
                break
            row.samples.append(took)
        row.samples = row.samples[1:]
        rows.append(row)
    return rows
