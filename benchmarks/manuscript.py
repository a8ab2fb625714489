"""Manuscript retrieval quality (docs/manuscript.md): `python -m benchmarks.manuscript [--json]`.

For each language of fixtures/manuscript (zh: 红楼梦 第一回–第四回, split at each `第…回`; en: Pride and
Prejudice chapters 1–6, split at each `Chapter N` line) writes the chapter files of a fresh project,
indexes them, and for every question of that language:
- recall@5: `manuscript:search` returns the passage holding the answer in its first 5; MRR over the first 50
  (a miss is printed on stderr with the passage's vector and word ranks);
- the passages' strong windows are embedded first, so the strong tier ranks where it runs
  (`MEMBANK_STRONG_ENCODER=off`: the static vectors, as in a project whose windows are not filled yet);
- leaks: asked again with `before` = the answer's chapter, a returned passage holds the answer or lies at
  or after that chapter (must be 0).
`--set heldout` asks the held-out questions instead (fixtures/manuscript/README.md), `--set all` both.
`python benchmarks/retrieval.py` prints the same rows beside the memory groups (`table`)."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import membank  # noqa: E402
from membank.domains.manuscript.strong import fill  # noqa: E402

FIXTURE = ROOT / "fixtures" / "manuscript"
K = 5


@dataclass(frozen=True)
class Novel:
    """One language's half of the fixture: its excerpt, its questions and the line that starts a chapter."""

    excerpt: str
    questions: str
    heading: re.Pattern[str]
    heldout: str  # the held-out questions (fixtures/manuscript/README.md: written before any ranking change)


NOVELS = {
    "zh": Novel("hongloumeng_ch01-04_excerpt.txt", "questions.yaml", re.compile(r"^第[一二三四五六七八九十百]+回", re.M),
                "heldout.yaml"),
    "en": Novel("pride_and_prejudice_ch01-06_excerpt.txt", "questions_en.yaml", re.compile(r"^Chapter \d+$", re.M),
                "heldout_en.yaml"),
}
_HEADING = NOVELS["zh"].heading


def chapters(text: str, heading: re.Pattern[str] = _HEADING) -> list[str]:
    """The text cut at each heading line (what precedes the first one, the title, is left out)."""
    starts = [m.start() for m in heading.finditer(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def chapter_file(n: int) -> str:
    return f"chapters/ch{n:02d}.txt"


SETS = ("frozen", "heldout")


def load(lang: str, which: str = "frozen") -> tuple[list[str], list[dict]]:
    """(chapters, questions of set `which`: `frozen`, the first questions, or `heldout`) of one language."""
    novel = NOVELS[lang]
    text = (FIXTURE / novel.excerpt).read_text("utf-8")
    asked = novel.questions if which == "frozen" else novel.heldout
    return chapters(text, novel.heading), yaml.safe_load((FIXTURE / asked).read_text("utf-8"))


def write_project(root: Path, lang: str, which: str = "frozen") -> list[dict]:
    """A fresh project at `root` holding the language's chapters; the questions of set `which`."""
    parts, questions = load(lang, which)
    membank.init(root)
    (root / "chapters").mkdir()
    for n, chapter in enumerate(parts, 1):
        (root / chapter_file(n)).write_text(chapter, "utf-8")
    return questions


def leaked(items: list[dict], question: dict) -> int:
    """Passages returned with `before` = the question's chapter that hold its answer or do not lie
    strictly before that chapter."""
    before = chapter_file(question["chapter"])
    return sum(question["answer"] in i["text"] or i["source"] >= before for i in items)


def run(lang: str = "zh", which: str = "frozen") -> dict[str, float]:
    """{questions, recall@5, mrr, leaks} of one language's set `which`; a missed question is printed on stderr."""
    with tempfile.TemporaryDirectory() as tmp:
        saved_home = os.environ.get("WRITENOW_HOME")
        os.environ["WRITENOW_HOME"] = str(Path(tmp) / "home")  # the writer's own global bank stays out of it
        root = Path(tmp) / lang
        questions = write_project(root, lang, which)
        bank = membank.open(root)
        try:
            tier = "strong" if fill(bank) else "static"
            found = rr = 0.0
            leaks = 0
            for q in questions:
                items = bank.search_manuscript(query_text=q["q"], limit=50)["items"]
                rank = next((n for n, i in enumerate(items, 1) if q["answer"] in i["text"]), None)
                if rank is not None and rank <= K:
                    found += 1
                else:  # why, in the search's own words: the passage's vector and word ranks
                    why = items[rank - 1]["reason"] if rank else "not in the first 50"
                    print(f"missed ({lang}, {which}): {q['q']} [{why}]", file=sys.stderr)
                rr += 1.0 / rank if rank else 0.0
                early = bank.search_manuscript(query_text=q["q"], before=chapter_file(q["chapter"]), limit=50)["items"]
                leaks += leaked(early, q)
            n = len(questions)
            return {"questions": n, "recall@5": found / n, "mrr": rr / n, "leaks": leaks, "tier": tier}
        finally:
            bank.close()
            if saved_home is None:
                os.environ.pop("WRITENOW_HOME", None)
            else:
                os.environ["WRITENOW_HOME"] = saved_home


def run_all(sets: tuple[str, ...] = ("frozen",), langs: list[str] | None = None) -> dict[str, dict[str, float]]:
    """The figures per language (the key `en`, or `en heldout` for a set other than the frozen one)."""
    return {lang if which == "frozen" else f"{lang} {which}": run(lang, which)
            for which in sets for lang in (langs or NOVELS)}


def table(results: dict[str, dict[str, float]]) -> list[str]:
    """Markdown rows: the manuscript passages group per language (`manuscript:search`, fused ranking)."""
    lines = ["| manuscript:search | tier | questions | R@5 | MRR | spoiler leaks |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for lang, r in results.items():
        lines.append(f"| {lang} | {r['tier']} | {r['questions']} | {r['recall@5']:.2f} | {r['mrr']:.2f} | {r['leaks']} |")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--lang", choices=sorted(NOVELS), action="append", help="one language (repeatable)")
    parser.add_argument("--set", choices=[*SETS, "all"], default="frozen",
                        help="which questions: the frozen ones (default), the held-out ones, or both")
    args = parser.parse_args(argv)
    results = run_all(SETS if args.set == "all" else (args.set,), args.lang)
    print(json.dumps(results, indent=2) if args.json else "\n".join(table(results)))


if __name__ == "__main__":
    main()
