"""The stores' capacities (episodes.md, Lifecycle): which episodes make room, and making it.

Pure first (`choose`): when a store is over its capacity, the TTL-expired go first (the longest
unused first), then the least recently used; pinned episodes and those of runs the writer confirmed
(`memory:trace:feedback` correct) never go. If that cannot make enough room, nothing is evicted and
the write is refused with MEMORY_CAPACITY_EXCEEDED: nothing half-done."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...kernel import clock
from ...kernel.errors import MembankError
from ...index import Index
from . import traces

CAPACITY_EXCEEDED = "MEMORY_CAPACITY_EXCEEDED"
DAY = 86400.0


@dataclass(frozen=True)
class Held:
    """One episode as eviction sees it."""
    id: str
    used: float  # seconds since the epoch of the last recall, else the creation
    kept: bool  # pinned, or its run confirmed by the writer: never evicted


@dataclass(frozen=True)
class Choice:
    ttl: tuple[str, ...]  # expired, the longest unused first
    lru: tuple[str, ...]  # then the least recently used
    short: int  # how many more would have to go than may (0: the room is made)

    @property
    def ids(self) -> tuple[str, ...]:
        return self.ttl + self.lru


def choose(held: list[Held], need: int, now: float, ttl_days: int) -> Choice:
    """Which `need` episodes to evict (when `need` > 0)."""
    if need <= 0:
        return Choice((), (), 0)
    free = sorted((h for h in held if not h.kept), key=lambda h: (h.used, h.id))
    expired = [h.id for h in free if now - h.used > ttl_days * DAY]
    ttl = tuple(expired[:need])
    lru = tuple(h.id for h in free if h.id not in set(ttl))[:need - len(ttl)]
    return Choice(ttl, lru, need - len(ttl) - len(lru))


def count(index: Index, compressed: bool) -> int:
    return int(index.db.execute("SELECT count(*) FROM episodes WHERE evicted = 0 AND compressed = ?",
                                (int(compressed),)).fetchall()[0][0])


def held(index: Index, compressed: bool, oldest: int | None = None) -> list[Held]:
    """The live episodes of one store (active, or compressed), the least recently used first; only the
    `oldest` of them when given (the expired are among the oldest: they go first either way)."""
    confirmed = traces.confirmed_runs(index)
    rows = index.db.execute("SELECT id, since, pinned, run_id FROM episodes WHERE evicted = 0 AND compressed = ?"
                            " ORDER BY since, id LIMIT ?", (int(compressed), -1 if oldest is None else oldest)).fetchall()
    return [Held(i, since, bool(pinned) or run in confirmed) for i, since, pinned, run in rows]


def room(index: Index, settings: dict[str, Any], adding: int = 1, compressed: bool = False,
         joining: tuple[Held, ...] = ()) -> Choice:
    """What must go so that `adding` more fit in a store (MEMORY_CAPACITY_EXCEEDED when they cannot).
    `joining`: episodes about to move into the store (the weekly compression), which may go themselves
    (with `compressedEpisodes: 0` every one that is not kept does)."""
    cap = settings["compressedEpisodes" if compressed else "activeEpisodes"]
    need = count(index, compressed) + adding + len(joining) - cap
    if need <= 0:
        return Choice((), (), 0)
    now, ttl = clock.now().timestamp(), settings["episodeTtlDays"]
    choice = choose(held(index, compressed, need + 64) + list(joining), need, now, ttl)  # enough, unless many are kept
    if choice.short:
        choice = choose(held(index, compressed) + list(joining), need, now, ttl)
    if choice.short:
        store = "compressed" if compressed else "active"
        raise MembankError(CAPACITY_EXCEEDED, f"the {store} episodes are at their capacity ({cap:,}, "
                           f"lifecycle.{'compressedEpisodes' if compressed else 'activeEpisodes'}) and every one left "
                           "is pinned or confirmed; nothing was written (raise the capacity or unpin some)",
                           {"store": store, "capacity": cap})
    return choice

