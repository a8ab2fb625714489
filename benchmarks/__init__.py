"""Benchmarks for membank: `python -m benchmarks [--quick] [--json]` (the same as `membank bench`).

The runner is `membank/bench.py`, inside the package, so `membank bench` works from any install;
this folder holds what only a checkout has: the sidecar measurement (`sidecar.py`) and the CI hook
(`ci.sh`). See docs/performance.md.
"""
