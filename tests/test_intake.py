"""A large sync shares its reading with a second process and embeds beside its writes
(domains/indexing/intakes.py, files/intakeworker.py, domains/indexing/embedahead.py): whatever the
worker does, the index it builds answers exactly as a one-process sync's does."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

import membank
from membank.domains.indexing import intakes
from membank.domains.indexing.refresh import refresh
from membank.files.intakeworker import IntakeWorker
from membank.index.embed import EARLIER
from membank.kernel import cancel
from membank.kernel.errors import CANCELED, MembankError

from .helpers import answers_of, gone, write_memory


def _grow(root: Path) -> None:
    """The sample project plus what a sync must get right in any order: a clash, a broken file, text in
    Chinese, a file that is not UTF-8, an oversized file."""
    for i in range(12):
        write_memory(root, f"bulk/note-{i:02d}.md", f"Bulk note {i} about the lighthouse and the tide.", id=f"m-bulk{i:02d}",
                     type="note", scope="project")
    write_memory(root, "bulk/twin-a.md", "One of two.", id="m-twin", type="fact", scope="project")
    write_memory(root, "bulk/twin-b.md", "The other.", id="m-twin", type="fact", scope="project")
    write_memory(root, "bulk/zh.md", "林默在灯塔下等潮水退去。", id="m-zh", type="fact", scope="project")
    broken = root / ".writenow" / "memories" / "bulk" / "broken.md"
    broken.write_text("---\nid: m-broken\ntype: [fact\n---\nbody\n", encoding="utf-8")
    (root / ".writenow" / "memories" / "bulk" / "latin1.md").write_bytes(b"---\nid: m-l1\n---\ncaf\xe9\n")
    (root / ".writenow" / "memories" / "bulk" / "huge.md").write_bytes(b"---\nid: m-huge\n---\n" + b"x" * (1 << 20))


@pytest.fixture
def twins(tmp_path: Path, sample: Path) -> tuple[Path, Path]:
    _grow(sample)
    other = tmp_path / "other"
    shutil.copytree(sample, other)
    return sample, other


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Every sync shares its reading, in chunks of three; what the worker sent back is counted."""
    monkeypatch.setattr(intakes, "PARALLEL_FROM", 1)
    monkeypatch.setattr(intakes, "CHUNK", 3)
    seen: dict[str, Any] = {"replies": 0, "workers": []}
    start, replies = IntakeWorker.start, IntakeWorker.replies

    def started() -> IntakeWorker | None:
        worker = start()
        seen["workers"].append(worker)
        return worker

    def counted(self: IntakeWorker, wait: float | None) -> Any:
        got = replies(self, wait)
        seen["replies"] += len(got)
        return got
    monkeypatch.setattr(IntakeWorker, "start", staticmethod(started))
    monkeypatch.setattr(IntakeWorker, "replies", counted)
    return seen




def test_a_shared_sync_builds_the_index_a_one_process_sync_builds(twins: tuple[Path, Path], shared: dict[str, Any]) -> None:
    alone, together = twins
    with pytest.MonkeyPatch.context() as m:
        m.setattr(intakes, "PARALLEL_FROM", 10**9)
        expected = answers_of(alone)
    assert answers_of(together) == expected
    assert shared["replies"] > 0  # the worker did take in chunks
    assert all(gone(w.pid) for w in shared["workers"] if w is not None)
    # the previews above were semantic: the vectors made beside the writes are the same vectors
    assert expected["previews"]["None|is the hero injured?"]["mode"] == "semantic"


