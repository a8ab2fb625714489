"""What a bench run measures: corpus sizes, the seed, and how many samples each row takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .corpus import SEED


@dataclass
class Options:
    size: int = 10_000
    large: int = 100_000
    quick: bool = False
    seed: int = SEED
    previews: int = 200
    creates: int = 50
    syncs: int = 20
    one_file: int = 50
    watcher: int = 30
    sidecar: int = 500
    sidecar_warmup_s: float = 2.0  # past the server's watcher's first reconcile and lazy loads
    cold_runs: int = 3
    cli: int = 10  # whole-process runs of each CLI command (after one warm-up); 0 skips those rows
    keep: bool = False
    quiet: bool = False

    @classmethod
    def quick_run(cls, **kw: Any) -> "Options":
        base = dict(size=2_000, large=10_000, quick=True, previews=100, creates=30, syncs=10, one_file=30,
                    watcher=10, sidecar=200, cold_runs=1, cli=5)
        base.update({k: v for k, v in kw.items() if v is not None})
        return cls(**base)


def options(quick: bool, size: int | None = None, large: int | None = None, seed: int = SEED,
            keep: bool = False) -> Options:
    """The options `membank bench` was given."""
    kw: dict[str, Any] = {"size": size, "large": large, "seed": seed, "keep": keep}
    if quick:
        return Options.quick_run(**kw)
    return Options(**{k: v for k, v in kw.items() if v is not None})
