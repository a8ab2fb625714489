"""What keeps the sidecar's resident memory down must not change what it does (docs/performance.md,
"Resident memory"): the vectors' copy read a chunk at a time is the table's, `membank serve` starts
without typer (and pydantic) yet takes the same options, and the malloc calls are safe everywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from membank.index.store import Index
from membank.index.vectors import Vectors
from membank.kernel import heap
from membank.shells.settler import Settler

from .helpers import membank


def test_the_copy_read_by_chunks_is_the_table(tmp_path: Path) -> None:
    index = Index(tmp_path / "index.db")
    try:
        rng = np.random.default_rng(5)
        with index.transaction():
            index.start_vectors("test-model", 8)
            index.put_vectors(list(range(1, 2601)), rng.standard_normal((2600, 8)).astype(np.float32))
        with index.transaction():  # holes in every chunk (sqlite-vec keeps 1,024 slots per chunk)
            for rowid in range(3, 2601, 7):
                index._drop_vector(rowid)
        statements: list[str] = []
        index.db.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
        copy = Vectors.load(index.db, "tag")
        index.db.exec_trace = None
        assert "SELECT rowid, emb FROM vec" not in statements  # the chunk tables, not the slow scan
        table = dict(index.db.execute("SELECT rowid, emb FROM vec").fetchall())
        assert sorted(copy.rowids.tolist()) == sorted(table) and len(table) == 2600 - len(range(3, 2601, 7))
        for rowid, row in zip(copy.rowids.tolist(), copy.matrix):
            assert row.tobytes() == table[rowid]
        assert copy.matrix.flags.c_contiguous and copy.matrix.flags.writeable
    finally:
        index.close()


def test_serve_starts_without_pydantic_and_reads_its_options(sample: Path, home: Path, tmp_path: Path) -> None:
    out = tmp_path / "modules.json"
    code = ("import json, sys\nimport membank.shells.server as server\nout = sys.argv[1]\n"
            "def run(projects, **options):\n"
            "    with open(out, 'w') as f:\n"
            "        json.dump({'modules': sorted(sys.modules), 'projects': [str(p) for p in projects], **options}, f)\n"
            "    return 3\n"
            "server.run = run\n"
            "sys.argv = ['membank', 'serve', '--project', sys.argv[2], '--no-watch', '--log-level', 'error']\n"
            "from membank.shells.cli import main\nmain()\n")
    done = subprocess.run([sys.executable, "-c", code, str(out), str(sample)], env={**os.environ, "WRITENOW_HOME": str(home)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr  # the server's own exit code
    seen = json.loads(out.read_text("utf-8"))
    assert (seen["projects"], seen["watch"], seen["log_level"]) == ([str(sample)], False, "error")
    assert not {m.split(".")[0] for m in seen["modules"]} & {"pydantic", "pydantic_core"}
    helped = membank("serve", "--help", cwd=sample, home=home)
    assert helped.returncode == 0 and "--project" in helped.stdout and "--no-watch" in helped.stdout
    bad = membank("serve", "--no-such-option", cwd=sample, home=home)
    assert bad.returncode == 2 and "--no-such-option" in bad.stderr


def test_release_and_tune_are_safe_and_tune_leaves_the_environments_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    assert heap.release() in (True, False)
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(heap, "_libc_function", lambda name: (lambda param, value: calls.append((param, value)) or 1))
    monkeypatch.delenv("MALLOC_ARENA_MAX", raising=False)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    heap.tune()
    assert calls == [(heap.M_ARENA_MAX, 2)]
    monkeypatch.setattr(heap, "_libc_function", lambda name: None)  # no glibc: nothing, and no error
    heap.tune()
    assert heap.release() is False


def test_the_settler_releases_after_settling(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    released = threading.Event()
    order: list[str] = []
    monkeypatch.setattr(heap, "release", lambda: order.append("release") or released.set() or True)
    settler = Settler(threading.Condition(), lambda: False, quiet=0.05, settle=lambda: order.append("settle") or 1)
    settler.start()
    try:
        settler.changed()
        assert released.wait(10)
        assert order == ["settle", "release"]
    finally:
        settler.stop()
