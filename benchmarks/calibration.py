"""Calibration study for cross-language recall (issue 35, point 2) on fixtures/retrieval.

Run: python benchmarks/calibration.py [--json] [--cache FILE]. Reads the fixture's memories and
queries.yaml directly (no index), embeds them with the strong model (e5-small-int8) and the bundled
static model, and ranks every memory for every query under several rules, vectors only:

- `e5 raw`: the strong model's cosine;
- `e5 centred`: the cosine after each language's mean memory vector is removed from the query and the
  memories of that language (the means of the bank's own memories);
- `blend`: centred e5 and static cosine averaged (weight `w` on e5);
- `pools z`: centred e5 and static cosine each standardised within each language's pool (per query),
  then blended (0.7 on e5) and merged; `other language -m`: the other language's lowered by m deviations;
- `calibrated`: membank.domains.recall.calibrate.calibrate, the rule membank ships: pools z, and an
  other-language memory competes only when it stands out of its pool nearly as far as the best
  same-language one does (within `GATE` deviations), at most `CAP` of them; the rest follow;
  `calibrated, gate g, cap c`: the same with other settings (`cap -`: no cap, the rule before);
- transforms of the strong vectors made from the bank's own memory vectors and their script labels only
  (no relevance label), each followed by the shipped rule: `LSAR k` (the top k singular directions of
  the languages' mean vectors removed), `INLP k` (k directions that separate Chinese from English rows,
  found one at a time by shrunk LDA and projected out), `cov-diff k` (the k directions where the two
  languages' covariances differ most removed), `CORAL s` (each language's rows whitened by its own
  covariance, shrunk by s, and coloured by the shared one), `diag` (each dimension divided by its
  language's deviation), `CSLS` (each memory's mean cosine with its 10 nearest memories, of the other
  language or of all, half taken off its score: hubs that are near everything lose);
- `gumbel gate`: the gate on scores normalised by the expected maximum of a pool of that size;
- `name bridge`: membank.domains.recall.bridge: an other-language memory that names a card the query names
  (the fixture's cards' names and aliases, story/matching.py's rules) gains `lift` deviations times its
  evidence (the card's rarity in its pool, `rarity`, or 1, `flat`) before the gate and the cap; `+ parts`
  (a study only): the words of a Latin name of several words count as names too (`Shen` for Shen Qingya),
  titles (Mr, Captain, ...) left out;
- `lexicon` (with `--lexicon FILE`, a study only: benchmarks/lexicon.py): a bilingual lexicon's evidence (the
  question's words translated, rarity-weighted in the other language's pool) beside the name bridge's;
  `own words too`: the question's own words weigh as much in its own language's pool;
- `full USE` (with `--use`, a study only: benchmarks/usestudy.py): the full USE-multilingual's cosine alone,
  in the blend in place of the static one, or beside both, under the shipped gate, cap and bridge;
- `map` (with `--align FILE`, a study only: benchmarks/alignstudy.py): a supervised Chinese-to-English map of
  the centred strong vectors, learned from parallel text by scripts/build_alignment.py;
- `e5 layer` (with `--layers`, a study only: benchmarks/layerstudy.py): the strong model's middle layers'
  mean-pooled states, alone or averaged with the last layer's, and memories embedded with the `query: ` prefix;
- `role link` (with `--roles`, a study only: benchmarks/rolelink.py): a question's content-word phrases that a
  card's summary (or body) holds name that card by its role; memories naming it gain `own` times that in the
  question's own pool, and/or (`across`) the name bridge counts the card as named.

Per rule: recall@5 and MRR for English and Chinese queries about memories in their own language and
for cross-language queries (every relevant memory in the other language), and `other@5`: over the
queries whose relevant memories are all in the query's language, the average number of memories in
the other language among the top 5 (none of them relevant); `pool 1st` and `pool top 5`: for the
cross-language queries, how often a relevant memory is first (in the top 5) of the other language's
pool by the blended score. The goal (quality.md, "Recall quality"): en, zh ≥ 0.90 each, zh ≥ en,
cross ≥ 0.80, other@5 ≤ 0.5. `--split even|odd` reports only that half of the queries (settings were
chosen on the even half and measured on the odd one: docs/recall.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import alignstudy, layerstudy, lexicon, rolelink, usestudy  # noqa: E402
from membank.domains.recall.bridge import Bridge  # noqa: E402
from membank.domains.recall.calibrate import (  # noqa: E402
    CAP, GATE, LIFT, STRONG_WEIGHT, Candidate, calibrate, calibrated_arrays, script_language)
from membank.domains.story.matching import Keyed, Matcher  # noqa: E402
from membank.index.embed import BUNDLED, load  # noqa: E402
from membank.index.strong import load_strong  # noqa: E402

FIXTURE = ROOT / "fixtures" / "retrieval"
K = 5


def memories(fixture: Path = FIXTURE) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    for path in sorted((fixture / "project" / ".writenow" / "memories").rglob("*.md")):
        raw = path.read_text("utf-8")
        head, _, body = raw.partition("\n---\n")
        ident = next(line.split(":", 1)[1].strip() for line in head.splitlines() if line.startswith("id:"))
        ids.append(ident)
        texts.append(body.strip())
    return ids, texts


def queries(fixture: Path = FIXTURE) -> list[dict[str, Any]]:
    import yaml

    return [q for q in yaml.safe_load((fixture / "queries.yaml").read_text("utf-8")) if isinstance(q, dict)]


def monolingual(query: dict[str, Any], ids: list[str], plang: list[str]) -> bool:
    """Every relevant memory in the query's language (queries.yaml's `monolingual`, else by script)."""
    if "monolingual" in query:
        return bool(query["monolingual"])
    language = {mid: lang for mid, lang in zip(ids, plang)}
    return all(language.get(mid) == query.get("lang", "en") for mid in query["relevant"])


def group(query: dict[str, Any]) -> str:
    return "cross" if query.get("cross_all") else str(query.get("lang", "en"))


TITLES = {"the", "mr", "mrs", "ms", "dr", "doctor", "captain", "father", "lord", "lady", "madame", "sergeant",
          "senior", "brother", "granny"}  # left out of a name's parts (the `+ parts` study row only)


def cards(fixture: Path = FIXTURE, parts: bool = False) -> list[Keyed]:
    """The fixture's characters and world entries as the matcher takes them: name and aliases only."""
    import yaml

    out = []
    for path in sorted((fixture / "project" / ".writenow").rglob("*.md")):
        if "memories" in path.parts:
            continue
        head = yaml.safe_load(path.read_text("utf-8").split("---")[1])
        if not isinstance(head, dict) or "name" not in head:
            continue
        names = [str(head["name"]), *(str(a) for a in head.get("aliases") or ())]
        if parts:
            names += [w for n in names if n.isascii() and " " in n for w in n.split()
                      if w[:1].isupper() and w.lower() not in TITLES]
        out.append(Keyed(str(head.get("id", path.stem)), names[0], tuple(dict.fromkeys(names[1:]))))
    return out


