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
  same-language one does (within `GATE` deviations); the rest follow.

Per rule: recall@5 and MRR for English and Chinese queries about memories in their own language and
for cross-language queries (every relevant memory in the other language), and `other@5`: over the
queries whose relevant memories are all in the query's language, the average number of memories in
the other language among the top 5 (none of them relevant). The goal (quality.md, "Recall quality"):
en, zh ≥ 0.90 each, zh ≥ en, cross ≥ 0.80, other@5 ≤ 0.5.
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

from membank.domains.recall.calibrate import Candidate, calibrate, script_language  # noqa: E402
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


def centred(queries_: np.ndarray, passages: np.ndarray, qlang: list[str], plang: list[str]) -> np.ndarray:
    """Cosine after removing each language's mean memory vector (from the query: its own language's)."""
    means = {lang: passages[[i for i, x in enumerate(plang) if x == lang]].mean(axis=0) for lang in set(plang)}
    p = passages - np.stack([means[x] for x in plang])
    q = queries_ - np.stack([means.get(x, 0.0 * passages[0]) for x in qlang])
    p /= np.linalg.norm(p, axis=1, keepdims=True) + 1e-12
    q /= np.linalg.norm(q, axis=1, keepdims=True) + 1e-12
    return np.asarray(q @ p.T)


def pools_z(scores: np.ndarray, plang: list[str]) -> np.ndarray:
    out = np.empty_like(scores)
    for lang in set(plang):
        cols = [i for i, x in enumerate(plang) if x == lang]
        block = scores[:, cols]
        out[:, cols] = (block - block.mean(axis=1, keepdims=True)) / (block.std(axis=1, keepdims=True) + 1e-9)
    return out


def evaluate(rank: Callable[[int], list[int]], ids: list[str], plang: list[str], qs: list[dict[str, Any]]
             ) -> dict[str, float]:
    per: dict[str, list[tuple[float, float]]] = {"en": [], "zh": [], "cross": []}
    other: list[int] = []
    for qi, q in enumerate(qs):
        order = rank(qi)
        ranking = [ids[i] for i in order]
        relevant = set(q["relevant"])
        recall = len(relevant & set(ranking[:K])) / len(relevant)
        rr = next((1.0 / r for r, mid in enumerate(ranking, start=1) if mid in relevant), 0.0)
        per[group(q)].append((recall, rr))
        if monolingual(q, ids, plang):
            other.append(sum(1 for i in order[:K] if plang[i] != q["lang"] and ids[i] not in relevant))
    row: dict[str, float] = {}
    for g, values in per.items():
        row[f"{g} R@5"] = float(np.mean([v[0] for v in values])) if values else 0.0
        row[f"{g} MRR"] = float(np.mean([v[1] for v in values])) if values else 0.0
    row["other@5"] = float(np.mean(other)) if other else 0.0
    return row


def study(cache: Path | None = None, fixture: Path = FIXTURE) -> tuple[list[tuple[str, dict[str, float]]], dict[str, int]]:
    ids, texts = memories(fixture)
    qs = queries(fixture)
    v = vectors(ids, texts, qs, cache)
    plang = [script_language(t) for t in texts]
    qlang = [str(q.get("lang", script_language(q["query"]))) for q in qs]
    raw = v["eq"] @ v["ep"].T
    cen = centred(v["eq"], v["ep"], qlang, plang)
    static = v["sq"] @ v["sp"].T
    rows: list[tuple[str, dict[str, float]]] = []

    def by(matrix: np.ndarray) -> Callable[[int], list[int]]:
        return lambda qi: list(np.argsort(-matrix[qi], kind="stable"))

    rows.append(("static", evaluate(by(static), ids, plang, qs)))
    rows.append(("e5 raw", evaluate(by(raw), ids, plang, qs)))
    rows.append(("e5 centred", evaluate(by(cen), ids, plang, qs)))
    other = np.array([[p != q for p in plang] for q in qlang])
    for w in (0.5, 0.7):
        blend = w * cen + (1 - w) * static
        rows.append((f"blend w={w}", evaluate(by(blend), ids, plang, qs)))
    pools = 0.7 * pools_z(cen, plang) + 0.3 * pools_z(static, plang)
    rows.append(("pools z w=0.7", evaluate(by(pools), ids, plang, qs)))
    for margin in (0.5, 1.0):
        rows.append((f"pools z, other language -{margin}", evaluate(by(pools - margin * other), ids, plang, qs)))

    def shipped(qi: int) -> list[int]:
        candidates = [Candidate(i, float(cen[qi, i]), float(static[qi, i]), plang[i]) for i in range(len(ids))]
        return [c.key for c in calibrate(candidates, qlang[qi])]

    rows.append(("calibrated (shipped)", evaluate(shipped, ids, plang, qs)))
    counts = {g: sum(1 for q in qs if group(q) == g) for g in ("en", "zh", "cross")}
    counts["monolingual"] = sum(1 for q in qs if monolingual(q, ids, plang))
    counts["memories"] = len(ids)
    counts["zh memories"] = plang.count("zh")
    return rows, counts


def table(rows: list[tuple[str, dict[str, float]]], counts: dict[str, int]) -> str:
    cols = ["en R@5", "en MRR", "zh R@5", "zh MRR", "cross R@5", "cross MRR", "other@5"]
    lines = ["| rule | " + " | ".join(cols) + " |", "| --- |" + " ---: |" * len(cols)]
    lines += [f"| {name} | " + " | ".join(f"{row[c]:.2f}" for c in cols) + " |" for name, row in rows]
    lines.append("")
    lines.append("queries: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--cache", type=Path, help="keep the vectors here between runs")
    parser.add_argument("--fixture", type=Path, default=FIXTURE, help="another copy of fixtures/retrieval")
    args = parser.parse_args(argv)
    rows, counts = study(args.cache, args.fixture)
    print(json.dumps({"rows": dict(rows), "counts": counts}, indent=2) if args.json else table(rows, counts))


if __name__ == "__main__":
    main()
