"""A chapter a real `git merge` left with conflict markers (files.md, Git; docs/manuscript.md): an error
`MERGE_CONFLICT` on the marker's line, its passages out of search, recall and appearances, and a check or a
capture of it refused with CONFLICT naming the line, until the writer resolves it."""

from __future__ import annotations

import json
import shutil
from contextlib import closing
from pathlib import Path

import pytest

import membank
from membank import Bank
from .helpers import git, git_commit
from .storykit import ok, story

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CH05, CH06 = "chapters/ch05.md", "chapters/ch06.md"
LAST = "and Thorne's men calling to one another in the dark."
RECALL = "---\nid: recall-test\nname: Recall test\ncontext_rules:\n  recall: 5\n---\nContinue.\n"


def _edit(root: Path, line: str) -> None:
    chapter = root / CH05
    chapter.write_text(chapter.read_text("utf-8").replace(LAST, line), "utf-8")


def _found(bank: Bank, word: str) -> set[str]:
    return {i["source"] for i in ok(bank, "manuscript:search", queryText=word, limit=50)["items"]}


def _recalled(bank: Bank) -> str:
    prompt = ok(bank, "context:assemble", skillId="recall-test", documentId=CH06, documentText="Lin Mo woke.",
                selection={"start": 0, "end": 4}, queryText="Lin Mo gaff hook lantern Blackpine")
    return json.dumps([prompt["userContent"], [i for i in prompt["items"] if i["kind"] == "passage"]])


def test_a_chapter_with_markers_is_an_error_and_out_of_search_recall_checks_and_capture(sample: Path) -> None:
    (sample / CH06).write_text("# Chapter Six\n\nLin Mo woke among the pines.\n", "utf-8")
    skills = sample / ".writenow" / "skills"
    (skills / "recall-test.md").write_text(RECALL, "utf-8")
    capture = (Path(membank.__file__).parent / "template" / "skills" / "capture.md").read_text("utf-8")
    (skills / "capture.md").write_text(capture.replace("context_rules:\n", "context_rules:\n  surrounding: 400\n"),
                                       "utf-8")  # the end of the chapter before, as the text before
    git(sample, "init", "-q", "-b", "main")
    git_commit(sample, "the novel")
    for branch in ("laptop", "desktop"):
        git(sample, "checkout", "-q", "-b", branch, "main")
        _edit(sample, f"and Thorne's men calling in the {branch.upper()} dark.")
        git_commit(sample, branch)
    with closing(membank.open(sample)) as bank:  # the desktop's chapter, read before the merge
        assert CH05 in _found(bank, "DESKTOP") and "Blackpine" in _recalled(bank)
        assert [i["source"] for i in ok(bank, "kg:appearances", name="Lin Mo")["items"]].count(CH05) >= 1
    assert git(sample, "merge", "--no-edit", "laptop", check=False).returncode != 0
    marker = (sample / CH05).read_text("utf-8").splitlines().index("<<<<<<< HEAD") + 1
    with closing(membank.open(sample)) as bank:
        errors = [d for d in ok(bank, "index:diagnostics")["items"] if d.get("code") == "MERGE_CONFLICT"]
        assert [(d["source"], d["line"], d["severity"]) for d in errors] == [(CH05, marker, "error")]
        assert "conflict markers" in errors[0]["message"]
        assert all(CH05 not in _found(bank, word) for word in ("DESKTOP", "LAPTOP", "Blackpine"))
        recalled = _recalled(bank)
        assert "Blackpine" not in recalled and "<<<<<<<" not in recalled
        assert CH05 not in [i["source"] for i in ok(bank, "kg:appearances", name="Lin Mo")["items"]]
        for channel in ("kg:consistency:check", "capture:prepare"):
            refused = bank.call(channel, {"documentId": CH05})
            assert not refused["ok"] and refused["error"]["code"] == "CONFLICT", (channel, refused)
            assert refused["error"]["details"]["line"] == marker and f"{CH05}:{marker}" in refused["error"]["message"]
        after = ok(bank, "capture:prepare", documentId=CH06)["prompt"]  # ch05 is the chapter before it
        assert "LAPTOP" not in after and "<<<<<<<" not in after
        (sample / CH05).write_text((sample / CH05).read_text("utf-8").split("<<<<<<< HEAD")[0]
                                   + "and Thorne's men calling in the MERGED dark.\n", "utf-8")  # resolved
        bank.sync()
        assert [d for d in ok(bank, "index:diagnostics")["items"] if d.get("code") == "MERGE_CONFLICT"] == []
        assert CH05 in _found(bank, "MERGED") and "Blackpine" in _recalled(bank)
        assert ok(bank, "kg:consistency:check", documentId=CH05)["documentId"] == CH05
        assert ok(bank, "capture:prepare", documentId=CH05)["documentId"] == CH05
        assert "MERGED" in ok(bank, "capture:prepare", documentId=CH06)["prompt"]


LOCK = "---\ntitle: 金玉良缘\nopened: chapters/ch03.md\nkeys: [金锁]\n---\nThe golden lock.\n"


def test_a_thread_named_only_in_a_chapter_with_markers_is_not_named_there(tmp_path: Path) -> None:
    bank = story(tmp_path, {".writenow/threads/marriage.md": LOCK, ".writenow/settings.yaml":
                            "story:\n  threadWarnChapters: 2\n"})
    try:
        chapter = bank.root / "chapters" / "ch04.md"
        chapter.write_text("第四回。\n<<<<<<< HEAD\n宝钗的金锁。\n=======\n宝钗。\n>>>>>>> laptop\n", "utf-8")
        flags = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md")["flags"]
        assert [f["entity"] for f in flags if f["code"] == "THREAD_ABANDONED"] == ["threads/marriage"]
        chapter.write_text("第四回。\n宝钗的金锁。\n", "utf-8")  # resolved: ch04 names it
        flags = ok(bank, "kg:consistency:check", documentId="chapters/ch05.md")["flags"]
        assert not [f for f in flags if f["code"] == "THREAD_ABANDONED"]
    finally:
        bank.close()