def bridged(texts: list[str], qs: list[dict[str, Any]], zh: np.ndarray, fixture: Path = FIXTURE,
            parts: bool = False, rarity: bool = True) -> np.ndarray:
    """The name bridge's evidence of every memory for every query (queries x memories)."""
    matcher = Matcher.build(cards(fixture, parts))

    def named(text: str) -> frozenset[str]:
        return frozenset(m.id for m in matcher.mentions(text)[0])

    bridge = Bridge.of([named(t) for t in texts], zh, rarity=rarity)
    out = np.zeros((len(qs), len(texts)))
    for qi, q in enumerate(qs):
        found = bridge.evidence(named(q["query"]))
        if found is not None:
            out[qi] = found
    return out


def vectors(ids: list[str], texts: list[str], qs: list[dict[str, Any]], cache: Path | None) -> dict[str, np.ndarray]:
    key = [ids, [q["query"] for q in qs]]
    if cache is not None and cache.is_file():
        data = np.load(cache, allow_pickle=False)
        if json.loads(str(data["key"])) == key:
            return {k: data[k] for k in ("ep", "eq", "sp", "sq")}
    strong, static = load_strong(), load(BUNDLED)
    out = {"ep": strong.passages(texts), "eq": strong.queries([q["query"] for q in qs]),
           "sp": static.encode(texts), "sq": static.encode([q["query"] for q in qs])}
    if cache is not None:
        np.savez(cache, key=json.dumps(key), **out)
    return out


