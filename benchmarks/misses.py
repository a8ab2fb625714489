"""Why the product's preview misses same-language answers on fixtures/retrieval (issue 35's English gap).

Run: python benchmarks/misses.py [--split even|odd] [--lang en|zh]. Needs the strong tier (the real model):
fills a copy of the fixture's bank as `benchmarks/retrieval.py`'s `fused (preview)` row does, then for every
same-language question (`en` or `zh` group: not every answer in the other language) whose preview top 5
lacks an answer, prints where each missed answer ranks in the preview (`fused`), by the preview's own vector
side (`vec`: the calibrated strong score, `reason.score.vectorRank`) and words side (`bm25`,
`reason.score.lexicalRank`), by the strong model's plain cosine over every memory (`strong`) and by the static
model's (`static`), and which memories take the top 5 (`other` another language, `look-alike` a labelled
distractor). The summary splits the lost recall into answers written in the other language (the question's
other answers are in its own), same-language answers that would be in the top 5 without the non-relevant
other-language memories above them, and the rest (the same-language order), and gives recall@5 with every
non-relevant other-language memory taken out of the ranking (what the most other-language precision could
buy). docs/recall.md, "Measured quality", gives the figures."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import membank  # noqa: E402
from benchmarks.retrieval import (  # noqa: E402
    K, groups_of, lang_of, memory_texts, static_rankers, strong_rankers, wait_for_strong)


CAUSES = ("other-language answer", "other language took its place", "same-language order")


def without_other(ranking: list[str], query: dict, langs: dict[str, str]) -> list[str]:
    """`ranking` less every memory in another language than the query's that does not answer it."""
    relevant = set(query["relevant"])
    return [m for m in ranking if langs.get(m, query["lang"]) == query["lang"] or m in relevant]


def causes(ranking: list[str], query: dict, langs: dict[str, str]) -> dict[str, str]:
    """Why each answer missing from the top K is missing (one of CAUSES): it is written in the other language;
    it would be in the top K without the non-relevant other-language memories above it; else the order of the
    query's own language keeps it out."""
    kept = without_other(ranking, query, langs)[:K]
    return {m: CAUSES[0] if langs.get(m, query["lang"]) != query["lang"] else CAUSES[1] if m in kept else CAUSES[2]
            for m in query["relevant"] if m not in ranking[:K]}


def _rank(ranking: list[str], mid: str) -> str:
    return str(ranking.index(mid) + 1) if mid in ranking else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("even", "odd"), help="only the even or odd half of the queries")
    parser.add_argument("--lang", choices=("en", "zh"), default="en")
    args = parser.parse_args(argv)
    fixture = ROOT / "fixtures" / "retrieval"
    labelled = yaml.safe_load((fixture / "queries.yaml").read_text("utf-8"))
    texts = memory_texts(fixture / "project")
    langs = {mid: lang_of(body) for mid, body in texts.items()}
    chosen = [(i, q) for i, q in enumerate(labelled) if args.lang in groups_of(q)
              and (args.split is None or i % 2 == (args.split == "odd"))]
    strong = strong_rankers(texts).get("vector")
    if strong is None:
        raise SystemExit("the strong tier cannot run here (load_strong() raised StrongUnavailable)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WRITENOW_HOME"] = str(Path(tmp) / "home")
        project = Path(tmp) / "project"
        shutil.copytree(fixture / "project", project, ignore=shutil.ignore_patterns(".index"))
        bank = membank.open(project)
        try:
            bank.update_settings({"injectionMaxItems": 1_000, "injectionTokenBudget": 1_000_000})
            wait_for_strong(bank)
            static = static_rankers(bank)["vector"]
            lost = dict.fromkeys(CAUSES, 0.0)
            recall = clean = 0.0
            for i, q in chosen:
                items = bank.preview(query_text=q["query"])["items"]
                assert items and items[0]["reason"]["score"]["tier"] == "strong", items[:1]
                fused = [it["id"] for it in items]
                score = {it["id"]: it["reason"]["score"] for it in items}
                relevant = list(q["relevant"])
                recall += sum(m in fused[:K] for m in relevant) / len(relevant)
                clean += sum(m in without_other(fused, q, langs)[:K] for m in relevant) / len(relevant)
                missed = causes(fused, q, langs)
                if not missed:
                    continue
                plain, flat = strong(q["query"]), static(q["query"])
                print(f"#{i} {'/'.join(groups_of(q))}: {q['query']}")
                for m, kind in missed.items():
                    lost[kind] += 1 / len(relevant)
                    s = score.get(m, {})
                    print(f"  missed {m} [{langs[m]}, {len(texts[m])} chars] fused {_rank(fused, m)}"
                          f" vec {s.get('vectorRank') or '-'} bm25 {s.get('lexicalRank') or '-'}"
                          f" strong {_rank(plain, m)} static {_rank(flat, m)} ({kind})")
                for m in fused[:K]:
                    if m in relevant:
                        continue
                    tags = [t for t, on in (("other", langs[m] != q["lang"]),
                                            ("look-alike", m in q.get("distractors", ()))) if on]
                    s = score[m]
                    print(f"  above  {m} [{langs[m]}, {len(texts[m])} chars] vec {s.get('vectorRank') or '-'}"
                          f" bm25 {s.get('lexicalRank') or '-'} strong {_rank(plain, m)} static {_rank(flat, m)}"
                          f" {' '.join(tags)}")
        finally:
            bank.close()
    n = len(chosen)
    print(f"\n{args.lang} questions: {n}; recall@{K} {recall / n:.3f}; without non-relevant other-language"
          f" memories {clean / n:.3f}; lost (in questions): "
          + ", ".join(f"{k} {v:.1f}" for k, v in lost.items()))


if __name__ == "__main__":
    main()
