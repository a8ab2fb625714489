"""One row of the bench's table: a measurement's samples, its target and whether the target was met."""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class Row:
    key: str  # stable name for --json comparisons
    what: str
    unit: str  # "ms", "files/s", "entries/s", "MB", "s"
    size: int | None  # files in the corpus it ran on
    samples: list[float] = field(default_factory=list)
    target: float | None = None
    higher_is_better: bool = False
    note: str = ""
    target_text: str = ""

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def p95(self) -> float | None:
        """Nearest rank; for a rate (higher is better) the slow end: 95% of runs were at least this fast."""
        if not self.samples:
            return None
        ordered = sorted(self.samples, reverse=self.higher_is_better)
        return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]

    @property
    def met(self) -> bool | None:
        if self.target is None or not self.samples:
            return None
        # rates and sizes are judged on the median (one cold run is one figure); latencies on p95
        figure = self.median if self.unit in ("files/s", "entries/s", "MB") else self.p95
        assert figure is not None
        return figure >= self.target if self.higher_is_better else figure <= self.target

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "what": self.what, "unit": self.unit, "size": self.size, "n": self.n,
                "median": _r(self.median), "p95": _r(self.p95), "min": _r(min(self.samples, default=None)),
                "max": _r(max(self.samples, default=None)), "target": self.target, "targetText": self.target_text,
                "higherIsBetter": self.higher_is_better, "met": self.met, "note": self.note}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def fmt(x: float | None, unit: str) -> str:
    """A figure as the table shows it: thousands grouped, three significant digits below 100."""
    if x is None:
        return "—"
    if unit == "files/s":
        return f"{x:,.0f}"
    if unit == "entries/s" and x >= 10:
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def timed(fn: Callable[[], Any]) -> float:
    """Milliseconds `fn()` took."""
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def say(quiet: bool, message: str) -> None:
    """Progress on stderr, so stdout holds the table (or the JSON) alone."""
    if not quiet:
        sys.stderr.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
        sys.stderr.flush()
