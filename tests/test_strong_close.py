"""The strong model's background fills (the memories' vectors, domains/indexing/strongfill.py; the
passages' windows, domains/manuscript/strong.py) against a close, the interpreter's exit and a project
gone from disk: a close stops both and waits for the chunk inside the model (a worker left inside
onnxruntime while the process exits aborts it); a project gone stops the fill quietly, and it fills again
once the folder is back. A fake encoder (tests/strongfake.py) blocks on an event: no sleeps."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import Iterator

import pytest

import membank
from membank import Bank
from membank.domains.indexing import strongfill
from membank.domains.manuscript import strong
from membank.kernel import background

from . import strongfake
from .helpers import write_memory, writer_in_use


@pytest.fixture(autouse=True)
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("MEMBANK_STRONG_ENCODER", "tests.strongfake:load")
    strongfake.GATE.set()
    strongfake.ENTERED.clear()
    strongfake.CALLS["passages"] = 0
    strongfake.CALLERS.clear()
    strongfake.HOLD_AFTER[0] = 0
    yield
    strongfake.GATE.set()


def _fills(bank: Bank) -> list[threading.Thread]:
    names = {f"membank-strong-{bank.info.id}", f"membank-passages-{bank.info.id}"}
    return [t for t in threading.enumerate() if t.name in names and t.is_alive()]


def _many(root: Path, n: int = 40) -> None:
    for i in range(n):  # more than one batch of memories
        write_memory(root, f"many/m{i:02d}.md", f"Memory number {i} about the harbour", id=f"m-many-{i:02d}", type="note")


def test_a_close_stops_both_fills_and_waits_for_the_chunk_inside_the_model(sample: Path) -> None:
    _many(sample)
    strongfake.GATE.clear()  # the memories' first chunk is held inside the model
    bank = membank.open(sample)
    assert strongfake.ENTERED.wait(30)
    bank.search_manuscript(query_text="harbour")  # the passages' filler starts (and waits for the memories')
    filler = strongfill.filler(bank)
    closer = threading.Thread(target=bank.close)
    closer.start()
    assert filler.stopping.wait(30)
    assert closer.is_alive()  # the encoder is still inside the model: the close waits for it
    strongfake.GATE.set()
    closer.join(30)
    assert not closer.is_alive()
    assert not _fills(bank)  # neither fill's thread outlives the close
    assert strongfake.CALLERS == [f"membank-strong-{bank.info.id}"]  # the batch stopped after its chunk


def test_a_close_of_a_project_gone_stops_the_passages_fill(sample: Path) -> None:
    bank = membank.open(sample)
    try:
        bank.search_manuscript(query_text="harbour")  # the passages' filler starts
        assert strong.settle(bank)
        shutil.rmtree(sample / ".writenow")  # its closers are dropped (nothing archived into a folder gone)
    finally:
        bank.close()
    assert not _fills(bank)
    assert not (sample / ".writenow").exists()


def test_at_exit_every_fill_is_stopped_and_waited_for(sample: Path) -> None:
    strongfake.GATE.clear()
    bank = membank.open(sample)
    try:
        assert strongfake.ENTERED.wait(30)
        filler = strongfill.filler(bank)
        releaser = threading.Thread(target=lambda: filler.stopping.wait(30) and strongfake.GATE.set())
        releaser.start()
        background.stop_all()  # what the interpreter runs at exit, before it tears the modules down
        releaser.join(30)
        assert not _fills(bank)
    finally:
        strongfake.GATE.set()
        bank.close()


def test_the_passages_fill_after_the_memories_fill(sample: Path) -> None:
    _many(sample)
    strongfake.GATE.clear()  # the memories' fill is held in its first chunk
    bank = membank.open(sample)
    try:
        assert strongfake.ENTERED.wait(30)
        bank.search_manuscript(query_text="harbour")  # kicks the passages' filler while the memories fill
        strongfake.GATE.set()
        assert strong.settle(bank)
        callers = strongfake.CALLERS
        memories, passages = f"membank-strong-{bank.info.id}", f"membank-passages-{bank.info.id}"
        assert memories in callers and passages in callers
        assert callers.index(passages) > len(callers) - 1 - callers[::-1].index(memories)  # memories first, all
    finally:
        bank.close()


class _Said(logging.Handler):
    """The membank log's records; `event` is set when one holds `words`."""

    def __init__(self, words: str) -> None:
        super().__init__(logging.DEBUG)
        self.words, self.records, self.event = words, [], threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if self.words in record.getMessage():
            self.event.set()


def test_a_project_gone_stops_the_fill_quietly_and_it_fills_again_once_back(sample: Path, tmp_path: Path) -> None:
    bank = membank.open(sample)
    said = _Said("is gone from disk")
    log = logging.getLogger("membank")
    level = log.level
    log.addHandler(said)
    log.setLevel(logging.INFO)
    try:
        assert strongfill.filler(bank).worker.drain(30)
        moved = shutil.move(sample / ".writenow", tmp_path / "away")
        strongfill.kick(bank)  # (the watcher's batch, a write): the project is gone
        assert said.event.wait(30)
        assert strongfill.filler(bank).worker.drain(30)
        assert not [r for r in said.records if r.levelno >= logging.WARNING]  # no traceback, no error
        assert not (sample / ".writenow").exists()
        shutil.move(moved, sample / ".writenow")
        write_memory(sample, "back/m.md", "Written after the folder came back", id="m-back", type="note")
        said.words, said.event = "is back", threading.Event()
        bank.sync()  # kicks the filler: it fills again
        assert said.event.wait(30)
        assert strongfill.filler(bank).worker.drain(30)
        status = bank.status()["strong"]
        assert status["done"] == status["total"] > 0
    finally:
        log.removeHandler(said)
        log.setLevel(level)
        bank.close()


def test_the_retrieval_benchmark_reads_beside_a_writer_on_another_thread(bank: Bank) -> None:
    from benchmarks.retrieval import static_rankers

    rankers = static_rankers(bank)
    with writer_in_use(bank):  # a fill's write: the writer connection, under the index lock
        assert isinstance(rankers["lexical"]("harbour keeper"), list)  # before: apsw.ThreadingViolationError
        assert isinstance(rankers["vector"]("harbour keeper"), list)
