"""Retrieval quality on the labelled set in fixtures/retrieval: recall@5 and MRR per ranking and group.

Run: python benchmarks/retrieval.py [--json] [--model PATH ...]. Compares the deterministic order,
words only (FTS5 BM25), vectors only (sqlite-vec cosine) and the fused ranking the preview uses, for
each model (by default the bundled multilingual model and the earlier English-only one, side by
side), over the groups: English and Chinese queries about memories in their own language, and
cross-language queries (every relevant memory in the other language: `cross_all` in queries.yaml)."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import membank  # noqa: E402
from membank import Bank  # noqa: E402
from membank.domains.recall.preview import CANDIDATES  # noqa: E402
from membank.domains.recall import terms  # noqa: E402
from membank.domains.recall import queries  # noqa: E402
from membank.index.embed import BUNDLED, EARLIER  # noqa: E402

K = 5


def _eligible_ids(bank: Bank, rows: list[tuple[int, float]]) -> list[str]:
    memories = queries.eligible_by_rowid(bank.index, [r for r, _ in rows], None)
    return [memories[r][0]["id"] for r, _ in rows if r in memories]


def rankers(bank: Bank) -> dict[str, Callable[[str], list[str]]]:
    model = bank.embedder()
    assert model is not None, "the bundled model must load"
    deterministic = [m["id"] for m, _ in queries.ordered(bank.index, None)]

    def lexical(query: str) -> list[str]:
        match = terms.match(bank.index, query)
        return _eligible_ids(bank, bank.index.lexical(match, CANDIDATES)) if match else []

    def vector(query: str) -> list[str]:
        return _eligible_ids(bank, bank.index.nearest(model.encode([query])[0], CANDIDATES))

    def fused(query: str) -> list[str]:
        return [i["id"] for i in bank.preview(query_text=query)["items"]]

    return {"deterministic": lambda q: deterministic, "lexical": lexical, "vector": vector, "fused": fused}


def score(ranking: list[str], relevant: set[str]) -> tuple[float, float]:
    """(recall@K, reciprocal rank of the first relevant item)."""
    recall = len(relevant & set(ranking[:K])) / len(relevant)
    rr = next((1.0 / i for i, mid in enumerate(ranking, start=1) if mid in relevant), 0.0)
    return recall, rr


def group(query: dict) -> str:
    """en or zh (a question about memories in its own language, or some of them), or cross."""
    return "cross" if query.get("cross_all") else query.get("lang", "en")


def evaluate(fixture: Path = ROOT / "fixtures" / "retrieval", model: Path | None = None
             ) -> dict[str, dict[str, dict[str, float]]]:
    """{ranking: {subset: {recall@5, mrr, queries}}} for subsets all, en, zh, cross; `model`: a model
    folder to use instead of the bundled one."""
    queries = yaml.safe_load((fixture / "queries.yaml").read_text("utf-8"))
    queries = queries["queries"] if isinstance(queries, dict) else queries
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WRITENOW_HOME"] = str(Path(tmp) / "home")
        project = Path(tmp) / "project"
        shutil.copytree(fixture / "project", project, ignore=shutil.ignore_patterns(".index"))
        if model is not None:
            (project / ".writenow" / "settings.yaml").write_text(f"embedding:\n  model: {json.dumps(str(model))}\n")
        bank = membank.open(project)
        try:
            bank.update_settings({"injectionMaxItems": 1_000, "injectionTokenBudget": 1_000_000})  # the maxima: no cut
            results: dict[str, dict[str, dict[str, float]]] = {}
            for name, rank in rankers(bank).items():
                per: dict[str, list[tuple[float, float]]] = {"all": [], "en": [], "zh": [], "cross": []}
                for q in queries:
                    s = score(rank(q["query"]), set(q["relevant"]))
                    per["all"].append(s)
                    per[group(q)].append(s)
                results[name] = {subset: {"recall@5": sum(r for r, _ in v) / len(v), "mrr": sum(m for _, m in v) / len(v),
                                          "queries": len(v)} for subset, v in per.items() if v}
            return results
        finally:
            bank.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--model", type=Path, action="append",
                        help="a model folder (repeatable); default: the bundled model and the earlier one")
    args = parser.parse_args(argv)
    models = [m.resolve() for m in args.model] if args.model else [BUNDLED, EARLIER]
    results = {m.name: evaluate(model=m) for m in models}
    if args.json:
        print(json.dumps({**results, "manuscript": manuscript_group()}, indent=2))
        return
    first = next(iter(results.values()))
    subsets = list(first["fused"])
    print("| ranking | model | " + " | ".join(f"{s} R@5 | {s} MRR" for s in subsets) + " |")
    print("| --- | --- | " + " | ".join("---: | ---:" for _ in subsets) + " |")
    for ranking in first:
        for name, per in results.items():
            cells = " | ".join(f"{per[ranking][s]['recall@5']:.2f} | {per[ranking][s]['mrr']:.2f}" for s in subsets)
            print(f"| {ranking} | {name} | {cells} |")
    print("\nqueries: " + ", ".join(f"{s} {first['fused'][s]['queries']}" for s in subsets))
    print_manuscript_group()



# The manuscript passages group (quality.md): per language, over fixtures/manuscript (benchmarks/manuscript.py).

def manuscript_group() -> dict[str, dict[str, float]]:
    from benchmarks import manuscript
    return manuscript.run_all()


def print_manuscript_group() -> None:
    from benchmarks import manuscript
    print("\nmanuscript passages (bundled model; a spoiler leak: a passage at or after `before`, or the answer):")
    print("\n".join(manuscript.table(manuscript_group())))


if __name__ == "__main__":
    main()
