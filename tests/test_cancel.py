"""Cancel and deadlines (episodes.md): `$/cancelRequest` answers CANCELED, `deadlineMs` answers TIMEOUT, and
either way nothing is left half-done or pending. The slow call is an `index:sync` held at its first file
by an event; time moves only when a test moves it (`cancel.use`), so nothing here waits on the clock."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from membank import Bank
from membank.domains.context import assemble as assembling
from membank.files import intake
from membank.kernel import cancel
from membank.kernel.errors import CANCELED, INVALID_ARGUMENT, TIMEOUT, MembankError
from membank.runtime.catalog import CATALOG, cancellable
from membank.shells.server import INVALID_REQUEST

from .helpers import write_memory
from .wire import Wire

CH05 = "chapters/ch05.md"


# -- the kernel's token ------------------------------------------------------------------------------


def test_the_token_cancels_and_times_out_at_checkpoints_only() -> None:
    cancel.check()  # no token on this thread: a checkpoint is nothing
    now = [100.0]
    with cancel.use(lambda: now[0]):
        token = cancel.Token()
        token.bound(1500)
        with cancel.installed(token):
            now[0] += 1.499
            cancel.check()  # within the deadline
            now[0] += 0.002
            with pytest.raises(MembankError) as late:
                cancel.check()
            with cancel.shielded():
                cancel.check()  # a shielded block runs to its end
        cancel.check()  # the block is over: no token again
    assert late.value.code == TIMEOUT and "1,500 ms" in late.value.message
    assert late.value.details == {"deadlineMs": 1500}

    stopped = cancel.Token()
    stopped.cancel()
    with cancel.installed(stopped), pytest.raises(MembankError) as canceled:
        with cancel.scope(None, cancellable=False):  # a call canceled before it starts never starts,
            raise AssertionError("ran")  # cancellable or not
    assert canceled.value.code == CANCELED
    with cancel.scope(None, cancellable=True) as none:
        assert none is None and cancel.current() is None


def test_the_long_channels_take_a_bounded_deadline(bank: Bank) -> None:
    assert {"index:sync", "context:assemble", "kg:consistency:check"} <= \
        {name for name, channel in CATALOG.items() if cancellable(channel)}
    assert not cancellable(CATALOG["memory:create"])
    for wrong in (0, -5, 600_001, "1000"):
        envelope = bank.call("index:sync", {"deadlineMs": wrong})
        assert envelope["error"]["code"] == INVALID_ARGUMENT and envelope["error"]["details"] == {"field": "deadlineMs"}


@pytest.mark.parametrize("channel, payload", [
    ("index:sync", {"rebuild": True}),
    ("context:assemble", {"skillId": "continue", "documentId": CH05}),
    ("kg:consistency:check", {"documentId": CH05}),
])
def test_a_call_already_late_never_runs(bank: Bank, sample: Path, channel: str, payload: dict[str, Any]) -> None:
    steps = iter(range(0, 10**6, 60))  # every reading of the clock is a minute later
    runs = _runs(sample)
    with cancel.use(lambda: float(next(steps))):
        envelope = bank.call(channel, {**payload, "deadlineMs": 1000})
    assert envelope["error"]["code"] == TIMEOUT, envelope
    assert envelope["error"]["details"] == {"deadlineMs": 1000}
    assert _runs(sample) == runs
    assert bank.call(channel, {**payload, "deadlineMs": 600_000})["ok"]


# -- context:assemble: stopped before its trace, it leaves none --------------------------------------


def _runs(sample: Path) -> int:
    return sum(1 for f in (sample / ".writenow" / "journal").rglob("*.jsonl")
               for line in f.read_text("utf-8").splitlines() if line.strip() and json.loads(line)["event"] == "run")


def test_an_assembly_stopped_at_its_last_stage_journals_no_run(bank: Bank, sample: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs(sample)
    now = [0.0]
    token = cancel.Token()
    real = assembling.serialise

    def slow(*args: Any) -> Any:  # the last stage before the trace: time passes, or the caller gives up
        now[0] += 120
        if "cancel" in what:
            token.cancel()
        return real(*args)
    monkeypatch.setattr(assembling, "serialise", slow)

    with cancel.use(lambda: now[0]):
        what = "deadline"
        with pytest.raises(MembankError) as late:  # the Python API takes the deadline as `deadline_ms`
            bank.assemble_context("continue", document_id=CH05, deadline_ms=60_000)
        assert late.value.code == TIMEOUT and "60,000 ms" in late.value.message
        what = "cancel"
        with cancel.installed(token):  # as the sidecar runs a call: its token installed around dispatch
            envelope = bank.call("context:assemble", {"skillId": "continue", "documentId": CH05})
        assert envelope["error"]["code"] == CANCELED
    assert _runs(sample) == runs
    what = "nothing"
    assert bank.assemble_context("continue", document_id=CH05, deadline_ms=600_000)["runId"]
    assert _runs(sample) == runs + 1


# -- the sidecar, with an index:sync held halfway -------------------------------------------------


class Held:
    """`index:sync` held at the first file it parses, until `release`; `parsed` counts the files parsed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.parsed = 0
        real = intake.parse_file

        def slow(*args: Any) -> Any:
            self.parsed += 1
            self.entered.set()
            assert self.release.wait(30)
            return real(*args)
        monkeypatch.setattr(intake, "parse_file", slow)


