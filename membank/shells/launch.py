"""The `membank` command (pyproject.toml's script): a reading command the fast path takes
(clireads.py), else typer's app (cli.py), as `python -m membank.shells.cli` runs them."""

from __future__ import annotations

import gc
import os
import sys


def one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per core at import, and after a product they spin: on a busy
    machine they take the core the next request's model or sync needs (the strong preview's CPU 50 -> 14
    ms with them gone). membank's own products are one-thread einsums; the few `@` left (episodes,
    the manuscript's static search) are small. One thread also makes their sums the same on every
    machine. Set before numpy loads; a value the user set is kept."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    one_blas_thread()
    gc.disable()  # no collection while the imports run; cli.main decides for the command
    from .clireads import fast

    fast(sys.argv[1:])  # returns unless it ran the command
    from .cli import main as full

    full()
