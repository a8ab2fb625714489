"""The files a sync must read, taken in (read, hashed, parsed) in their order: here for a small sync,
shared with a second process for a large one (`files/intakeworker.py`).

The worker is kept AHEAD chunks ahead; while the next chunk in order is still with it, this process
takes in the next chunk nobody has claimed instead of waiting, so neither side idles and the caller
still sees every file in order (rowids, reports and clashes come out as a one-process sync gives
them). When every chunk is claimed, the one the worker would answer last is taken back here rather
than waited for. Whatever the worker held when it failed is taken in here."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Iterator

from ...files.intake import Outcome, take
from ...files.scan import BankRoot, FileStat

if TYPE_CHECKING:
    from ...files.intakeworker import IntakeWorker

PARALLEL_FROM = 1000  # fewer files: starting the worker (~0.1-0.2 s of a core) would cost more than it saves
CHUNK = 256  # files a request names: fewer, larger replies wake the sync's threads less (256 × 4 ahead beat 128 × 8 by ~5%)
AHEAD = 4  # chunks queued with the worker (1,024 files): with 256 it waited for its next chunk while this process
# wrote, and this process took in ~40% of the chunks itself
WAIT_S = 1.0  # how long one wait for the worker lasts before looking again (its death wakes it at once)
STALL_S = 30.0  # no answer for this long while everything else is done: the worker is given up on

Item = tuple[BankRoot, FileStat, str | None]  # a file and the hash the index holds for it


def taken(items: list[Item]) -> Iterator[tuple[Item, Outcome]]:
    """Each item with what taking it in gave, in the items' order."""
    worker = None
    if len(items) >= PARALLEL_FROM:
        from ...files.intakeworker import IntakeWorker  # here: a command's no-op sync loads no subprocess

        worker = IntakeWorker.start()
    if worker is None:
        for item in items:
            yield item, take(*item)
        return
    try:
        yield from _shared(_chunks(items), worker)
    finally:
        worker.close()


def _chunks(items: list[Item]) -> list[list[Item]]:
    """Runs of at most CHUNK items of one bank (a request names one bank folder)."""
    out: list[list[Item]] = []
    for item in items:
        if not out or len(out[-1]) >= CHUNK or out[-1][0][0] != item[0]:
            out.append([])
        out[-1].append(item)
    return out


def _here(chunk: list[Item]) -> list[Outcome]:
    return [take(*item) for item in chunk]


def _receive(replies: list[tuple[int, list[Outcome]]], away: deque[int], done: dict[int, list[Outcome]]) -> None:
    for number, outcomes in replies:
        if number in away:  # not one taken back already
            away.remove(number)
            done[number] = outcomes


def _shared(chunks: list[list[Item]], worker: IntakeWorker) -> Iterator[tuple[Item, Outcome]]:
    done: dict[int, list[Outcome]] = {}
    away: deque[int] = deque()  # chunks with the worker, in the order sent
    claimed = 0  # every chunk before this one is done, with the worker, or already given out
    waited = 0.0
    for i, chunk in enumerate(chunks):
        while i not in done:
            while worker.alive and len(away) < AHEAD and claimed < len(chunks):
                number = claimed
                root = chunks[number][0][0]
                if not worker.send((number, root, [(stat, known) for _, stat, known in chunks[number]])):
                    break
                away.append(number)
                claimed += 1
            _receive(worker.replies(None), away, done)
            if i in done:
                break
            if not worker.alive:  # take back what it held
                while away:
                    number = away.popleft()
                    done[number] = _here(chunks[number])
                if i not in done:
                    done[i] = _here(chunk)
                    claimed = max(claimed, i + 1)
                continue
            if claimed < len(chunks):  # the worker has chunk i: take in the next unclaimed one meanwhile
                done[claimed] = _here(chunks[claimed])
                claimed += 1
                continue
            if len(away) > 1:  # every chunk is claimed: take back the one the worker would answer last
                number = away.pop()  # (its answer, when it comes, is dropped: no longer away)
                done[number] = _here(chunks[number])
                continue
            got = worker.replies(WAIT_S)
            _receive(got, away, done)
            waited = 0.0 if got else waited + WAIT_S
            if waited >= STALL_S:  # alive but stuck (a file on a hung network share?): take its chunks back
                worker.close()
        yield from zip(chunk, done.pop(i))
