"""The sweep of a killed writer's temporary files (files/write.py) reaches folders whose names are not
UTF-8: the sync's scan does not walk them (it reports them), so it hands them to the sweep, which walks
them itself."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from membank import Bank
from membank.files import write

TEMP = b".tide.md.0123abcd.membank-tmp"


def _made(folder: bytes) -> bytes:
    try:
        os.makedirs(folder, exist_ok=True)
    except (OSError, UnicodeError):
        pytest.skip("this file system takes only UTF-8 names")
    path = os.path.join(folder, TEMP)
    with open(path, "wb"):
        pass
    then = time.time() - 3600
    os.utime(path, (then, then))
    return path


def test_a_folder_named_in_no_utf8_is_swept_too(bank: Bank, sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(write, "STALE_AFTER", -5.0)  # a ctime cannot be set back: the sweep looks 5 s ahead
    memories = os.fsencode(sample / ".writenow" / "memories")
    stale = [_made(os.path.join(memories, b"bad\xff")), _made(os.path.join(memories, b"bad\xff", b"deeper")),
             _made(os.path.join(memories, b"good"))]
    kept = _made(os.path.join(memories, b".hidden\xff"))  # hidden folders are not entered
    envelope = bank.call("index:sync", {})
    assert envelope["ok"], envelope
    assert [os.path.exists(p) for p in stale] == [False, False, False]
    assert os.path.exists(kept)
    problems = bank.call("index:diagnostics", {})["data"]["items"]
    assert any("bad\\xff" in p["source"] for p in problems)  # the folder itself is still reported