@pytest.fixture
def now() -> Iterator[list[float]]:
    """The clock deadlines are counted on, moved by hand: installed before any request is sent."""
    ticks = [0.0]
    with cancel.use(lambda: ticks[0]):
        yield ticks


@pytest.fixture
def wire(sample: Path, now: list[float]) -> Iterator[Wire]:
    wire = Wire()
    try:
        wire.call("project:open", {"path": str(sample)})
        for i in range(3):  # three files the index has not read: a sync reads them one by one
            write_memory(sample, f"notes/slow-{i}.md", f"Slow note {i}.", id=f"m-slow{i}", type="note")
        yield wire
    finally:
        wire.close()


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch, wire: Wire) -> Iterator[Held]:
    held = Held(monkeypatch)
    yield held
    held.release.set()


def _nothing_half_written(wire: Wire, before: dict[str, Any]) -> None:
    """The index is as it was: the counts, and the next sync still finds the three files new."""
    assert wire.call("index:status")["counts"] == before
    assert wire.call("index:sync")["added"] == 3
    assert wire.call("index:status")["counts"]["memories"] == before["memories"] + 3


def test_cancel_stops_a_running_sync_and_leaves_the_index_as_it_was(wire: Wire, held: Held) -> None:
    before = wire.call("index:status")["counts"]
    sync = wire.send("index:sync")
    assert held.entered.wait(30)
    wire.cancel(sync)  # it is parsing its first file: the next checkpoint stops it
    held.release.set()
    error = wire.result(sync)["error"]
    assert error["code"] == CANCELED and "canceled" in error["message"]
    assert held.parsed == 1
    _nothing_half_written(wire, before)


def test_a_deadline_stops_a_running_sync_and_leaves_the_index_as_it_was(wire: Wire, held: Held,
                                                                        now: list[float]) -> None:
    before = wire.call("index:status")["counts"]
    sync = wire.send("index:sync", {"deadlineMs": 1000})
    assert held.entered.wait(30)
    now[0] += 2  # two seconds into a one-second deadline
    held.release.set()
    error = wire.result(sync)["error"]
    assert error["code"] == TIMEOUT and "1,000 ms" in error["message"] and error["details"] == {"deadlineMs": 1000}
    _nothing_half_written(wire, before)


def test_a_queued_call_canceled_or_late_never_runs(wire: Wire, held: Held, now: list[float], sample: Path) -> None:
    first = wire.send("index:sync")
    assert held.entered.wait(30)
    # queued behind it on the project's write lane
    create = wire.send("memory:create", {"type": "note", "scope": "project", "content": "Never written."})
    rebuild = wire.send("index:sync", {"rebuild": True, "deadlineMs": 1000})
    wire.cancel(create)
    assert wire.result(create)["error"]["code"] == CANCELED  # answered at once, while the lane is still held
    now[0] += 2  # the rebuild has waited past its deadline in the queue
    held.release.set()
    assert wire.result(first)["data"]["added"] == 3
    assert wire.result(rebuild)["error"]["code"] == TIMEOUT
    assert held.parsed == 3  # the first sync's files only: the rebuild never began
    assert "Never written." not in json.dumps(wire.call("memory:list"))
    assert not any("Never written." in p.read_text("utf-8") for p in (sample / ".writenow").rglob("*.md"))
    wire.cancel(first)  # finished: nothing happens, and the lane serves on
    assert wire.call("memory:create", {"type": "note", "scope": "project", "content": "Written."})["id"]
    sent_as_a_request = wire.send("$/cancelRequest", {"id": first})
    assert wire.message(sent_as_a_request)["error"]["code"] == INVALID_REQUEST
