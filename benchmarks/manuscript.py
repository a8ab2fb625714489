"""Manuscript retrieval quality (docs/manuscript.md): `python -m benchmarks.manuscript`.

Splits fixtures/manuscript/hongloumeng_ch01-04_excerpt.txt at each `第…回` heading into chapter files of a
fresh project, indexes them, and for every question of fixtures/manuscript/questions.yaml:
- recall@5: `manuscript:search` (limit 5) returns the passage holding the answer;
- leaks: asked again with `before` = the answer's chapter (and with `before` = the scene of its passage),
  a passage holding the answer is returned (must be 0)."""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import yaml

import membank

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "manuscript"
_HEADING = re.compile(r"^第[一二三四五六七八九十百]+回", re.M)


def chapters(text: str) -> list[str]:
    starts = [m.start() for m in _HEADING.finditer(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def run() -> dict[str, float]:
    text = (FIXTURE / "hongloumeng_ch01-04_excerpt.txt").read_text("utf-8")
    questions = yaml.safe_load((FIXTURE / "questions.yaml").read_text("utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "hlm"
        membank.init(root)
        (root / "chapters").mkdir()
        for n, chapter in enumerate(chapters(text), 1):
            (root / "chapters" / f"ch{n:02d}.txt").write_text(chapter, "utf-8")
        bank = membank.open(root)
        try:
            found = leaks = 0
            missed = []
            for q in questions:
                items = bank.search_manuscript(query_text=q["q"], limit=5)["items"]
                if any(q["answer"] in i["text"] for i in items):
                    found += 1
                else:
                    missed.append(q["q"])
                before = f"chapters/ch{q['chapter']:02d}.txt"
                early = bank.search_manuscript(query_text=q["q"], before=before, limit=50)["items"]
                leaks += sum(q["answer"] in i["text"] for i in early)
            for q in missed:
                print("missed:", q, file=sys.stderr)
            return {"questions": len(questions), "recall@5": found / len(questions), "leaks": leaks}
        finally:
            bank.close()


if __name__ == "__main__":
    print(run())
