#!/bin/sh
# CI hook: run the quick benchmark so it never rots. Figures are printed, never asserted: a missed
# target does not fail the build; a crash in the benchmark (or in what it measures) does.
# Usage (from the repository root): sh benchmarks/ci.sh [extra `membank bench` options]
# Set BENCH_JSON=path to keep the figures for comparison (`membank bench --compare path`).
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
if [ -n "${BENCH_JSON:-}" ]; then
    exec "$PYTHON" -m benchmarks --quick --output "$BENCH_JSON" "$@"
fi
exec "$PYTHON" -m benchmarks --quick "$@"
