"""The floor, side by side (issue 19): membank's cold index against a plain reference script on the
same corpus in the same run, both as whole processes timed from spawn to exit.

The script is the repository's `benchmarks/floor.py` (read, PyYAML's C loader, model2vec, FTS5,
vec0, one transaction; no membank code). membank's side is `membank index` on a copy of the
corpus without its `.index/` (the open bank of the other rows keeps its own). Run by run, the two
alternate which goes first; the ratio is membank's files/s over the floor's in the same run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from ...index.embed import BUNDLED
from .cli import BYTECODE, installed_env
from .corpus import Corpus
from .rows import Row, say

# the script is a checkout's file (benchmarks/ is not in the package); editable installs find it too
SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "floor.py"


def _spawn(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, *args], capture_output=True, env=env)
    return time.perf_counter() - started, done


def _failed(what: str, done: subprocess.CompletedProcess[bytes]) -> str:
    return f"{what} failed: exit {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}"


def _added(stdout: bytes) -> int:
    """Files `membank index --json` added (0 when its output is not the envelope)."""
    try:
        return int(json.loads(stdout)["data"]["added"])
    except (ValueError, KeyError, TypeError):
        return 0


def floor_rows(corpus: Corpus, runs: int, work: Path, quiet: bool, script: Path = SCRIPT) -> list[Row]:
    """Three rows: membank's cold index as a whole process, the floor's, and their ratio run by run."""
    size = corpus.files
    product = Row("cold_index_process", "cold index as a whole process (`membank index`, start-up and model load "
                  "included)", "files/s", size, higher_is_better=True,
                  note=f"timed from spawn to exit, on a copy of the corpus without its index; {BYTECODE}")
    floor = Row("cold_index_floor", "the floor: a plain script as a whole process (read, C YAML, embed, FTS5, vec0)",
                "files/s", size, higher_is_better=True,
                note="benchmarks/floor.py: no hashing, validation, diagnostics or membank code; one thread in Python; "
                     "timed from spawn to exit")
    ratio = Row("cold_index_vs_floor", "cold index ÷ the floor (whole processes, run by run)", "ratio", size,
                target=1.0, higher_is_better=True, target_text="p95 ≥ 1.0",
                note="membank's files/s over the floor's in the same run; p95 is the slow end (with 3 runs, the worst)")
    rows = [product, floor, ratio]
    if not script.is_file():
        for row in rows:
            row.note = f"not run: {script.name} is a checkout's file (benchmarks/), not installed with the package"
        return rows
    copy = work / "floor-copy"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(corpus.root, copy, ignore=shutil.ignore_patterns(".index"))
    database = work / "floor.sqlite"
    index_args = ["-m", "membank.shells.cli", "index", str(copy), "--json"]
    floor_args = [str(script), str(copy), "--model", str(BUNDLED), "--db", str(database)]
    env = installed_env()  # both sides as installed: the floor's packages have their .pyc, so has membank
    try:
        for i in range(runs):
            took: dict[str, float] = {}
            for side in (("membank", "floor") if i % 2 == 0 else ("floor", "membank")):
                if side == "membank":
                    shutil.rmtree(copy / ".writenow" / ".index", ignore_errors=True)
                    seconds, done = _spawn(index_args, env)
                    if done.returncode != 0 or _added(done.stdout) < size:
                        product.note = _failed("membank index", done)
                        return rows
                else:
                    seconds, done = _spawn(floor_args, env)
                    if done.returncode != 0:
                        floor.note = _failed("the floor", done)
                        return rows
                took[side] = seconds
            product.samples.append(size / took["membank"])
            floor.samples.append(size / took["floor"])
            ratio.samples.append(took["floor"] / took["membank"])
            say(quiet, f"floor {i + 1}/{runs}: membank index {took['membank']:.2f} s, the floor {took['floor']:.2f} s "
                       f"({ratio.samples[-1]:.2f}×)")
    finally:
        shutil.rmtree(copy, ignore_errors=True)
        for suffix in ("", "-journal", "-wal", "-shm"):
            Path(str(database) + suffix).unlink(missing_ok=True)
    return rows