def centred(queries_: np.ndarray, passages: np.ndarray, qlang: list[str], plang: list[str],
            transform: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """Cosine after removing each language's mean memory vector (from the query: its own language's), then
    (when given) multiplying each by its language's matrix in `transform` (rows x^T W^T)."""
    means = {lang: passages[[i for i, x in enumerate(plang) if x == lang]].mean(axis=0) for lang in set(plang)}
    p = passages - np.stack([means[x] for x in plang])
    q = queries_ - np.stack([means.get(x, 0.0 * passages[0]) for x in qlang])
    if transform is not None:
        p = np.stack([transform[x] @ row for x, row in zip(plang, p)])
        q = np.stack([transform[x] @ row for x, row in zip(qlang, q)])
    p /= np.linalg.norm(p, axis=1, keepdims=True) + 1e-12
    q /= np.linalg.norm(q, axis=1, keepdims=True) + 1e-12
    return np.asarray(q @ p.T)


def _removing(directions: np.ndarray) -> dict[str, np.ndarray]:
    """The projection that removes the span of `directions` (columns), for both languages."""
    basis, _ = np.linalg.qr(directions)
    projection = np.eye(len(basis)) - basis @ basis.T
    return {"zh": projection, "en": projection}


def _power(matrix: np.ndarray, p: float) -> np.ndarray:
    values, vectors_ = np.linalg.eigh(matrix)
    return (vectors_ * np.maximum(values, 1e-12) ** p) @ vectors_.T


def _shrunk(matrix: np.ndarray, shrink: float) -> np.ndarray:
    return (1 - shrink) * matrix + shrink * np.trace(matrix) / len(matrix) * np.eye(len(matrix))


def transforms(passages: np.ndarray, zh: np.ndarray) -> dict[str, dict[str, np.ndarray]]:
    """Query-independent transforms of the strong vectors from the memories' vectors and script labels only."""
    x = passages.astype(np.float64)
    means = {True: x[zh].mean(axis=0), False: x[~zh].mean(axis=0)}
    covs = {lang: np.cov((x[zh == lang] - means[lang]).T) for lang in (True, False)}
    shared = np.cov(np.vstack([x[zh] - means[True], x[~zh] - means[False]]).T)
    out: dict[str, dict[str, np.ndarray]] = {}
    u, _, _ = np.linalg.svd(np.stack([means[True], means[False]]).T, full_matrices=False)
    for k in (1, 2):
        out[f"LSAR k={k}"] = _removing(u[:, :k])
    found = np.zeros((x.shape[1], 0))
    for k in range(1, 9):  # INLP with shrunk LDA as the classifier
        keep = np.eye(x.shape[1]) - found @ found.T
        z = x @ keep
        a, b = z[zh].mean(axis=0), z[~zh].mean(axis=0)
        within = _shrunk(np.cov(np.vstack([z[zh] - a, z[~zh] - b]).T), 0.1)
        w = keep @ np.linalg.solve(within, a - b)
        found, _ = np.linalg.qr(np.hstack([found, (w / np.linalg.norm(w))[:, None]]))
        if k in (1, 2, 4, 8):
            out[f"INLP k={k}"] = _removing(found)
    values, vectors_ = np.linalg.eigh(covs[True] - covs[False])
    for k in (1, 2, 4, 8):
        out[f"cov-diff k={k}"] = _removing(vectors_[:, np.argsort(-np.abs(values))[:k]])
    for shrink in (0.3, 0.6):
        colour = _power(_shrunk(shared, shrink), 0.5)
        out[f"CORAL s={shrink}"] = {"zh" if lang else "en": colour @ _power(_shrunk(covs[lang], shrink), -0.5)
                                    for lang in (True, False)}
    out["diag"] = {"zh" if lang else "en": np.diag(1 / np.sqrt(np.diag(covs[lang]))) for lang in (True, False)}
    return out


def hubness(passages: np.ndarray, plang: list[str], among: str, k: int = 10) -> np.ndarray:
    """Each memory's mean centred cosine with its k nearest other memories (of the other language, or of
    all): how much of a hub it is (CSLS, cross-domain similarity local scaling)."""
    unit = centred(passages, passages, plang, plang)
    np.fill_diagonal(unit, -np.inf)
    langs = np.array(plang)
    out = np.empty(len(passages))
    for i, row in enumerate(unit):
        pool = row[langs != langs[i]] if among == "other" else row
        out[i] = np.sort(pool[np.isfinite(pool)])[-k:].mean()
    return out


def pools_z(scores: np.ndarray, plang: list[str]) -> np.ndarray:
    out = np.empty_like(scores)
    for lang in set(plang):
        cols = [i for i, x in enumerate(plang) if x == lang]
        block = scores[:, cols]
        out[:, cols] = (block - block.mean(axis=1, keepdims=True)) / (block.std(axis=1, keepdims=True) + 1e-9)
    return out


def _gumbel(n: int) -> tuple[float, float]:
    """The location and scale of the largest of n standard normal values (extreme-value law)."""
    a = float(np.sqrt(2 * np.log(n)))
    return a - (np.log(np.log(n)) + np.log(4 * np.pi)) / (2 * a), 1 / a


def evaluate(rank: Callable[[int], list[int]], ids: list[str], plang: list[str], qs: list[dict[str, Any]],
             pools: np.ndarray | None = None, only: set[int] | None = None) -> dict[str, float]:
    """A rule's figures over the queries (those in `only` when given); `pools`: its blended score, for the
    within-pool rates of the cross-language queries."""
    per: dict[str, list[tuple[float, float]]] = {"en": [], "zh": [], "cross": []}
    other: list[int] = []
    within: list[int] = []
    for qi, q in enumerate(qs):
        if only is not None and qi not in only:
            continue
        order = rank(qi)
        ranking = [ids[i] for i in order]
        relevant = set(q["relevant"])
        recall = len(relevant & set(ranking[:K])) / len(relevant)
        rr = next((1.0 / r for r, mid in enumerate(ranking, start=1) if mid in relevant), 0.0)
        per[group(q)].append((recall, rr))
        if group(q) == "cross":  # and by direction: en-> (English questions, Chinese answers), zh->
            per.setdefault(f"{q['lang']}->", []).append((recall, rr))
        if monolingual(q, ids, plang):
            other.append(sum(1 for i in order[:K] if plang[i] != q["lang"] and ids[i] not in relevant))
        if pools is not None and group(q) == "cross":
            pool = [i for i in range(len(ids)) if plang[i] != q["lang"]]
            best = sorted(pool, key=lambda i: -pools[qi, i])
            within.append(min(r for r, i in enumerate(best) if ids[i] in relevant))
    row: dict[str, float] = {}
    for g, values in per.items():
        row[f"{g} R@5"] = float(np.mean([v[0] for v in values])) if values else 0.0
        row[f"{g} MRR"] = float(np.mean([v[1] for v in values])) if values else 0.0
    row["other@5"] = float(np.mean(other)) if other else 0.0
    row["pool 1st"] = float(np.mean([r == 0 for r in within])) if within else float("nan")
    row["pool top 5"] = float(np.mean([r < K for r in within])) if within else float("nan")
    return row


def study(cache: Path | None = None, fixture: Path = FIXTURE, split: str | None = None,
          lexicons: list[Path] | None = None, use: bool = False, roles: bool = False, align: Path | None = None,
          layers: bool = False) -> tuple[list[tuple[str, dict[str, float]]], dict[str, int]]:
    ids, texts = memories(fixture)
    qs = queries(fixture)
    v = vectors(ids, texts, qs, cache)
    plang = [script_language(t) for t in texts]
    qlang = [str(q.get("lang", script_language(q["query"]))) for q in qs]
    only = None if split is None else {i for i in range(len(qs)) if i % 2 == (split == "odd")}
    raw = v["eq"] @ v["ep"].T
    cen = centred(v["eq"], v["ep"], qlang, plang)
    static = v["sq"] @ v["sp"].T
    zh = np.array([x == "zh" for x in plang])
    rows: list[tuple[str, dict[str, float]]] = []

    def by(matrix: np.ndarray) -> Callable[[int], list[int]]:
        return lambda qi: list(np.argsort(-matrix[qi], kind="stable"))

    def measure(name: str, rank: Callable[[int], list[int]], pools: np.ndarray | None = None) -> None:
        rows.append((name, evaluate(rank, ids, plang, qs, pools, only)))

    measure("static", by(static))
    measure("e5 raw", by(raw))
    measure("e5 centred", by(cen), pools_z(cen, plang))
    other = np.array([[p != q for p in plang] for q in qlang])
    for w in (0.5, 0.7):
        blend = w * cen + (1 - w) * static
        measure(f"blend w={w}", by(blend), blend)
    pools = STRONG_WEIGHT * pools_z(cen, plang) + (1 - STRONG_WEIGHT) * pools_z(static, plang)
    measure("pools z w=0.7", by(pools), pools)
    for margin in (0.5, 1.0):
        measure(f"pools z, other language -{margin}", by(pools - margin * other), pools)

    evidence = bridged(texts, qs, zh, fixture)

    def shipped(qi: int) -> list[int]:
        candidates = [Candidate(i, float(cen[qi, i]), float(static[qi, i]), plang[i], float(evidence[qi, i]))
                      for i in range(len(ids))]
        return [c.key for c in calibrate(candidates, qlang[qi])]

    def arrays(strong: np.ndarray, gate: float = GATE, cap: int = CAP, bridge: np.ndarray | None = None,
               lift: float = LIFT) -> Callable[[int], list[int]]:
        def rank(qi: int) -> list[int]:
            scores, competes = calibrated_arrays(strong[qi], static[qi], zh, qlang[qi] == "zh", gate=gate, cap=cap,
                                                 evidence=None if bridge is None else bridge[qi], lift=lift)
            return list(np.lexsort((-scores, ~competes)))
        return rank

    def lifted(bridge: np.ndarray, lift: float) -> np.ndarray:  # the blended score with the bridge's lift
        return pools + lift * bridge * other

    measure(f"calibrated (shipped: gate {GATE}, cap {CAP}, name bridge, rarity, lift {LIFT})", shipped,
            lifted(evidence, LIFT))
    measure(f"calibrated, gate {GATE}, cap {CAP}, no name bridge (the rule before)", arrays(cen), pools)
    flat = bridged(texts, qs, zh, fixture, rarity=False)
    with_parts = bridged(texts, qs, zh, fixture, parts=True)
    for lift in (0.5, 0.75, 1.0, 1.25, 1.5):
        for name, bridge in (("rarity", evidence), ("flat", flat), ("+ parts, rarity", with_parts)):
            for cap in (CAP, 2):
                measure(f"name bridge, {name}, lift {lift}, cap {cap}", arrays(cen, cap=cap, bridge=bridge, lift=lift),
                        lifted(bridge, lift))
    for path in lexicons or ():  # a bilingual lexicon beside the names (benchmarks/lexicon.py; study only)
        lexicon.rows(measure, texts, [q["query"] for q in qs], zh, evidence, cen, static, [x == "zh" for x in qlang],
                     lexicon.read(path), path.name.split(".")[0], lifted)
    if use:  # the full USE-multilingual (benchmarks/usestudy.py; study only)
        up, uq = usestudy.vectors(texts, [q["query"] for q in qs], None if cache is None
                                  else cache.with_name(cache.stem + "-use.npz"))
        usestudy.rows(measure, lambda a, b: centred(a, b, qlang, plang), up, uq, cen, static, zh,
                      [x == "zh" for x in qlang], evidence)
    if layers:  # the strong model's own middle layers (benchmarks/layerstudy.py; study only)
        layered = layerstudy.vectors(texts, [q["query"] for q in qs], None if cache is None
                                     else cache.with_name(cache.stem + "-layers.npz"))
        layerstudy.rows(measure, lambda a, b: centred(a, b, qlang, plang), layered, static, zh,
                        [x == "zh" for x in qlang], evidence)
    if roles:  # a question's words naming a card by its role (benchmarks/rolelink.py; study only)
        rolelink.rows(measure, fixture, texts, qs, zh, evidence, cen, static, [x == "zh" for x in qlang], lifted)
    if align is not None:  # a supervised map across languages (benchmarks/alignstudy.py; study only)
        alignstudy.rows(measure, align, lambda t: centred(v["eq"], v["ep"], qlang, plang, t), cen, static, zh,
                        [x == "zh" for x in qlang], evidence)
    for gate, cap in ((0.6, 10**6), (0.8, 10**6), (1.0, 10**6), (0.6, 2), (0.8, 2), (1.0, 2), (1.0, 3)):
        measure(f"calibrated, gate {gate}, cap {cap if cap < 10**6 else '-'}", arrays(cen, gate, cap), pools)

    def gumbel(gate: float) -> Callable[[int], list[int]]:
        def rank(qi: int) -> list[int]:
            same = zh == (qlang[qi] == "zh")
            (a, b), (c, d) = _gumbel(int(same.sum())), _gumbel(int((~same).sum()))
            t = np.where(same, (pools[qi] - a) / b, (pools[qi] - c) / d)
            competes = same | (t >= t[same].max() - gate)
            return list(np.lexsort((-pools[qi], ~competes)))
        return rank

    for gate in (1.0, 2.0, 3.0):
        measure(f"gumbel gate {gate}, cap -", gumbel(gate), pools)
    for among in ("other", "all"):  # CSLS: each memory's mean cosine with its 10 nearest memories taken off
        strong = cen - 0.5 * hubness(v["ep"], plang, among)[None, :]
        measure(f"CSLS ({among} language{'s' if among == 'all' else ''}, k=10) + calibrated", arrays(strong),
                STRONG_WEIGHT * pools_z(strong, plang) + (1 - STRONG_WEIGHT) * pools_z(static, plang))
    for name, transform in transforms(v["ep"], zh).items():
        strong = centred(v["eq"], v["ep"], qlang, plang, transform)
        measure(f"{name} + calibrated", arrays(strong), STRONG_WEIGHT * pools_z(strong, plang)
                + (1 - STRONG_WEIGHT) * pools_z(static, plang))
    chosen = [i for i in range(len(qs)) if only is None or i in only]
    counts = {g: sum(1 for i in chosen if group(qs[i]) == g) for g in ("en", "zh", "cross")}
    counts["monolingual"] = sum(1 for i in chosen if monolingual(qs[i], ids, plang))
    counts["memories"] = len(ids)
    counts["zh memories"] = plang.count("zh")
    return rows, counts


def table(rows: list[tuple[str, dict[str, float]]], counts: dict[str, int]) -> str:
    cols = ["en R@5", "zh R@5", "en-> R@5", "zh-> R@5", "cross R@5", "cross MRR", "other@5", "pool 1st", "pool top 5"]
    lines = ["| rule | " + " | ".join(cols) + " |", "| --- |" + " ---: |" * len(cols)]
    lines += [f"| {name} | " + " | ".join(f"{row.get(c, float('nan')):.2f}" for c in cols) + " |" for name, row in rows]
    lines.append("")
    lines.append("queries: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache", type=Path, help="keep the vectors here between runs")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="another copy of fixtures/retrieval")
    parser.add_argument("--split", choices=("even", "odd"), help="only the even or odd half of the queries")
    parser.add_argument("--lexicon", type=Path, action="append", help="a lexicon of scripts/build_lexicon.py: its rows")
    parser.add_argument("--use", action="store_true", help="the full USE-multilingual's rows (benchmarks/usestudy.py)")
    parser.add_argument("--roles", action="store_true", help="the role link's rows (benchmarks/rolelink.py)")
    parser.add_argument("--align", type=Path, help="maps of scripts/build_alignment.py: their rows (alignstudy.py)")
    parser.add_argument("--layers", action="store_true", help="the strong model's middle layers (layerstudy.py)")
    args = parser.parse_args(argv)
    rows, counts = study(args.cache, args.fixture, args.split, args.lexicon, args.use, args.roles, args.align,
                         args.layers)
    print(json.dumps({"rows": dict(rows), "counts": counts}, indent=2) if args.json else table(rows, counts))


if __name__ == "__main__":
    main()
