"""Property: after any sequence of file operations and a quiet period, the watched index equals a
fresh rebuild from the files. Real files, a real watcher, random operations (hypothesis)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membank import Bank
from membank.shells.watch import Watcher
from tests.watching import STAMP, converged, wait_converged, wait_until

pytestmark = pytest.mark.filterwarnings("ignore:Callback with id:RuntimeWarning")

# (bank, path) pairs the operations pick from; folders may vanish and come back
FILES = [
    ("project", "memories/a.md"), ("project", "memories/notes/b.md"), ("project", "memories/notes/c.md"),
    ("project", "memories/deep/x/d.md"), ("project", "characters/e.md"), ("project", "world/places/f.md"),
    ("project", "skills/g.md"), ("global", "memories/h.md"), ("global", "memories/notes/i.md"),
]
FOLDERS = [("project", "memories/notes"), ("project", "memories/deep"), ("project", "memories/moved"),
           ("project", "world/places"), ("global", "memories/notes")]
BODIES = ["Short sentences.", "Lin Mo is wounded.", "林默受伤了。", "The tide turns at dusk."]
KINDS = ["id-1", "id-2", "no-id", "broken", "empty"]
HOWS = ["in-place", "atomic", "vim", "delete-create"]
TEMPS = ["{name}.swp", ".{name}.swp", "{name}~", "4913", ".goutputstream-7QX2", "{name}.tmp"]

target = st.sampled_from(FILES)
op = st.one_of(
    st.tuples(st.just("write"), target, st.sampled_from(KINDS), st.sampled_from(BODIES), st.sampled_from(HOWS)),
    st.tuples(st.just("delete"), target),
    st.tuples(st.just("move"), target, target),
    st.tuples(st.just("rename-folder"), st.sampled_from(FOLDERS), st.sampled_from(FOLDERS)),
    st.tuples(st.just("remove-folder"), st.sampled_from(FOLDERS)),
    st.tuples(st.just("temp"), target, st.sampled_from(TEMPS)),
    st.tuples(st.just("touch"), target),
    st.tuples(st.just("settings"), st.sampled_from(["project", "global"]), st.booleans()),
    st.tuples(st.just("settle")),
)


def content(section: str, kind: str, body: str) -> str:
    if kind == "broken":
        return "---\nid: [unclosed\n---\n" + body + "\n"
    if section == "memories":
        ident = {"id-1": "id: shared-1\n", "id-2": "id: shared-2\n"}.get(kind, "")
        return f"---\n{ident}type: note\n{STAMP}\n---\n" + ("" if kind == "empty" else body) + "\n"
    if section == "skills":
        return f"---\nname: Skill\n---\n{'' if kind == 'empty' else body}\n"
    name = "" if kind == "empty" else f"name: {body.split()[0]}\n"  # a card without a name is an error
    ident = {"id-1": "id: card-1\n", "id-2": "id: card-2\n"}.get(kind, "")
    return f"---\n{ident}{name}{STAMP}\n---\n{body}\n"


def apply(roots: dict[str, Path], step: tuple) -> None:
    kind = step[0]
    if kind == "write":
        (bank, rel), what, body, how = step[1:]
        path = roots[bank] / rel
        data = content(rel.split("/")[0], what, body).encode()
        path.parent.mkdir(parents=True, exist_ok=True)
        if how == "in-place" or not path.exists():
            path.write_bytes(data)
        elif how == "atomic":
            tmp = path.parent / f".{path.name}.tmp-1234"
            tmp.write_bytes(data)
            os.replace(tmp, path)
        elif how == "vim":
            backup = path.parent / (path.name + "~")
            os.replace(path, backup)
            path.write_bytes(data)
            backup.unlink()
        else:
            path.unlink()
            path.write_bytes(data)
    elif kind == "delete":
        (roots[step[1][0]] / step[1][1]).unlink(missing_ok=True)
    elif kind == "move":
        src, dst = roots[step[1][0]] / step[1][1], roots[step[2][0]] / step[2][1]
        if src.is_file() and src != dst:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.replace(src, dst)
    elif kind == "rename-folder":
        src, dst = roots[step[1][0]] / step[1][1], roots[step[2][0]] / step[2][1]
        if src.is_dir() and not dst.exists() and dst not in src.parents and src not in dst.parents:
            dst.parent.mkdir(parents=True, exist_ok=True)
            os.rename(src, dst)
    elif kind == "remove-folder":
        shutil.rmtree(roots[step[1][0]] / step[1][1], ignore_errors=True)
    elif kind == "temp":
        path = roots[step[1][0]] / step[1][1]
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / step[2].format(name=path.name)).write_text("---\nid: temp\n---\nnever indexed\n")
    elif kind == "touch":
        path = roots[step[1][0]] / step[1][1]
        if path.exists():
            os.utime(path)
    elif kind == "settings":
        text = "memory:\n  injectionMaxItems: 3\n" if step[2] else "memory:\n  injectionMaxItems: [not a number\n"
        (roots[step[1]] / "settings.yaml").write_text(text)


def new_project(base: Path) -> tuple[Path, Path]:
    root, home = base / "project", base / "home"
    for section in ("memories", "characters", "world", "skills"):
        (root / ".writenow" / section).mkdir(parents=True)
        (home / section).mkdir(parents=True)
    (root / ".writenow/project.yaml").write_text("id: p-property\nname: property\n")
    (root / ".writenow/.gitignore").write_text(".index/\n")
    return root, home


@settings(max_examples=15, deadline=None, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(op, min_size=1, max_size=30))
def test_any_sequence_of_file_operations_converges(steps: list[tuple]) -> None:
    base = Path(tempfile.mkdtemp(prefix="membank-watch-property-"))
    try:
        root, home = new_project(base)
        bank = Bank(root, home)
        watcher = Watcher(bank, debounce=0.03)
        try:
            watcher.start()
            wait_until(watcher.idle, what="the first reconcile")
            roots = {"project": bank.project.path, "global": home}
            for step in steps:
                if step[0] == "settle":
                    wait_converged(bank)
                else:
                    apply(roots, step)
            wait_converged(bank)
            # and it stays equal: nothing left over that a later batch would change
            done = watcher.batches
            watcher.reconcile()
            wait_until(lambda: watcher.batches > done and watcher.idle(), what="one more reconcile")
            assert converged(bank)
        finally:
            watcher.stop()
            bank.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
