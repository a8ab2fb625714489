"""Retrieval quality on the labelled set in fixtures/retrieval: recall@5 and MRR per tier, ranking and group.

Run: python benchmarks/retrieval.py [--json] [--model PATH ...]. Compares the deterministic order, words
only (FTS5 BM25), vectors only (sqlite-vec cosine) and the fused ranking the preview uses, for each static
model (by default the bundled multilingual model and the earlier English-only one, side by side), and the
strong tier's vectors (cosine over every memory) when `membank.index.strong.load_strong()` loads, and the
product's own preview once its strong tier is filled (`strong / fused (preview)`: calibrated strong scores
fused with the words, as `memory:injection:preview` ranks). Groups:

- en, zh: questions about memories in their own language (or some of them);
- en-zh, zh-en: cross-language questions (every relevant memory in the other language: `cross_all`);
- paraphrase: the hard set's same-language paraphrases (no content word shared with the answer);
- distractor: the hard set's questions with look-alike memories (same names, different facts), with the
  share of them where a look-alike ranks above every relevant memory (`lookalike first`);
- monolingual: every question whose relevant memories are all in its own language, with the precision
  figure of issue 35: the average number of memories in the other language, not relevant, in the top 5
  (`other@5`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time
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
GROUPS = ("all", "en", "zh", "en-zh", "zh-en", "paraphrase", "distractor", "monolingual")
LABELS = {"en-zh": "en→zh", "zh-en": "zh→en"}
CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
Ranker = Callable[[str], list[str]]


def lang_of(text: str) -> str:
    """zh when a text has more CJK characters than Latin letters (the fixture's rule), else en."""
    return "zh" if len(CJK.findall(text)) > len(re.findall(r"[A-Za-z]", text)) else "en"


def memory_texts(project: Path) -> dict[str, str]:
    """{memory id: body} of the fixture's bank."""
    out = {}
    for path in sorted((project / ".writenow" / "memories").rglob("*.md")):
        text = path.read_text("utf-8")
        end = text.find("\n---\n", 4)
        out[str(yaml.safe_load(text[4:end + 1])["id"])] = text[end + 5:].strip()
    return out


def groups_of(query: dict) -> list[str]:
    """The groups a labelled query counts in (besides `all`)."""
    lang = query.get("lang", "en")
    out = [f"{lang}-{'zh' if lang == 'en' else 'en'}" if query.get("cross_all") else lang]
    if query.get("paraphrase"):
        out.append("paraphrase")
    if query.get("distractors"):
        out.append("distractor")
    if query.get("monolingual"):
        out.append("monolingual")
    return out


def score(ranking: list[str], relevant: set[str]) -> tuple[float, float]:
    """(recall@K, reciprocal rank of the first relevant item)."""
    recall = len(relevant & set(ranking[:K])) / len(relevant)
    rr = next((1.0 / i for i, mid in enumerate(ranking, start=1) if mid in relevant), 0.0)
    return recall, rr


def other_language(ranking: list[str], query: dict, langs: dict[str, str]) -> int:
    """How many of the top K are in the other language than the query and not relevant."""
    return sum(1 for mid in ranking[:K] if langs.get(mid, query["lang"]) != query["lang"]
               and mid not in query["relevant"])


def lookalike_first(ranking: list[str], query: dict) -> bool:
    """A look-alike ranks above every relevant memory (or a look-alike is ranked and no answer is)."""
    relevant, lookalikes = set(query["relevant"]), set(query.get("distractors", []))
    for mid in ranking:
        if mid in relevant:
            return False
        if mid in lookalikes:
            return True
    return False


def summarise(rank: Ranker, labelled: list[dict], langs: dict[str, str]) -> dict[str, dict[str, float]]:
    """{group: {recall@5, mrr, queries[, other@5][, lookalike first]}} for one ranking."""
    per: dict[str, list[tuple[float, float]]] = {g: [] for g in GROUPS}
    other: list[int] = []
    first: list[bool] = []
    for q in labelled:
        ranking = rank(q["query"])
        s = score(ranking, set(q["relevant"]))
        for g in ["all", *groups_of(q)]:
            per[g].append(s)
        if q.get("monolingual"):
            other.append(other_language(ranking, q, langs))
        if q.get("distractors"):
            first.append(lookalike_first(ranking, q))
    out = {g: {"recall@5": sum(r for r, _ in v) / len(v), "mrr": sum(m for _, m in v) / len(v), "queries": len(v)}
           for g, v in per.items() if v}
    if other:
        out["monolingual"]["other@5"] = sum(other) / len(other)
    if first:
        out["distractor"]["lookalike first"] = sum(first) / len(first)
    return out


def static_rankers(bank: Bank) -> dict[str, Ranker]:
    """The rankings of the static tier. Their reads of the index go through a snapshot of their own
    (`reading()`): the bank's writer connection belongs to its writers (the background fill writes while
    this thread reads; apsw raises ThreadingViolationError on a connection two threads use at once)."""
    from membank.index.store import reading

    model = bank.embedder()
    assert model is not None, "the bundled model must load"
    with reading():
        deterministic = [m["id"] for m, _ in queries.ordered(bank.index, None)]

    def eligible(rows: list[tuple[int, float]]) -> list[str]:
        memories = queries.eligible_by_rowid(bank.index, [r for r, _ in rows], None)
        return [memories[r][0]["id"] for r, _ in rows if r in memories]

    def lexical(query: str) -> list[str]:
        with reading():
            match = terms.match(bank.index, query)
            return eligible(bank.index.lexical(match, CANDIDATES)) if match else []

    def vector(query: str) -> list[str]:
        encoded = model.encode([query])[0]
        with reading():
            return eligible(bank.index.nearest(encoded, CANDIDATES))

    def fused(query: str) -> list[str]:
        return [i["id"] for i in bank.preview(query_text=query)["items"]]

    return {"deterministic": lambda q: deterministic, "lexical": lexical, "vector": vector, "fused": fused}


def strong_rankers(texts: dict[str, str]) -> dict[str, Ranker]:
    """The strong tier's vectors alone (cosine over every memory, exact), or {} when the tier cannot run
    here (StrongUnavailable: the table then shows the static tier only)."""
    from membank.index.strong import StrongUnavailable, load_strong

    try:
        encoder = load_strong()
    except StrongUnavailable:
        return {}
    ids = list(texts)
    matrix = encoder.passages([texts[i] for i in ids])

    def vector(query: str) -> list[str]:
        scores = matrix @ encoder.queries([query])[0]
        return [ids[j] for j in sorted(range(len(ids)), key=lambda j: (-float(scores[j]), j))]

    return {"vector": vector}


def wait_for_strong(bank: Bank, timeout: float = 900.0) -> None:
    """Until every entry of `bank` has its strong vector (the background fill that `membank.open` starts)."""
    changed = threading.Event()
    bank.listeners.append(lambda method, params: method == "index:strong" and changed.set())
    end = time.monotonic() + timeout
    while not _complete(bank):
        if time.monotonic() > end:
            raise SystemExit("the strong tier did not fill in time")
        changed.wait(5)
        changed.clear()


def _complete(bank: Bank) -> bool:
    from membank.index.store import reading

    with reading():  # a snapshot of its own: the background fill writes meanwhile
        filled, total = bank.index.strong_counts()
    return filled == total > 0


def evaluate(fixture: Path = ROOT / "fixtures" / "retrieval", model: Path | None = None, tier: str = "static"
             ) -> dict[str, dict[str, dict[str, float]]]:
    """{ranking: {group: {recall@5, mrr, queries, ...}}} of one tier (`static`: the static model, by default
    the bundled one, or the folder `model`; `strong`: the strong tier's vectors alone, {} when it cannot run
    here; `preview`: the product's preview with its strong tier filled, {} when it cannot run here)."""
    labelled = yaml.safe_load((fixture / "queries.yaml").read_text("utf-8"))
    labelled = labelled["queries"] if isinstance(labelled, dict) else labelled
    texts = memory_texts(fixture / "project")
    langs = {mid: lang_of(body) for mid, body in texts.items()}
    if tier == "strong":
        return {name: summarise(rank, labelled, langs) for name, rank in strong_rankers(texts).items()}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["WRITENOW_HOME"] = str(Path(tmp) / "home")
        project = Path(tmp) / "project"
        shutil.copytree(fixture / "project", project, ignore=shutil.ignore_patterns(".index"))
        if model is not None:
            (project / ".writenow" / "settings.yaml").write_text(f"embedding:\n  model: {json.dumps(str(model))}\n")
        bank = membank.open(project)
        try:
            bank.update_settings({"injectionMaxItems": 1_000, "injectionTokenBudget": 1_000_000})  # the maxima: no cut
            if tier == "preview":
                from membank.domains.recall import tiers

                if tiers.strong_query(bank, "probe") is None:
                    return {}
                wait_for_strong(bank)
                fused = static_rankers(bank)["fused"]
                probe = bank.preview(query_text=labelled[0]["query"])["items"]
                assert probe and probe[0]["reason"]["score"]["tier"] == "strong", probe[:1]
                return {"fused (preview)": summarise(fused, labelled, langs)}
            return {name: summarise(rank, labelled, langs) for name, rank in static_rankers(bank).items()}
        finally:
            bank.close()


def table(results: dict[tuple[str, str], dict[str, dict[str, dict[str, float]]]]) -> str:
    """The markdown table: one row per tier, ranking and model; R@5 and MRR per group; other@5; look-alike first."""
    head = ["tier", "ranking", "model"] + [f"{LABELS.get(g, g)} {m}" for g in GROUPS for m in ("R@5", "MRR")] + \
        ["other@5", "look-alike first"]
    lines = ["| " + " | ".join(head) + " |", "| --- | --- | --- | " + " | ".join("---:" for _ in head[3:]) + " |"]
    rankings = list(dict.fromkeys(r for per in results.values() for r in per))
    for ranking in rankings:
        for (tier, name), per in results.items():
            if ranking not in per:
                continue
            g = per[ranking]
            cells = [f"{g[x]['recall@5']:.2f} | {g[x]['mrr']:.2f}" if x in g else "– | –" for x in GROUPS]
            extra = [f"{g['monolingual']['other@5']:.2f}" if "other@5" in g.get("monolingual", {}) else "–",
                     f"{g['distractor']['lookalike first']:.2f}" if "lookalike first" in g.get("distractor", {}) else "–"]
            lines.append(f"| {tier} | {ranking} | {name} | " + " | ".join(cells + extra) + " |")
    first = next(iter(results.values()))
    counts = next(iter(first.values()))
    lines.append("")
    lines.append("queries: " + ", ".join(f"{LABELS.get(g, g)} {counts[g]['queries']}" for g in GROUPS if g in counts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--model", type=Path, action="append",
                        help="a static model folder (repeatable); default: the bundled model and the earlier one")
    args = parser.parse_args(argv)
    models = [m.resolve() for m in args.model] if args.model else [BUNDLED, EARLIER]
    results: dict[tuple[str, str], dict[str, dict[str, dict[str, float]]]] = {
        ("static", m.name): evaluate(model=m) for m in models}
    strong = evaluate(tier="strong")
    if strong:
        from membank.index.strong import load_strong

        strong.update(evaluate(tier="preview"))
        results[("strong", load_strong().name)] = strong
    if args.json:
        print(json.dumps({**{f"{tier}/{name}": per for (tier, name), per in results.items()},
                          "manuscript": manuscript_group()}, indent=2))
        return
    print(table(results))
    if not strong:
        print("strong tier: not shown (load_strong() raised StrongUnavailable)")
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
