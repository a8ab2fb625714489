"""The capture rows (docs/capture.md): `capture:review` accepting 50 ops, each a progression written into
its own card through the round-trip writer (files fsynced, the index updated), on a fresh project each
run so every run writes the same."""

from __future__ import annotations

import time
from pathlib import Path

from ...domains.capture.evidence import chapter_hash
from ...runtime.api import init, open_project
from .rows import Row, say

OPS = 50


def _project(root: Path) -> tuple[str, list[dict[str, str]]]:
    init(root)
    before = "第一回\n\n" + "".join(f"人物{i:02d}在家。\n" for i in range(OPS))
    text = "第二回\n\n" + "".join(f"人物{i:02d}出门去了第{i}里。\n" for i in range(OPS))
    (root / "chapters").mkdir(parents=True, exist_ok=True)
    (root / "chapters" / "ch01.md").write_text(before, "utf-8")
    (root / "chapters" / "ch02.md").write_text(text, "utf-8")
    for i in range(OPS):
        (root / ".writenow" / "characters" / f"p{i:02d}.md").write_text(
            f"---\nname: 人物{i:02d}\nkind: character\n# the writer's comment\nprogressions:\n"
            f"  - {{at: chapters/ch01.md, state: 在家}}\n---\n", "utf-8")
    ops = [{"op": "progress", "entity": f"人物{i:02d}", "state": "出门", "evidence": f"人物{i:02d}出门去了第{i}里"}
           for i in range(OPS)]
    return chapter_hash(text), ops


def capture_rows(tmp: Path, quick: bool, quiet: bool) -> list[Row]:
    row = Row("capture_review", f"capture:review accepting {OPS} ops (cards rewritten, fsynced, re-indexed)", "ms",
              OPS, target=300.0, target_text="p95 ≤ 300 ms")
    say(quiet, f"capture: review of {OPS} ops")
    for run in range(5 if quick else 20):
        root = tmp / f"capture{run}"
        digest, ops = _project(root)
        bank = open_project(root)
        try:
            proposed = bank.call("capture:propose", {"documentId": "chapters/ch02.md", "chapterHash": digest,
                                                     "ops": ops})
            ids = [o["id"] for o in proposed["data"]["ops"] if o["status"] == "pending"]
            decisions = [{"id": i, "decision": "accept"} for i in ids]
            started = time.perf_counter()
            done = bank.call("capture:review", {"documentId": "chapters/ch02.md", "decisions": decisions})
            row.samples.append((time.perf_counter() - started) * 1000)
            if not done["ok"] or done["data"]["counts"]["applied"] != OPS:
                row.note = f"review failed: {done.get('error') or done['data']['counts']}"
                break
        finally:
            bank.close()
    return [row]
