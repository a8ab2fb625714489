"""The `membank` process starts numpy's OpenBLAS on one thread unless the user chose (shells/launch.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from membank.shells.launch import one_blas_thread


def test_one_blas_thread_is_set_when_unset_and_a_users_choice_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    one_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


def test_the_launcher_pins_it_before_anything_loads_numpy() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    probe = ("import os, sys\n"
             "from membank.shells import launch\n"
             "launch.one_blas_thread()\n"
             "assert 'numpy' not in sys.modules\n"
             "print(os.environ['OPENBLAS_NUM_THREADS'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "1"
