"""`python -m benchmarks`: run every measurement in quality.md (see membank/bench.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from membank.shells.bench import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--repo" not in argv:
        argv += ["--repo", str(Path(__file__).resolve().parent.parent)]
    raise SystemExit(main(argv))
