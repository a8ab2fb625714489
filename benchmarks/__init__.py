"""Benchmarks for membank: `python -m benchmarks [--quick] [--json]` (the same as `membank bench`).

The runner and the sidecar harness are `membank/shells/bench/`, inside the package, so `membank
bench` works from any install; this folder holds thin command lines over them (`__main__.py`,
`sidecar.py`), the CI hook (`ci.sh`) and the retrieval-quality check (`retrieval.py`). See
docs/performance.md.
"""
