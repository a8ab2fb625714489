"""Waiting on the watcher: poll a condition with a deadline, compare the watched index with a rebuild."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest

from membank.domains.indexing import sync as sync_
from membank import Bank
from membank.index import Index
from membank.index.store import reading
from membank.domains.memories import read

STAMP = "updated: 2026-01-01T00:00:00Z"  # explicit times: a file's mtime never leaks into an answer


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, what: str = "the condition") -> Any:
    """Poll `condition` every 15 ms until it is truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.015)


def state(index: Index) -> dict[str, Any]:
    return {
        "memories": read.query(index, include_deleted=True),
        "cards": index.cards(),
        "skills": index.skills(),
        "diagnostics": [d.to_dict() for d in index.diagnostics()],
    }


def watched(bank: Bank) -> dict[str, Any]:
    with reading():  # a snapshot of its own, as the sidecar reads: never half of a watcher batch
        return state(bank.index)


def fresh(bank: Bank) -> dict[str, Any]:
    """What a full rebuild from the files gives right now."""
    index = Index(":memory:")
    try:
        sync_.sync(index, bank.roots)
        return state(index)
    finally:
        index.close()


def converged(bank: Bank) -> bool:
    return watched(bank) == fresh(bank)


def wait_converged(bank: Bank, timeout: float = 15.0) -> None:
    wait_until(lambda: converged(bank), timeout, "the watched index to equal a fresh rebuild")
