"""`membank skills` / `membank skill` show every rule a skill sets: the manuscript's and the story's rules
(recall, recap, threads, scene, working) too, not only the memory ones (issues 32 and 33)."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

import membank
from membank.shells.cli import app

RULES = """---
id: story-all
name: Story all
context_rules:
  surrounding: 500
  recall: 5
  recap: 2000
  threads: true
  scene: true
  working: 3
---
继续写。
"""


def test_the_skill_views_show_the_manuscript_and_story_rules(tmp_path: Path, home: Path) -> None:
    root = tmp_path / "p"
    membank.init(root, name="p")
    (root / ".writenow" / "skills" / "story-all.md").write_text(RULES, "utf-8")
    listed = CliRunner().invoke(app, ["skills", "-C", str(root)])
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if line.startswith("story-all"))
    for shown in ("recall=5", "recap=2000", "threads=true", "scene=true", "working=3"):
        assert shown in row, row
    summarize = next(line for line in listed.output.splitlines() if line.startswith("summarize"))
    assert "recap=1500" in summarize, summarize  # the built-in skill's story so far (docs/manuscript.md)
    one = CliRunner().invoke(app, ["skill", "story-all", "-C", str(root)])
    assert one.exit_code == 0, one.output
    assert "recall=5" in one.output and "scene=true" in one.output, one.output
