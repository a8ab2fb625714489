"""The sidecar's heap settling: once per burst of changes, never while a call runs (shells/settler.py)."""

from __future__ import annotations

import gc
import threading
import weakref

from membank.kernel import heap
from membank.shells.settler import Settler


class _Node:
    pass


def test_settle_freezes_what_is_alive_and_finds_garbage_frozen_before():
    threshold = gc.get_threshold()
    try:
        node = _Node()
        node.me = node  # a reference cycle: only the cycle collector frees it
        alive = weakref.ref(node)
        frozen = heap.settle()
        # another thread of the process may free a frozen object meanwhile (a finished test's daemon): never more
        assert 0 < gc.get_freeze_count() <= frozen
        del node
        gc.collect()
        assert alive() is not None  # frozen: a plain collection skips it
        heap.settle()
        assert alive() is None
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_once_settled_a_calls_own_objects_in_flight_start_no_collection():
    """A prompt holds ~1,000 container objects at its peak and leaves ~50: after `settle`, making and
    dropping thousands starts no young-generation pass (CPython's default started one at 700)."""
    threshold = gc.get_threshold()
    passes: list[int] = []

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            passes.append(info["generation"])

    try:
        gc.set_threshold(700, 10, 10)
        heap.settle()
        gc.callbacks.append(seen)
        for _ in range(20):  # twenty calls' worth, each dropped whole
            in_flight = [{"piece": i} for i in range(4_000)]
            del in_flight
        assert passes == []
        assert gc.get_threshold() == (heap.YOUNG, 10, 10)
        gc.set_threshold(50_000, 10, 10)  # a process's own higher threshold stays
        heap.settle()
        assert gc.get_threshold() == (50_000, 10, 10)
    finally:
        if seen in gc.callbacks:
            gc.callbacks.remove(seen)
        gc.unfreeze()
        gc.set_threshold(*threshold)


def test_a_burst_of_changes_settles_once():
    done = threading.Event()
    settler = Settler(threading.Condition(), lambda: False, quiet=0.2, settle=lambda: done.set() or 1)
    settler.start()
    try:
        for _ in range(3):
            settler.changed()
        assert done.wait(10)
        assert settler.settled == 1
    finally:
        settler.stop()


def test_it_waits_for_the_call_in_flight():
    idle = threading.Condition()
    inflight = [1]
    asked = threading.Event()
    done = threading.Event()
    seen: list[int] = []

    def busy() -> bool:
        asked.set()
        return inflight[0] > 0

    def settle() -> int:
        seen.append(inflight[0])
        done.set()
        return 1

    settler = Settler(idle, busy, quiet=0, settle=settle)
    settler.start()
    try:
        settler.changed()
        assert asked.wait(10)
        with idle:
            inflight[0] = 0
            idle.notify_all()
        assert done.wait(10)
        assert seen == [0]
    finally:
        settler.stop()


def test_stop_without_start_and_after_start():
    Settler(threading.Condition(), lambda: False).stop()
    settler = Settler(threading.Condition(), lambda: False)
    settler.start()
    settler.stop()
    assert settler.settled == 0
