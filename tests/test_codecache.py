"""The `membank` process's cache of the code dataclasses generate (shells/codecache.py): the classes made
with it behave as without it, a second process compiles nothing, and a damaged or unwritable cache file
changes nothing but the time. Each case runs in a process of its own: install() changes `dataclasses`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROBE = """import sys
from pathlib import Path
from membank.shells import codecache
codecache.install(Path(sys.argv[1]))
import builtins, dataclasses
compiled = []
real = builtins.compile
builtins.compile = lambda *a, **k: compiled.append(1) or real(*a, **k)

@dataclasses.dataclass(frozen=True, order=True)
class Point:
    x: int
    y: str = "林默"

p = Point(1)
assert (repr(p), p == Point(1), p < Point(2), hash(p) == hash(Point(1))) == ("Point(x=1, y='林默')", True, True, True)
try:
    p.x = 2
except dataclasses.FrozenInstanceError:
    pass
else:
    raise AssertionError("not frozen")
print(len(compiled))
"""


def _run(cache: Path, *, bytecode: bool = True) -> int:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if not bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(cache)], capture_output=True, text=True, check=True, env=env
    )
    return int(done.stdout)


def test_no_file_is_written_where_python_writes_no_bytecode(tmp_path: Path) -> None:
    cache = tmp_path / "code.marshal"
    assert _run(cache, bytecode=False) > 0
    assert not cache.exists()


def test_the_second_process_compiles_nothing_and_its_classes_behave_alike(tmp_path: Path) -> None:
    cache = tmp_path / "code.marshal"
    assert _run(cache) > 0 and cache.is_file()
    before = cache.read_bytes()
    assert _run(cache) == 0
    assert cache.read_bytes() == before  # nothing new: not written again


def test_a_damaged_cache_is_compiled_around_and_written_anew(tmp_path: Path) -> None:
    cache = tmp_path / "code.marshal"
    cache.write_bytes(b"\x00not marshal\xff" * 10)
    assert _run(cache) > 0
    assert _run(cache) == 0


def test_a_cache_that_cannot_be_written_is_not_a_failure(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be", "utf-8")
    cache = blocked / "code.marshal"
    assert _run(cache) > 0
    assert _run(cache) > 0 and blocked.read_text("utf-8") == "a file where the folder should be"
    assert [p.name for p in tmp_path.iterdir()] == ["file"]  # no temporary file left


def test_code_kept_without_this_pythons_bytecode_magic_is_not_run(tmp_path: Path) -> None:
    """The file is run as code: like a .pyc, it is used only when it says it holds this Python's bytecode
    (a pre-release or another build shares the cache tag, not the bytecode)."""
    import marshal

    from membank.shells import codecache

    cache = tmp_path / "code.marshal"
    assert _run(cache) > 0
    sources = list(codecache.load(cache))
    assert sources
    foreign = compile("raise RuntimeError('bytecode of another Python')", "<string>", "exec")
    cache.write_bytes(marshal.dumps({source: foreign for source in sources}))  # no magic: whose bytecode?
    assert _run(cache) > 0
    cache.write_bytes(marshal.dumps((b"\x00\x00\r\n", {source: foreign for source in sources})))
    assert _run(cache) > 0
