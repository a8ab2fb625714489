"""`python benchmarks/sidecar.py [--memories N] [--samples N] [--project PATH] [--json]`: the sidecar's
round trip and memory on a real `membank serve`. The harness is membank/shells/bench/sidecar.py (the
same as `python -m membank.shells.bench.sidecar`); `membank bench` runs it for its sidecar rows."""

from __future__ import annotations

from membank.shells.bench.sidecar import main

if __name__ == "__main__":
    raise SystemExit(main())
