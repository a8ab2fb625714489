"""`membank bench`: every performance target in quality.md, measured on a seeded corpus, in one table.

The bench lives in the package (not in the repository's `benchmarks/`) so that `membank bench`
works wherever membank is installed; `python -m benchmarks` in a checkout calls the same `main`.
Its parts, by noun:

- `corpus`: the seeded corpus generator (memory, character and world files, a tenth in Chinese);
- `measure`: the rows on an open project (cold index, syncs, previews, writes), through the
  project's public surface only (`open_project`, `bank.call`, `bank.sync()`, `bank.index`, ...);
- `watcher`: the watcher row (a real watchdog observer on the real files);
- `sidecar`: the sidecar harness, a real `membank serve` subprocess spoken to over its pipes
  (also a command of its own: `python -m membank.shells.bench.sidecar`);
- `rows`, `report`: a row's figures, the table and the JSON; `options`, `runner`: the run itself.

Everything runs in a temporary folder (deleted afterwards) with `WRITENOW_HOME` pointing into it,
so the writer's global bank is never touched. The corpus is generated from a fixed seed: every run
sees the same files. See docs/performance.md for the figures and what they mean.
"""

from __future__ import annotations

from ..blas import one_blas_thread

# Before the parts below load numpy: `python -m membank.shells.bench` and `python -m benchmarks`
# import this package first, and must measure under the one-thread BLAS `membank bench` has (blas.py).
one_blas_thread()

from .corpus import QUERIES, SEED, Corpus, generate  # noqa: E402
from .options import Options, options  # noqa: E402
from .report import Result, table  # noqa: E402
from .rows import Row  # noqa: E402
from .runner import ORDER, execute, main, run  # noqa: E402

__all__ = ["ORDER", "QUERIES", "SEED", "Corpus", "Options", "Result", "Row", "execute", "generate", "main", "options",
           "run", "table"]
