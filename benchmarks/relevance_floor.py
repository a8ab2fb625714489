"""How the relevance floor of `context:assemble` (context/memories.py RELEVANCE_FLOOR) was chosen.

Run: python benchmarks/relevance_floor.py. On the labelled set in fixtures/retrieval, for every
query: the fused score (recall.rank.fuse) of each relevant memory in the top 10, and of the best
memory that is not relevant; then, for queries about nothing in the bank, the best score of all.
A floor should keep nearly every relevant hit and drop the best hit of an unrelated query."""

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
from membank.domains.context import memories  # noqa: E402

# questions a writer might ask that nothing in the fixture's bank answers
UNRELATED = ["what is the recipe for sourdough bread", "how do I configure a wifi router",
             "stock market prices in 1987", "the rules of cricket", "如何修理自行车", "今天的天气怎么样",
             "best hiking boots for winter", "python list comprehension syntax"]


def fused_scores(bank: membank.Bank, query: str) -> list[tuple[str, float]]:
    model = bank.embedder()
    assert model is not None
    vector = model.encode([query])[0]
    with bank.index.lock:
        hits = [h for h, _ in memories.ranked(bank, vector, query, 10, set())]  # as context:assemble ranks
        records = bank.index.records([h.rowid for h in hits])
    return [(records[h.rowid]["id"], h.fused) for h in hits]


def main() -> None:
    fixture = ROOT / "fixtures" / "retrieval"
    labelled = yaml.safe_load((fixture / "queries.yaml").read_text("utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("WRITENOW_HOME", str(Path(tmp) / "home"))
        project = Path(tmp) / "project"
        shutil.copytree(fixture / "project", project, ignore=shutil.ignore_patterns(".index"))
        bank = membank.open(project)
        relevant, best_other, unrelated = [], [], []
        for item in labelled:
            scored = fused_scores(bank, item["query"])
            wanted = set(item["relevant"])
            relevant += [s for i, s in scored if i in wanted]
            best_other += [s for i, s in scored if i not in wanted][:1]
        for query in UNRELATED:
            unrelated += [s for _, s in fused_scores(bank, query)][:1]
        bank.close()
    for floor in (0.2, 0.25, 0.3, 0.35, 0.4, 0.45):
        kept = sum(s >= floor for s in relevant) / len(relevant)
        dropped = sum(s < floor for s in unrelated) / len(unrelated)
        print(f"floor {floor:.2f}: keeps {kept:.0%} of relevant hits in the top 10, drops the best hit of "
              f"{dropped:.0%} of unrelated queries")
    print(f"relevant: median {statistics.median(relevant):.3f}, min {min(relevant):.3f}; best non-relevant "
          f"median {statistics.median(best_other):.3f}; unrelated best: {sorted(round(s, 3) for s in unrelated)}")


if __name__ == "__main__":
    main()
