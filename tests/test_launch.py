"""The `membank` process starts numpy's OpenBLAS on one thread unless the user chose (shells/blas.py,
called first by every entry point)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from membank.shells.blas import one_blas_thread


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
             "from membank.shells import blas\n"
             "blas.one_blas_thread()\n"
             "assert 'numpy' not in sys.modules\n"
             "print(os.environ['OPENBLAS_NUM_THREADS'])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "1"


_HOOKED = """import os, runpy, sys
seen = []
class Hook:
    def find_spec(self, name, path=None, target=None):
        if name == "numpy" and not seen:
            seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
sys.meta_path.insert(0, Hook())
"""
_SEEN = """import numpy  # a command that loaded no numpy: the setting must still be there for the one that does
print(seen[0])
"""
NUMPY_SEES = _HOOKED + """module, sys.argv = sys.argv[1], sys.argv[1:]
try:
    runpy.run_module(module, run_name="__main__", alter_sys=True)
except SystemExit:
    pass
""" + _SEEN
# the `membank` console script (pyproject.toml: membank.shells.launch:main), not a `python -m` module
SCRIPT_SEES = _HOOKED + """sys.argv = ["membank", *sys.argv[1:]]
from membank.shells.launch import main
try:
    main()
except SystemExit:
    pass
""" + _SEEN


@pytest.mark.parametrize("module", ["membank.shells.cli", "membank.shells.bench", "benchmarks"])
def test_every_python_m_entry_point_pins_it_before_numpy_loads(module: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", NUMPY_SEES, module, "--help"], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "1"


def test_the_console_script_pins_it_before_numpy_loads() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", SCRIPT_SEES, "--help"], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "1"
