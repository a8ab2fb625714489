"""How the relevance floor of `context:assemble` (context/memories.py RELEVANCE_FLOOR) was chosen.

Run: python benchmarks/relevance_floor.py. On the labelled set in fixtures/retrieval, for every
query: the fused score (recall.rank.fuse) of each relevant memory in the top 10, and of the best
memory that is not relevant; then, for queries about nothing in the bank, the best score of all.
A floor should keep nearly every relevant hit and drop the best hit of an unrelated query.

Both tiers are measured: `static` (the static vectors fused with the words) and, when the strong model
loads here, `strong` (once the strong tier is filled), each with its own floors: a floor set on one tier's
scores means nothing for the other's. The strong tier's floor is on each hit's centred strong cosine
(context/memories.py `relevant_enough`), not on its fused score: the calibrated score is relative to
the query's candidates, so an unrelated query's best hit still scores high."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import membank  # noqa: E402
from benchmarks.retrieval import wait_for_strong  # noqa: E402
from membank.domains.context import memories  # noqa: E402
from membank.domains.recall import tiers  # noqa: E402

# questions a writer might ask that nothing in the fixture's bank answers
UNRELATED = ["what is the recipe for sourdough bread", "how do I configure a wifi router",
             "stock market prices in 1987", "the rules of cricket", "如何修理自行车", "今天的天气怎么样",
             "best hiking boots for winter", "python list comprehension syntax"]


def fused_scores(bank: membank.Bank, query: str, tier: str) -> list[tuple[str, float]]:
    model = bank.embedder()
    assert model is not None
    vector = model.encode([query])[0]
    strong = tiers.strong_query(bank, query) if tier == "strong" else None
    with bank.index.lock:
        hits, centred = memories.ranked_with_tier(bank, vector, query, 10, set(), strong)  # as context:assemble ranks
        assert (centred is not None) == (tier == "strong"), tier
        hits = [h for h, _ in hits]
        records = bank.index.records([h.rowid for h in hits])
    if centred is not None:  # the strong tier's floor is on the centred strong cosine (memories.relevant_enough)
        return [(records[h.rowid]["id"], centred.get(h.rowid, -1.0)) for h in hits]
    return [(records[h.rowid]["id"], h.fused) for h in hits]


FLOORS = {"static": (0.2, 0.25, 0.3, 0.35, 0.4, 0.45), "strong": (0.05, 0.1, 0.125, 0.15, 0.175, 0.2, 0.25, 0.3)}


def measure(bank: membank.Bank, labelled: list[dict], tier: str) -> None:
    relevant, best_other, unrelated = [], [], []
    for item in labelled:
        scored = fused_scores(bank, item["query"], tier)
        wanted = set(item["relevant"])
        relevant += [s for i, s in scored if i in wanted]
        best_other += [s for i, s in scored if i not in wanted][:1]
    for query in UNRELATED:
        unrelated += [s for _, s in fused_scores(bank, query, tier)][:1]
    print(f"{tier} tier:")
    for floor in FLOORS[tier]:
        kept = sum(s >= floor for s in relevant) / len(relevant)
        dropped = sum(s < floor for s in unrelated) / len(unrelated)
        print(f"  floor {floor:.2f}: keeps {kept:.0%} of relevant hits in the top 10, drops the best hit of "
              f"{dropped:.0%} of unrelated queries")
    print(f"  relevant: median {statistics.median(relevant):.3f}, min {min(relevant):.3f}; best non-relevant "
          f"median {statistics.median(best_other):.3f}; unrelated best: {sorted(round(s, 3) for s in unrelated)}")


def main() -> None:
    fixture = ROOT / "fixtures" / "retrieval"
    labelled = yaml.safe_load((fixture / "queries.yaml").read_text("utf-8"))
    labelled = labelled["queries"] if isinstance(labelled, dict) else labelled
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("WRITENOW_HOME", str(Path(tmp) / "home"))
        project = Path(tmp) / "project"
        shutil.copytree(fixture / "project", project, ignore=shutil.ignore_patterns(".index"))
        bank = membank.open(project)
        try:
            strong = tiers.strong_query(bank, "probe") is not None
            if strong:
                wait_for_strong(bank)
                measure(bank, labelled, "strong")
            measure(bank, labelled, "static")
            if not strong:
                print("strong tier: not measured (the strong model does not load here)")
        finally:
            bank.close()


if __name__ == "__main__":
    main()
