"""The `membank` command (pyproject.toml's script): a reading command the fast path takes
(clireads.py), else typer's app (cli.py), as `python -m membank.shells.cli` runs them."""

from __future__ import annotations

import gc
import sys

from .blas import one_blas_thread


def main() -> None:
    one_blas_thread()
    gc.disable()  # no collection while the imports run; cli.main decides for the command
    from .codecache import install

    install()  # the dataclasses' methods compiled once, not by every process (codecache.py)
    from .clireads import fast

    fast(sys.argv[1:])  # returns unless it ran the command
    from .cli import main as full

    full()
