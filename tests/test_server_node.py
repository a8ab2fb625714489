"""The Node.js smoke test: the sidecar driven the way the Electron app drives it (skipped without node)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SMOKE = Path(__file__).resolve().parent / "node" / "smoke.mjs"
TSC = SMOKE.parent / "node_modules" / ".bin" / "tsc"  # `npm ci --prefix tests/node` installs it (.ci/run does)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_smoke(home: Path) -> None:
    env = {**os.environ, "WRITENOW_HOME": str(home), "MEMBANK_CMD": json.dumps([sys.executable, "-m", "membank.shells.cli"])}
    done = subprocess.run(["node", str(SMOKE)], env=env, capture_output=True, text=True, timeout=180,
                          cwd=SMOKE.parent.parent.parent)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "not ok" not in done.stdout
    assert done.stdout.count("ok - ") >= 9


@pytest.mark.skipif(not TSC.exists(), reason="TypeScript is not installed: run `npm ci --prefix tests/node` (.ci/run does)")
def test_typescript_declarations_type_check() -> None:
    """docs/types/membank.d.ts compiles under `tsc --strict`, and types-check.ts uses it the way the app does
    (its `@ts-expect-error` lines must be errors, so the check cannot pass with types that accept anything)."""
    done = subprocess.run([str(TSC), "-p", str(SMOKE.parent), "--noEmit", "--strict"], capture_output=True, text=True,
                          timeout=120, cwd=SMOKE.parent.parent.parent)
    assert done.returncode == 0, f"tsc found errors:\n{done.stdout}\n{done.stderr}"
