"""membank's logger (kernel/log.py): `logging` imported at the first use, the "membank" logger to every caller."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from membank.kernel.log import log


def test_it_is_the_membank_logger_to_every_caller(caplog: pytest.LogCaptureFixture) -> None:
    assert log.name == "membank" and log.getEffectiveLevel() == logging.getLogger("membank").getEffectiveLevel()
    with caplog.at_level(logging.WARNING, logger="membank"):
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("internal error in %s", "x:y")
    [record] = caplog.records
    assert (record.name, record.getMessage(), record.exc_info is not None) == ("membank", "internal error in x:y", True)


def test_logging_is_imported_at_the_first_use_only() -> None:
    probe = ("import sys\nfrom membank.kernel.log import log\nassert 'logging' not in sys.modules\n"
             "log.debug('nothing')\nprint('logging' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"
