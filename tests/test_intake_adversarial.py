"""Adversarial cases for the shared intake of a large sync (intakes.py, intakeworker.py, embedahead.py):
whatever goes wrong around the worker, the index comes out as a one-process sync builds it, and
nothing is left behind or printed."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

import membank
from membank.domains.indexing import intakes
from membank.domains.indexing.refresh import refresh
from membank.files.intakeworker import IntakeWorker

from .helpers import answers, answers_of, gone, write_memory


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every sync shares its reading, in chunks of three; workers started and thread failures are kept."""
    monkeypatch.setattr(intakes, "PARALLEL_FROM", 1)
    monkeypatch.setattr(intakes, "CHUNK", 3)
    seen: dict[str, Any] = {"workers": [], "thread_errors": []}
    start = IntakeWorker.start

    def started() -> IntakeWorker | None:
        worker = start()
        seen["workers"].append(worker)
        return worker
    monkeypatch.setattr(IntakeWorker, "start", staticmethod(started))
    monkeypatch.setattr(threading, "excepthook", lambda args: seen["thread_errors"].append(args.exc_type))
    return seen



def _one_process(root: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(intakes, "PARALLEL_FROM", 10**9)
        return answers_of(root)


def _many(root: Path, n: int = 10, prefix: str = "bulk") -> None:
    for i in range(n):
        write_memory(root, f"{prefix}/note-{i:02d}.md", f"{prefix} note {i} about the lighthouse.", id=f"m-{prefix}{i:02d}",
                     type="note", scope="project")


def _twin(tmp_path: Path, sample: Path) -> Path:
    other = tmp_path / "other"
    shutil.copytree(sample, other)
    return other


def test_a_worker_whose_stdout_is_polluted_is_given_up_on_quietly(tmp_path: Path, sample: Path, shared: dict[str, Any],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Something the child imports prints to stdout (here a sitecustomize): the frames are garbage; the
    parent takes the chunks back, and no thread dies with a traceback on the user's terminal."""
    _many(sample)
    other = _twin(tmp_path, sample)
    expected = _one_process(sample)
    noisy = tmp_path / "noisy"
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text("print('Warning: something was deprecated')\n", encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", str(noisy))
    assert answers_of(other) == expected
    assert shared["workers"] and shared["thread_errors"] == []


def _global_memory(home: Path, rel: str, body: str, id_: str) -> None:
    path = home / "memories" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: {id_}\ntype: preference\nscope: global\n---\n{body}\n", encoding="utf-8")


def test_both_banks_with_many_files_are_shared_without_mixing(tmp_path: Path, sample: Path, home: Path,
                                                              shared: dict[str, Any]) -> None:
    """Chunks name one bank folder: a run of global files and a run of project files (of a length no
    chunk divides) come out each under its own bank, as a one-process sync reads them."""
    _many(sample, 7)
    for i in range(8):
        _global_memory(home, f"g/pref-{i}.md", f"Global preference {i}: short chapters.", f"m-g{i}")
    _global_memory(home, "g/twin.md", "Same id as a project memory.", "m-bulk00")
    other = _twin(tmp_path, sample)
    expected = _one_process(sample)
    got = answers_of(other)
    assert got == expected
    assert "global:memories/g/pref-0.md" in str(got["list"])


def _edit_all(root: Path, home: Path) -> None:
    """Changes a second sync must take in: an edit, a touch (same bytes, new mtime), a removal, a file
    that comes back at the path of a removed memory (its tombstone), a new file."""
    memories = root / ".writenow" / "memories" / "bulk"
    (memories / "note-01.md").write_text("---\nid: m-bulk01\ntype: note\nscope: project\n---\nEdited.\n", encoding="utf-8")
    st = (memories / "note-02.md").stat()
    os.utime(memories / "note-02.md", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    (memories / "note-03.md").unlink()
    write_memory(root, "bulk/new.md", "A new note.", id="m-new", type="note", scope="project")
    _global_memory(home, "g/pref-0.md", "Global preference 0, edited.", "m-g0")
    for path in (memories / "note-01.md", memories / "new.md", home / "memories" / "g" / "pref-0.md"):
        os.utime(path, ns=(AT, AT))  # the twins' files differ in nothing, not even the mtime a memory shows


AT = 1_800_000_000 * 10**9


def test_a_warm_shared_sync_updates_removes_and_brings_back_as_one_process_does(
        tmp_path: Path, sample: Path, home: Path, shared: dict[str, Any]) -> None:
    _many(sample, 9)
    for i in range(4):
        _global_memory(home, f"g/pref-{i}.md", f"Global preference {i}.", f"m-g{i}")
    other = _twin(tmp_path, sample)
    other_home = tmp_path / "other-home"
    shutil.copytree(home, other_home)
    states = []
    for root, home in ((sample, home), (other, other_home)):
        with pytest.MonkeyPatch.context() as m:
            m.setenv("WRITENOW_HOME", str(home))
            if root == sample:
                m.setattr(intakes, "PARALLEL_FROM", 10**9)
            bank = membank.open(root)
            try:
                _edit_all(root, home)
                first = refresh(bank)
                back = write_memory(root, "bulk/note-03.md", "note-03 is back.", id="m-bulk03", type="note", scope="project")
                os.utime(back, ns=(AT, AT))
                second = refresh(bank)
                states.append((first, second, answers(bank)))
            finally:
                bank.close()
    (f1, s1, a1), (f2, s2, a2) = states
    strip = lambda r: {k: v for k, v in r.items() if k != "tookMs"}  # noqa: E731
    assert (strip(f1), strip(s1)) == (strip(f2), strip(s2))
    assert a1 == a2



def _odd(root: Path, tmp_path: Path) -> None:
    memories = root / ".writenow" / "memories" / "odd"
    memories.mkdir()
    os.mkfifo(memories / "pipe.md")
    write_memory(root, "odd/target.md", "The target.", id="m-target", type="note", scope="project")
    (memories / "inside.md").symlink_to(memories / "target.md")
    outside = tmp_path / "outside.md"
    outside.write_text("---\nid: m-out\n---\nout\n", encoding="utf-8")
    (memories / "out.md").symlink_to(outside)
    (memories / "loop.md").symlink_to(memories / "loop.md")
    os.mkdir(memories / "folder.md")
    write_memory(root, "odd/folder.md/in.md", "In a folder named like a file.", id="m-in", type="note", scope="project")
    for name in ("a.md~", ".#x.md", "#x.md#", "4913", "x.md.swp"):
        (memories / name).write_text("---\nid: m-junk\n---\njunk\n", encoding="utf-8")
    write_memory(root, "odd/UPPER.MD", "Upper case suffix.", id="m-upper", type="note", scope="project")
    os.makedirs(bytes(memories) + b"/bad-\xff", exist_ok=True)
    with open(bytes(memories) + b"/name-\xff.md", "wb") as f:
        f.write(b"---\nid: m-badname\n---\nbad name\n")
    for path in memories.rglob("*"):
        if path.is_file() and not path.is_symlink():
            os.utime(path, ns=(AT, AT))


def test_odd_files_in_the_shared_path_read_as_in_one_process(tmp_path: Path, sample: Path, shared: dict[str, Any]) -> None:
    """A FIFO, links in and out of the bank, a name that is not UTF-8, editor leftovers, `X.MD`, a folder
    named `x.md`: the walk and the worker make of them what one process makes."""
    _many(sample, 5)
    other = _twin(tmp_path, sample)
    for root in (sample, other):
        _odd(root, tmp_path)
    expected = _one_process(sample)
    got = answers_of(other)
    assert got == expected
    assert all(gone(w.pid) for w in shared["workers"] if w is not None)


def test_files_changed_after_the_scan_are_read_as_the_worker_finds_them(tmp_path: Path, sample: Path,
                                                                        shared: dict[str, Any],
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the worker gets its first chunk: one file is deleted, one rewritten, one swapped for a
    FIFO. The sync takes them as they are then; the next sync leaves the index as a fresh build of
    the final files."""
    _many(sample, 9)
    memories = sample / ".writenow" / "memories" / "bulk"
    send = IntakeWorker.send
    state = {"done": False}

    def meddle(self: IntakeWorker, request: Any) -> bool:
        if not state["done"]:
            state["done"] = True
            (memories / "note-00.md").unlink()
            (memories / "note-01.md").write_text("---\nid: m-bulk01\ntype: note\nscope: project\n---\nRewritten since "
                                                 "the scan, and longer than before.\n", encoding="utf-8")
            (memories / "note-02.md").unlink()
            os.mkfifo(memories / "note-02.md")
        return send(self, request)
    monkeypatch.setattr(IntakeWorker, "send", meddle)
    bank = membank.open(sample)
    try:
        assert state["done"]
        listed = str(bank.list_memories(include_deleted=True))
        assert "Rewritten since the scan" in listed and "bulk note 0 " not in listed
        refresh(bank)
        got = answers(bank)
    finally:
        bank.close()
    fifo = memories / "note-02.md"
    fifo.unlink()
    fresh = _twin(tmp_path, sample)
    shutil.rmtree(fresh / ".writenow" / ".index", ignore_errors=True)
    os.mkfifo(fresh / ".writenow" / "memories" / "bulk" / "note-02.md")
    assert _one_process(fresh) == got


def test_a_sync_failing_halfway_rolls_back_and_stops_its_worker(sample: Path, shared: dict[str, Any]) -> None:
    _many(sample, 9)
    bank = membank.open(sample, sync=False)
    try:
        def broken(done: int, total: int) -> None:
            if done == total // 2:
                raise RuntimeError("a progress callback that fails")
        with pytest.raises(RuntimeError):
            refresh(bank, progress=broken)
        assert bank.status()["counts"]["memories"] == 0
        assert shared["workers"] and all(gone(w.pid) for w in shared["workers"])
        assert refresh(bank)["added"] > 0
    finally:
        bank.close()


def test_a_folder_named_membank_in_the_working_directory_does_not_break_the_worker(
        tmp_path: Path, sample: Path, shared: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m` puts the working directory first on the child's path: a writer's folder called
    `membank` there must not stand in for the package."""
    _many(sample, 9)
    other = _twin(tmp_path, sample)
    expected = _one_process(sample)
    cwd = tmp_path / "cwd"
    (cwd / "membank").mkdir(parents=True)
    (cwd / "membank" / "__init__.py").write_text("raise ImportError('not the membank package')\n", encoding="utf-8")
    monkeypatch.chdir(cwd)
    replies = IntakeWorker.replies
    got: list[Any] = []

    def counted(self: IntakeWorker, wait: float | None) -> Any:
        out = replies(self, wait)
        got.extend(out)
        return out
    monkeypatch.setattr(IntakeWorker, "replies", counted)
    assert answers_of(other) == expected
    assert got, "the worker answered no chunk: it could not import membank"
