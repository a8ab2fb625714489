"""Preference learning: journal, signals, learned files the writer can read, edit and delete."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import membank
from membank import Bank
from membank.domains.learning.decisions import SIMILARITY, same_meaning


@pytest.fixture
def learning(bank: Bank) -> Bank:
    bank.update_settings({"preferenceLearningThreshold": 3})
    return bank


def feedback(bank: Bank, evidence: str, action: str = "accept", run: str = "r", tags: list[str] | None = None) -> dict:
    envelope = bank.call("memory:preferences:ingest", {"runId": run, "skillId": "polish", "action": action,
                                                       "evidenceRef": evidence, "tags": tags or []})
    assert envelope["ok"], envelope
    return envelope["data"]


def journal_lines(sample: Path) -> list[dict]:
    lines = []
    for path in sorted((sample / ".writenow/journal").rglob("*.jsonl")):
        lines.extend(json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip())
    return lines


def test_three_accepts_make_a_learned_preference_the_preview_shows(learning: Bank, sample: Path) -> None:
    results = [feedback(learning, "omit needless words", run=f"run-{i}") for i in range(3)]
    assert [r["count"] for r in results] == [1, 2, 3]
    assert "learned" not in results[1]
    learned = results[2]["learned"]
    assert learned["origin"] == "learned" and learned["type"] == "preference"
    assert learned["source"].startswith(".writenow/memories/learned/")
    assert learned["evidence"] == ["run:run-0", "run:run-1", "run:run-2"]
    assert learned["content"] == "Prefer: omit needless words" and learned["confidence"] == 0.5
    item = next(i for i in learning.preview()["items"] if i["id"] == learned["id"])
    assert item["reason"]["detail"].startswith("scope project > type preference")
    path = sample / learned["source"]
    before = path.read_bytes()
    more = feedback(learning, "Omit   NEEDLESS words", run="run-3")  # same signal, normalized
    assert more["count"] == 4 and "learned" not in more  # counted; the file stays as learned (no merge conflicts)
    assert path.read_bytes() == before and learning.get_memory(learned["id"])["confidence"] == 0.5
    assert len(learning.list_memories(origin="learned")["items"]) == 2  # the sample's own learned one + this


def test_every_event_is_a_journal_line_and_rebuild_keeps_the_counts(learning: Bank, sample: Path) -> None:
    feedback(learning, "omit needless words")
    feedback(learning, "omit needless words")
    feedback(learning, "x")  # ignored, still journalled for audit
    lines = journal_lines(sample)
    assert [line["event"] for line in lines] == ["feedback"] * 3
    assert lines[2]["ignored"] == "EVIDENCE_TOO_SHORT"
    learning.sync(rebuild=True)
    assert feedback(learning, "omit needless words")["count"] == 3


def test_a_torn_last_line_is_skipped_and_reported(learning: Bank, sample: Path) -> None:
    feedback(learning, "omit needless words")
    path = next((sample / ".writenow/journal").rglob("*.jsonl"))
    with path.open("ab") as f:
        f.write(b'{"event": "feedback", "signalKey": "prefer:')  # the crash
    learning.sync()
    problems = [d for d in learning.diagnostics()["items"] if d["source"].startswith(".writenow/journal/")]
    assert len(problems) == 1 and problems[0]["severity"] == "warning" and "cut off" in problems[0]["message"]
    assert feedback(learning, "omit needless words")["count"] == 2  # the next line starts on a fresh line
    assert all(json.loads(l) for l in path.read_text("utf-8").splitlines()[2:])
    later = [d for d in learning.diagnostics()["items"] if d["source"].startswith(".writenow/journal/")]
    assert [d["severity"] for d in later] == ["warning"]  # still only a warning: doctor keeps passing


def test_a_journal_over_one_mebibyte_is_read_whole(learning: Bank, sample: Path) -> None:
    feedback(learning, "omit needless words", run="first")
    path = next((sample / ".writenow/journal").rglob("*.jsonl"))
    line = path.read_text("utf-8").splitlines()[0]
    filler = json.loads(line) | {"signalKey": "prefer:filler", "evidence": "x" * 400}
    with path.open("a", encoding="utf-8") as f:
        for i in range(3000):  # about 1.4 MB of other signals, each its own event
            f.write(json.dumps(filler | {"eventId": f"e-filler-{i}"}) + "\n")
    learning.sync()
    assert path.stat().st_size > 1024 * 1024
    assert feedback(learning, "omit needless words", run="last")["count"] == 2
    assert not [d for d in learning.diagnostics()["items"] if d["source"].startswith(".writenow/journal/")]


def test_noise_is_ignored_with_its_reason(learning: Bank) -> None:
    short = feedback(learning, "  a ")
    assert short["ignored"] is True and short["reason"] == "EVIDENCE_TOO_SHORT"
    learning.update_settings({"preferenceLearningEnabled": False})
    off = feedback(learning, "omit needless words")
    assert off["ignored"] is True and off["reason"] == "LEARNING_DISABLED" and off["count"] == 0


def test_accept_and_reject_are_separate_and_partial_counts_half(learning: Bank) -> None:
    prefer = feedback(learning, "omit needless words", action="accept")
    avoid = feedback(learning, "omit needless words", action="reject")
    assert prefer["signalKey"].startswith("prefer:") and avoid["signalKey"].startswith("avoid:")
    assert avoid["count"] == 1
    assert feedback(learning, "omit needless words", action="partial")["count"] == 1.5
    for _ in range(2):
        last = feedback(learning, "omit needless words", action="reject")
    assert last["learned"]["content"] == "Avoid: omit needless words"


def test_the_writer_edits_a_learned_file_and_membank_keeps_the_words(learning: Bank, sample: Path) -> None:
    learned = [feedback(learning, "omit needless words") for _ in range(3)][-1]["learned"]
    path = sample / learned["source"]
    path.write_text(path.read_text("utf-8").replace("Prefer: omit needless words", "Cut every needless word."), "utf-8")
    learning.sync()
    edited = path.read_bytes()
    assert "learned" not in feedback(learning, "omit needless words")
    assert path.read_bytes() == edited and learning.get_memory(learned["id"])["content"] == "Cut every needless word."


@pytest.mark.parametrize("how", ["rm", "soft"])
def test_a_deleted_learned_file_comes_back_only_through_new_signals(learning: Bank, sample: Path, how: str) -> None:
    learned = [feedback(learning, "omit needless words", run=f"old-{i}") for i in range(3)][-1]["learned"]
    if how == "rm":
        (sample / learned["source"]).unlink()
        learning.sync()
    else:
        learning.delete_memory(learned["id"])
    first = feedback(learning, "omit needless words", run="new-1")
    assert "learned" not in first  # the three old signals were heard already
    feedback(learning, "omit needless words", run="new-2")
    back = feedback(learning, "omit needless words", run="new-3")["learned"]
    assert back["id"] == learned["id"] and back["deletedAt"] is None
    assert back["evidence"] == ["run:new-1", "run:new-2", "run:new-3"]


def test_same_meaning_in_other_words_counts_together(learning: Bank) -> None:
    first = feedback(learning, "short sentences")
    second = feedback(learning, "keep sentences short")
    assert second["signalKey"] == first["signalKey"] and second["count"] == 2
    third = feedback(learning, "use short sentences")
    assert third["signalKey"] == first["signalKey"] and third["learned"]["content"] == "Prefer: short sentences"
    # opposites sit close in a static model; the word check keeps them apart
    more, less = feedback(learning, "more dialogue"), feedback(learning, "less dialogue")
    assert more["signalKey"] != less["signalKey"]


def test_similarity_rule_with_the_bundled_model(learning: Bank) -> None:
    model = learning.embedder()
    assert model is not None
    def sim(a: str, b: str) -> float:
        v = model.encode([a, b])
        return float(v[0] @ v[1])
    assert same_meaning("short sentences", "keep sentences short", sim("short sentences", "keep sentences short"))
    assert sim("more dialogue", "less dialogue") >= SIMILARITY  # why the word check exists
    assert not same_meaning("more dialogue", "less dialogue", sim("more dialogue", "less dialogue"))
    assert not same_meaning("short sentences", "avoid adverbs", sim("short sentences", "avoid adverbs"))


def test_without_a_model_only_the_same_words_count_together(learning: Bank) -> None:
    learning.update_embedding_settings({"model": "no-such-model"})
    first = feedback(learning, "short sentences")
    assert feedback(learning, "keep sentences short")["signalKey"] != first["signalKey"]


def test_privacy_mode_writes_no_raw_evidence(learning: Bank, sample: Path) -> None:
    learning.update_settings({"privacyModeEnabled": True})
    secret = "Her hands smelled of lamp oil and salt"
    for i in range(3):
        result = feedback(learning, secret, run=f"p-{i}", tags=["sensory-detail"])
    learned = result["learned"]
    assert secret.lower() not in learned["content"].lower() and "sensory-detail" in learned["content"]
    for path in (sample / ".writenow").rglob("*"):
        if path.is_file() and ".index" not in path.parts:
            text = path.read_text("utf-8", errors="replace").lower()
            assert "lamp oil" not in text, path
    feedback_lines = [line for line in journal_lines(sample) if line["event"] == "feedback"]
    assert len(feedback_lines) == 3 and all("evidence" not in line and line["evidenceHash"] for line in feedback_lines)


def test_clear_soft_deletes_learned_and_resets_signals(learning: Bank, sample: Path) -> None:
    learned = [feedback(learning, "omit needless words") for _ in range(3)][-1]["learned"]
    cleared = learning.call("memory:preferences:clear", {})["data"]
    assert cleared["cleared"] == 2  # this one and the sample's learned preference
    assert learning.get_memory(learned["id"])["deletedAt"] is not None
    assert learning.list_memories(origin="learned")["items"] == []
    assert [line["event"] for line in journal_lines(sample)] == ["feedback"] * 3 + ["learned", "preferences-cleared"]
    assert feedback(learning, "omit needless words")["count"] == 1
    learning.sync(rebuild=True)
    assert feedback(learning, "omit needless words")["count"] == 2


def test_the_loop_end_to_end(sample: Path) -> None:
    """Learning and injection on, three accepts, the preview has it; injection off, nothing."""
    bank = membank.open(sample)
    try:
        bank.call("memory:settings:update", {"patch": {"injectionEnabled": True, "preferenceLearningEnabled": True,
                                                       "preferenceLearningThreshold": 3}})
        for i in range(3):
            feedback(bank, "end scenes on an image, not a line of dialogue", run=f"loop-{i}")
        preview = bank.call("memory:injection:preview", {})["data"]
        assert "Prefer: end scenes on an image, not a line of dialogue" in [i["content"] for i in preview["items"]]
        bank.call("memory:settings:update", {"patch": {"injectionEnabled": False}})
        off = bank.call("memory:injection:preview", {})["data"]
        assert off["items"] == [] and [r["code"] for r in off["diagnostics"]["reasons"]] == ["INJECTION_DISABLED"]
    finally:
        bank.close()


def test_learned_files_survive_an_index_rebuild_from_scratch(learning: Bank, sample: Path) -> None:
    [feedback(learning, "omit needless words") for _ in range(3)]
    learning.close()
    shutil.rmtree(sample / ".writenow/.index")
    reopened = membank.open(sample)
    try:
        assert feedback(reopened, "omit needless words")["count"] == 4
    finally:
        reopened.close()
