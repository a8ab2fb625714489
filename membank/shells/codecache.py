"""The methods `dataclasses` writes for each class (`__init__`, `__repr__`, `__eq__`, `__hash__`, a frozen
class's `__setattr__`, …), compiled once and kept between `membank` processes.

`dataclasses` makes them at import time from source text it builds and hands to `exec`: parsing and
compiling that text was ~21 % of a whole `membank status` process (~290 M of 1,390 M instructions at
10,000 files; every reading command imports ~80 dataclasses). The text alone decides the code that comes
out (`exec` compiles it as `<string>`, with no `__future__` flags: dataclasses.py has none), so the code
is compiled once, kept under the text in a marshal file beside membank's bytecode, and looked up by the
next process; the functions are still made by `exec` in the class's own namespace, as before.

Only the `membank` command installs it (launch.py, `python -m membank.shells.cli`): a program that
imports membank keeps its `dataclasses` untouched. A file that cannot be read, is damaged or comes from
another Python (it holds its bytecode's magic number, as a `.pyc` does) is ignored (the code is compiled
as without it); one that cannot be written (a read-only install) is not written, nor is it under
PYTHONDONTWRITEBYTECODE. Like `.pyc` files, the file is trusted as the package's own."""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
import types
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any

FILE = f"dataclass-code.{sys.implementation.cache_tag}.marshal"
CACHE = Path(__file__).resolve().parents[1] / "__pycache__" / FILE  # membank/__pycache__/
MOST = 2048  # entries kept: what this process used first, then the older ones (a changed class leaves its old
# text). Loading costs ~19 k instructions an entry (~11 M for the ~580 of the reading commands and the tests)


def load(path: Path) -> dict[str, Any]:
    """The code kept at `path` by its source text; {} when there is none or it cannot be used."""
    try:
        magic, found = marshal.loads(path.read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if magic != MAGIC_NUMBER or not isinstance(found, dict):
        return {}  # bytecode of another Python (the cache tag is shared by its pre-releases and builds)
    return {k: v for k, v in found.items() if isinstance(k, str) and type(v) is types.CodeType}


def install(path: Path = CACHE) -> None:
    """From now on, the code `dataclasses` compiles comes from `path` when it holds it; what was compiled
    anew is written there when the process ends."""
    import dataclasses

    if sys.implementation.cache_tag is None or "exec" in vars(dataclasses):
        return  # no bytecode for this Python, or installed already
    kept = load(path)
    used: dict[str, Any] = {}

    def cached_exec(source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if type(source) is str:
            code = kept.get(source)
            if code is None:
                code = compile(source, "<string>", "exec", dont_inherit=True)  # exec(str) compiles so
            used[source] = code
            source = code
        builtins.exec(source, globals, locals)

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]  # the name its module-level functions call
    atexit.register(save, path, kept, used)


def save(path: Path, kept: dict[str, Any], used: dict[str, Any]) -> None:
    """Write what this process used and the older entries (up to MOST), when it compiled anything new."""
    used = dict(used)  # a daemon thread may still define a class while the process exits
    if sys.dont_write_bytecode or all(source in kept for source in used):
        return  # PYTHONDONTWRITEBYTECODE (-B) keeps this file unwritten as it keeps the .pyc files
    merged = dict(used)
    for source, code in kept.items():
        if len(merged) >= MOST:
            break
        merged.setdefault(source, code)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(exist_ok=True)
        temporary.write_bytes(marshal.dumps((MAGIC_NUMBER, merged)))
        os.replace(temporary, path)  # another process's write is replaced whole, never mixed
    except (OSError, ValueError):
        try:
            temporary.unlink()
        except OSError:
            pass
