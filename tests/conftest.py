"""Shared fixtures: an isolated global bank, a copy of the sample project, an open bank on it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

import membank
from membank import Bank

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# the suite never pays for the strong tier's real model (recall.md, Tiers): off in every process the
# tests start, sidecars and CLI runs included; tests/test_strong_tier.py names its fake encoder
os.environ.setdefault("MEMBANK_STRONG_ENCODER", "off")


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own global bank; nothing touches the real ~/.writenow."""
    folder = tmp_path / "global-bank"
    monkeypatch.setenv("WRITENOW_HOME", str(folder))
    return folder


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A fresh copy of fixtures/sample-project (its root folder)."""
    dest = tmp_path / "sample"
    shutil.copytree(FIXTURES / "sample-project", dest, ignore=shutil.ignore_patterns(".index"))
    return dest


@pytest.fixture
def bank(sample: Path) -> Iterator[Bank]:
    opened = membank.open(sample)
    yield opened
    opened.close()
