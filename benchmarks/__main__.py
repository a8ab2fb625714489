"""`python -m benchmarks`: run every measurement in quality.md (the runner is membank/shells/bench/)."""

from __future__ import annotations

from membank.shells.bench import main

if __name__ == "__main__":
    raise SystemExit(main())
