"""The garbage collector's policy for a long-lived process (the sidecar, the bench).

CPython's full collection walks every tracked object. A sidecar holding a 10,000-file project keeps
hundreds of thousands of long-lived objects (caches per index generation, the model's vocabulary),
so each full collection costs tens of milliseconds, and it falls on whichever call happens to
allocate at that moment: measured at 10,000 files, `kg:consistency:check` p95 went from ~10 ms to
~50 ms and `context:assemble` had 40–80 ms outliers for no reason of their own.

`settle` collects once and moves everything alive into the permanent generation, which later
collections skip. It unfreezes first, so garbage frozen by the previous settle (an old generation's
caches with reference cycles) is found, and raises the young generation's threshold (YOUNG), so that a
call's own short-lived objects stop starting passes that free nothing. A library must not do this behind
its caller's back: the sidecar calls it when idle after a change; an embedding app may call it the same way.

`release` hands the C heap's free memory back to the operating system. glibc keeps what a process
frees for its next allocations (in the main heap and in one arena per thread that allocated), so after
a burst that is over (a model read, the vectors' copy loaded, a cold sync) tens of megabytes stay
resident that nothing uses: measured in the sidecar at 10,000 files, ~25 MB after loading the vectors
alone (docs/performance.md). It changes nothing the process holds, so a library may call it too."""

from __future__ import annotations

import functools
import gc
import os
import sys
from typing import Callable


# The young generation's threshold once settled (CPython's default is 700): a collection runs when
# this many more container objects were made than freed. A call's own objects in flight (a prompt's
# ~550 activated cards, its pieces and hits: ~1,000 at its peak) crossed 700 in nearly every
# `context:assemble`, and each pass walked them all only to free nothing (~0.35 ms of CPU a call on the
# loaded bench machine, 5%); what a call leaves behind is ~50 objects, so at 10,000 a pass runs every
# ~200 calls. Cyclic garbage waits longer for it: at most this many objects, a few MB.
YOUNG = 10_000


def settle() -> int:
    """Collect everything once, then freeze what is alive; the number of objects frozen. The young
    generation's threshold is raised to YOUNG (a higher one, set by the process, stays)."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    young, *older = gc.get_threshold()
    if 0 < young < YOUNG:  # 0: the collector turned off by its threshold, left so
        gc.set_threshold(YOUNG, *older)
    return gc.get_freeze_count()


def tune() -> None:
    """Set glibc's malloc for a long-lived process of a dozen threads (the sidecar), before its threads
    start: at most two arenas (glibc makes up to eight per core, one for each thread that allocates,
    and each keeps its own free memory), and blocks of 128 KiB or more always mapped on their own, so
    freeing one returns it (glibc otherwise raises that threshold as large blocks are freed, and later
    ones land in the heap, where they fragment it). Nothing where there is no glibc, and neither
    where the environment sets it (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_)."""
    mallopt = _libc_function("mallopt")
    for param, value, variable in ((M_ARENA_MAX, 2, "MALLOC_ARENA_MAX"),
                                   (M_MMAP_THRESHOLD, 128 * 1024, "MALLOC_MMAP_THRESHOLD_")):
        if mallopt is not None and variable not in os.environ:  # the environment's own setting stands
            mallopt(param, value)


def release() -> bool:
    """Give the C heap's free pages back to the operating system (glibc's `malloc_trim(0)`, every arena);
    whether any went back. Does nothing, and says False, where there is no glibc (macOS, Windows, musl)."""
    trim = _libc_function("malloc_trim")
    return bool(trim is not None and trim(0))


M_MMAP_THRESHOLD, M_ARENA_MAX = -3, -8  # mallopt's parameters (malloc.h)


@functools.cache
def _libc_function(name: str) -> Callable[..., int] | None:
    """`malloc_trim` or `mallopt` of the C library the interpreter runs on, if it is glibc."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):  # musl has neither
        return None
    function.argtypes = (ctypes.c_int, ctypes.c_int) if name == "mallopt" else (ctypes.c_size_t,)
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]
