"""Conflict markers a real `git merge` leaves in the files membank reads besides memories, cards and skills
(files.md, Git; quality.md promise 11): a summary, a history month, a thread, a scene file and a capture
proposal. Each is left out of every prompt and answer until resolved, with an error on the marker's line;
a proposal holding both sides' decisions is never applied."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import membank
from membank.domains.capture.evidence import chapter_hash
from .capturekit import CH03, D, fresh, ok as _ok
from .helpers import git, git_commit

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

CH05 = "chapters/ch05.md"
RULES = "context_rules:\n  history: true\n  recap: 800\n  threads: true\n  scene: true\n"


def _files(word: str) -> dict[str, str]:
    """The thread, scene and history files as one machine wrote them (`word` marks its lines)."""
    return {"threads/lamp.md": f"---\ntitle: The lamp\nopened: chapters/ch01.md\n---\nThe lamp is {word}.\n",
            "scenes/chapters/ch05.md.md": f"---\nlocation: the {word} harbour\n---\n",
            "history/2026-11.md": f"# History · 2026-11\n\n## {CH05} · week of 2026-11-02\n\n- 10:00 continue "
                                  f"accept, {word}\n"}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / ".writenow" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_markers_in_summaries_history_threads_and_scenes_stay_out_of_prompts(sample: Path) -> None:
    skill = sample / ".writenow" / "skills" / "continue.md"
    skill.write_text(skill.read_text("utf-8").replace("context_rules:\n", RULES, 1), encoding="utf-8")
    _write(sample, _files("base"))
    git(sample, "init", "-q", "-b", "main")
    git_commit(sample, "the novel")
    for branch in ("laptop", "desktop"):
        word = branch.upper()
        git(sample, "checkout", "-q", "-b", branch, "main")
        _write(sample, _files(word))
        bank = membank.open(sample)
        try:
            _ok(bank, "summary:put", of="chapters/ch01.md", level="chapter", text=f"Lin Mo reaches the {word} light.")
        finally:
            bank.close()
        git_commit(sample, branch)
    merged = git(sample, "merge", "--no-edit", "laptop", check=False)
    conflicted = {line.split()[-1] for line in merged.stdout.splitlines() if line.startswith("CONFLICT")}
    assert len(conflicted) == 4, merged.stdout  # the thread, the scene file, the history month and the summary
    bank = membank.open(sample)
    try:
        prompt = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": "the lamp"})
        answers = json.dumps([prompt["systemPrompt"], prompt["userContent"], prompt["items"],
                              _ok(bank, "summary:list"), _ok(bank, "story:threads", at=CH05),
                              _ok(bank, "story:scene", at=CH05)])
        for shown in ("LAPTOP", "DESKTOP", "<<<<<<< HEAD", ">>>>>>> laptop"):
            assert shown not in answers
        errors = {d["source"]: d for d in _ok(bank, "index:diagnostics")["items"] if d.get("code") == "MERGE_CONFLICT"}
        for rel in ("threads/lamp.md", "scenes/chapters/ch05.md.md", "summaries/chapters_ch01.md.md",
                    "history/2026-11.md"):
            path = sample / ".writenow" / rel
            marker = path.read_text("utf-8").splitlines().index("<<<<<<< HEAD") + 1
            assert (errors[f".writenow/{rel}"]["line"], errors[f".writenow/{rel}"]["severity"]) == (marker, "error")
        _write(sample, _files("resolved"))  # resolved: each file takes part again
        bank.sync()
        prompt = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": "the lamp"})
        assert "The lamp is resolved." in prompt["userContent"] + prompt["systemPrompt"]
        summary = sample / ".writenow" / "summaries" / "chapters_ch01.md.md"
        summary.write_text(summary.read_text("utf-8").split("<<<<<<<")[0] + "Lin Mo reaches the light.\n", "utf-8")
        bank.sync()
        assert [d for d in _ok(bank, "index:diagnostics")["items"] if d.get("code") == "MERGE_CONFLICT"] == []
        assert [s["text"] for s in _ok(bank, "summary:list")["items"]] == ["Lin Mo reaches the light."]
    finally:
        bank.close()


def test_markers_in_the_global_identity_leave_the_built_in_one(sample: Path, home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "identity.md").write_text("<<<<<<< HEAD\nYou are LAPTOP.\n=======\nYou are DESKTOP.\n>>>>>>> laptop\n",
                                      encoding="utf-8")
    bank = membank.open(sample)
    try:
        prompt = _ok(bank, "context:assemble", skillId="continue", documentId=CH05)["systemPrompt"]
        assert "LAPTOP" not in prompt and "<<<<<<< HEAD" not in prompt and "writing assistant" in prompt
    finally:
        bank.close()


FATHER = {"op": "unrelate", "entity": "林黛玉", "to": "林如海", "type": "父亲", "evidence": "原不忍弃父而往"}


@pytest.mark.parametrize("ours, theirs", [("accepted", "rejected"), ("rejected", "accepted")])
def test_a_proposal_decided_differently_on_two_machines_is_never_applied(tmp_path: Path, ours: str,
                                                                        theirs: str) -> None:
    bank = fresh(tmp_path / "hlm")
    root = bank.root
    card = root / ".writenow" / "characters" / "lin-daiyu.md"
    try:
        proposed = _ok(bank, "capture:propose", documentId=D, chapterHash=chapter_hash(CH03), ops=[FATHER])
    finally:
        bank.close()
    proposal = root / proposed["proposal"]
    git(root, "init", "-q", "-b", "main")
    git_commit(root, "proposed")
    for branch, decision in (("laptop", theirs), ("desktop", ours)):
        git(root, "checkout", "-q", "-b", branch, "main")
        proposal.write_text(proposal.read_text("utf-8").replace("- status: pending", f"- status: {decision}"), "utf-8")
        git_commit(root, branch)
    assert git(root, "merge", "--no-edit", "laptop", check=False).returncode != 0
    text, before = proposal.read_text("utf-8"), card.read_bytes()
    marker = text.splitlines().index("<<<<<<< HEAD") + 1
    bank = membank.open(root)
    try:
        refused = bank.call("capture:review", {"documentId": D})
        assert not refused["ok"] and refused["error"]["code"] == "CONFLICT"
        assert refused["error"]["details"]["line"] == marker and "conflict markers" in refused["error"]["message"]
        assert card.read_bytes() == before and proposal.read_text("utf-8") == text  # nothing applied or rewritten
        listed = bank.call("capture:pending", {"documentId": D})  # not an empty list: the file says more
        assert not listed["ok"] and listed["error"]["code"] == "CONFLICT" and listed["error"]["details"]["line"] == marker
        status = next(i for i in _ok(bank, "capture:status")["items"] if i["documentId"] == D)
        assert status["problems"][0]["line"] == marker
    finally:
        bank.close()