def test_a_worker_killed_halfway_leaves_its_chunks_to_the_sync(twins: tuple[Path, Path], shared: dict[str, Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    alone, together = twins
    with pytest.MonkeyPatch.context() as m:
        m.setattr(intakes, "PARALLEL_FROM", 10**9)
        expected = answers_of(alone)
    send = IntakeWorker.send
    sent = {"n": 0}

    def send_then_kill(self: IntakeWorker, request: Any) -> bool:
        sent["n"] += 1
        if sent["n"] == 3:
            os.kill(self.pid, signal.SIGKILL)
        return send(self, request)
    monkeypatch.setattr(IntakeWorker, "send", send_then_kill)
    assert answers_of(together) == expected
    assert sent["n"] >= 2


def test_no_second_interpreter_means_one_process(twins: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    alone, together = twins
    monkeypatch.setattr(intakes, "PARALLEL_FROM", 1)
    expected = answers_of(alone)
    monkeypatch.setattr(IntakeWorker, "start", staticmethod(lambda: None))
    assert answers_of(together) == expected


def test_a_canceled_shared_sync_writes_nothing_and_stops_its_worker(sample: Path, shared: dict[str, Any]) -> None:
    _grow(sample)
    bank = membank.open(sample, sync=False)
    try:
        token = cancel.Token()

        def halfway(done: int, total: int) -> None:
            if done == total // 2:
                token.cancel()
        with cancel.installed(token), pytest.raises(MembankError) as stopped:
            refresh(bank, progress=halfway)
        assert stopped.value.code == CANCELED
        assert bank.status()["counts"]["memories"] == 0  # rolled back whole
        assert shared["workers"] and all(gone(w.pid) for w in shared["workers"])
        assert refresh(bank)["added"] > 0  # and the next sync does it all
    finally:
        bank.close()


def test_a_large_sync_leaves_another_models_vectors_alone(sample: Path, shared: dict[str, Any]) -> None:
    bank = membank.open(sample)
    try:
        bank.update_embedding_settings({"model": str(EARLIER)})
        bank.sync(rebuild=True)
        before = bank.status()["model"]["indexModel"]
        bank.update_embedding_settings({"model": None})
        _grow(sample)
        assert refresh(bank)["added"] > 0
        assert bank.status()["model"]["indexModel"] == before  # not mixed with the new model's vectors
    finally:
        bank.close()


def test_the_worker_answers_chunks_in_order(sample: Path) -> None:
    worker = IntakeWorker.start()
    assert worker is not None
    try:
        from membank.files.scan import BankRoot, scan
        root = BankRoot("project", sample / ".writenow")
        found = [s for s in scan(root)[0] if s.section == "memories"][:4]
        for number in range(2):
            assert worker.send((number, root, [(stat, None) for stat in found]))
        got: list[Any] = []
        while len(got) < 2 and worker.alive:
            got += worker.replies(5.0)
        assert [number for number, _ in got] == [0, 1]
        assert all(outcome.parsed.record is not None for outcome in got[0][1])
    finally:
        worker.close()
    assert gone(worker.pid)


def test_what_a_record_is_embedded_as_is_the_same_from_the_file_and_from_the_index(sample: Path) -> None:
    """A large sync embeds the text `prepare` gave beside the parse; a small one the text of the record
    the index holds: one rule, whichever way."""
    import json

    from membank.files.intake import Taken, embed_text, take
    from membank.files.scan import BankRoot, scan

    _grow(sample)
    root = BankRoot("project", sample / ".writenow")
    kinds = {"memories": "memory", "characters": "character", "world": "world"}
    seen = 0
    for stat in scan(root)[0]:
        got = take(root, stat)
        if not isinstance(got, Taken) or got.prepared is None:
            continue
        if stat.section not in kinds:  # a skill is not embedded
            assert got.prepared.embed == ""
            continue
        assert got.prepared.embed == embed_text(kinds[stat.section], json.loads(got.prepared.record_json))
        seen += 1
    assert seen > 20


def test_a_large_sync_gives_the_page_cache_back(sample: Path, shared: dict[str, Any]) -> None:
    _grow(sample)
    bank = membank.open(sample, sync=False)
    try:
        before = bank.index.db.execute("PRAGMA cache_size").fetchall()
        assert refresh(bank)["added"] > 0 and shared["replies"] > 0
        assert bank.index.db.execute("PRAGMA cache_size").fetchall() == before
        assert bank.status()["counts"]["memories"] > 0
    finally:
        bank.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pipe sizes are set on Linux only")
def test_the_pipe_to_the_worker_holds_every_request_queued_ahead() -> None:
    """The sync keeps AHEAD chunks queued with the worker: writing them all must not wait for the worker
    to read one (in a 64 KB pipe the last blocked the sync's writes for most of a chunk)."""
    from membank.files.intakeworker import widen

    read_end, write_end = os.pipe()
    try:
        with os.fdopen(write_end, "wb", buffering=0, closefd=False) as pipe:
            widen(pipe)
        os.set_blocking(write_end, False)
        request = b"x" * (40 * 1024)  # a chunk's request is ~30 KB (256 files)
        for _ in range(intakes.AHEAD):
            assert os.write(write_end, request) == len(request)  # BlockingIOError when the pipe is full
    finally:
        os.close(read_end)
        os.close(write_end)


class _SlowWorker:
    """A worker that answers only the first chunk it was sent, and only when waited for."""

    def __init__(self) -> None:
        self.alive = True
        self.sent: list[int] = []
        self.waits = 0

    def send(self, request: Any) -> bool:
        self.sent.append(request[0])
        return True

    def replies(self, wait: float | None) -> list[Any]:
        if wait is None or not self.sent:
            return []
        self.waits += 1
        number = self.sent.pop(0)
        return [(number, [f"worker {number}"] * intakes.CHUNK)]

    def close(self) -> None:
        self.alive = False


def test_a_sync_takes_back_the_chunks_queued_last_instead_of_waiting_for_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chunk claimed, the worker holding the last few: this process takes them in itself from the
    back, waiting only for the one the worker answers first; every file comes out once, in order."""
    worker = _SlowWorker()
    monkeypatch.setattr(IntakeWorker, "start", staticmethod(lambda: worker))
    monkeypatch.setattr(intakes, "take", lambda root, stat, known: f"here {stat}")
    items: list[Any] = [("root", n, None) for n in range(intakes.AHEAD * intakes.CHUNK)]
    out = list(intakes.taken(items))
    assert [item for item, _ in out] == items
    assert worker.waits == 1
    assert [outcome for _, outcome in out[:intakes.CHUNK]] == ["worker 0"] * intakes.CHUNK
    assert {outcome for _, outcome in out[intakes.CHUNK:]} == {f"here {n}" for n in range(intakes.CHUNK, len(items))}
