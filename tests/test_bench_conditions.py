"""What the bench's whole-process and sidecar rows say about how they ran: the bytecode an installed
membank has, and whether the strong tier's background fill ran during the round trips."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from membank.shells.bench import cli, sidecar


def test_whole_process_rows_run_with_the_bytecode_an_install_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = cli.installed_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env
    source = Path(cli.__file__)
    assert Path(importlib.util.cache_from_source(str(source))).is_file()  # compiled as pip compiles it


def test_the_sidecar_row_says_whether_the_fill_ran() -> None:
    filling = {"state": "filling", "done": 320, "total": 10_005}
    assert "fill running (320 of 10,005 vectors" in sidecar.conditions(filling)
    assert sidecar.conditions({"state": "ready", "done": 5, "total": 5}) == "strong tier complete: no background fill"
    assert sidecar.conditions({"state": "unavailable"}) == "strong tier unavailable: no background fill"
    assert sidecar.conditions(None) == "strong tier not reported: no background fill"
