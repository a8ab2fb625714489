"""The lifecycle channel: run a trigger (episodes.md, Lifecycle)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, TypedDict

from ..contract import Channel, Lazy
from ...kernel.payload import Id


@dataclass(frozen=True)
class LifecycleRun:
    trigger: Literal["realtime", "daily", "weekly", "monthly"]
    projectId: Id | None = None


class Levels(TypedDict):
    active: int
    decaying: int
    to_compress: int
    to_evict: int


class LifecycleReport(TypedDict):
    trigger: str
    at: str
    changed: bool  # whether anything changed (a re-run changes nothing)
    tookMs: float
    warnings: list[str]  # runs or episodes dated after now (the clock was ahead): ignored, said here
    evicted: NotRequired[int]  # realtime, weekly (to make room in the compressed store), monthly
    ttl: NotRequired[int]  # realtime: of them, TTL-expired
    lru: NotRequired[int]  # realtime: least recently used
    episodes: NotRequired[int]  # daily: live episodes scored
    moved: NotRequired[int]  # daily: episodes whose level moved (none: nothing written)
    levels: NotRequired[Levels]  # daily: live episodes per level after it
    compressed: NotRequired[int]  # weekly
    history: NotRequired[list[str]]  # weekly: history files written (unchanged ones are not)
    kept: NotRequired[list[str]]  # weekly: history files left as they are: edited by hand, or they would lose runs
    runs: NotRequired[int]  # weekly: runs (and run-less episodes) older than a week, in history


CHANNELS = (
    Channel("memory:lifecycle:run", LifecycleRun, LifecycleReport, Lazy("membank.domains.lifecycle.triggers", "run"),
            "write", "lifecycle", "Run a lifecycle trigger (realtime, daily, weekly, monthly) and report what it did.",
            "run_lifecycle"),
)
