"""numpy's BLAS threads for a membank process: one, set by every entry point before numpy loads
(launch.py's console script, `python -m membank.shells.cli`, the bench package). Imports nothing of
membank, so the bench can call it without importing the CLI."""

from __future__ import annotations

import os


def one_blas_thread() -> None:
    """numpy's OpenBLAS starts a thread per core at import, and after a product they spin: on a busy
    machine they take the core the next request's model or sync needs (a replayed strong preview's CPU
    50-62 -> 22-28 ms with one thread alone). membank's own products are one-thread einsums; the few `@` left (episodes,
    the manuscript's static search) are small. One thread also makes their sums the same on every
    machine. Set before numpy loads; a value the user set is kept."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
