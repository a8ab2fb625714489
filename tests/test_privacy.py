"""Privacy mode (promise 7): once it is on, no file membank writes holds a label's text, whatever
was journalled or learned before it was turned on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membank import Bank

SECRET = "Her hands smelled of lamp oil and salt"


@pytest.fixture
def learning(bank: Bank) -> Bank:
    bank.update_settings({"preferenceLearningThreshold": 3})
    return bank


def feedback(bank: Bank, evidence: str, run: str, tags: list[str] | None = None) -> dict:
    envelope = bank.call("memory:preferences:ingest", {"runId": run, "skillId": "polish", "action": "accept",
                                                       "evidenceRef": evidence, "tags": tags or []})
    assert envelope["ok"], envelope
    return envelope["data"]


def holding(folders: list[Path], words: str) -> list[str]:
    """Every file (by name or by content) under `folders` that holds `words`, case-insensitive; the
    derived index (.index/, git-ignored, rebuilt from the files) aside."""
    found = []
    needle = words.lower()
    for folder in folders:
        for path in folder.rglob("*"):
            if ".index" in path.parts:
                continue
            flat = needle.replace(" ", "-")
            if flat in path.name.lower() or (path.is_file() and needle in path.read_bytes().decode("utf-8", "replace").lower()):
                found.append(path.relative_to(folder).as_posix())
    return found


def test_a_signal_heard_before_privacy_mode_is_learned_without_its_text(learning: Bank, sample: Path,
                                                                      home: Path) -> None:
    feedback(learning, SECRET, "before-1", tags=["sensory-detail"])
    learning.update_settings({"preferenceLearningEnabled": False})
    feedback(learning, "ignored while learning was off: lamp oil again", "before-2")  # journalled, marked ignored
    learning.update_settings({"preferenceLearningEnabled": True})
    settings = sample / ".writenow/settings.yaml"  # turned on by hand: membank hears of it at the next feedback
    settings.write_text(settings.read_text("utf-8").replace("memory:\n", "memory:\n  privacyModeEnabled: true\n"),
                        "utf-8")
    assert learning.settings()["privacyModeEnabled"] is True
    assert holding([sample / ".writenow"], "lamp oil")  # still in the journal: nothing written since
    feedback(learning, SECRET, "after-1")
    learned = feedback(learning, SECRET, "after-2")["learned"]
    assert learned["content"].startswith("Prefer what was marked sensory-detail")
    assert learned["evidence"] == ["run:before-1", "run:after-1", "run:after-2"]
    assert holding([sample / ".writenow", home], "lamp oil") == []
    assert feedback(learning, SECRET, "after-3")["count"] == 4  # the hashes kept every signal's count
    learning.sync(rebuild=True)
    assert feedback(learning, SECRET, "after-4")["count"] == 5


def test_a_learned_file_written_before_privacy_mode_is_reworded_when_updated(learning: Bank, sample: Path,
                                                                           home: Path) -> None:
    learned = [feedback(learning, SECRET, f"r-{i}") for i in range(3)][-1]["learned"]
    assert learned["content"] == f"Prefer: {SECRET}"
    learning.update_settings({"privacyModeEnabled": True})
    updated = feedback(learning, SECRET, "r-3")["learned"]
    assert updated["id"] == learned["id"] and updated["revision"] == 2 and updated["confidence"] > 0.5
    assert "private" in updated["content"] and SECRET.lower() not in updated["content"].lower()
    assert updated["source"] != learned["source"] and not (sample / learned["source"]).exists()
    assert holding([sample / ".writenow", home], "lamp oil") == []
    assert [m["id"] for m in learning.list_memories(origin="learned")["items"]].count(learned["id"]) == 1
    assert learning.index.counts()["tombstones"] == 0  # moved, not removed


def test_the_writers_own_words_in_a_learned_file_stay_in_privacy_mode(learning: Bank, sample: Path) -> None:
    learned = [feedback(learning, SECRET, f"r-{i}") for i in range(3)][-1]["learned"]
    path = sample / learned["source"]
    path.write_text(path.read_text("utf-8").replace(f"Prefer: {SECRET}", "Smell and touch before sight."), "utf-8")
    learning.sync()
    learning.update_settings({"privacyModeEnabled": True})
    edited = path.read_bytes()
    assert "learned" not in feedback(learning, SECRET, "r-3")  # nothing to reword: the file is not written
    assert path.read_bytes() == edited
    journal = "".join(p.read_text("utf-8") for p in (sample / ".writenow/journal").glob("*.jsonl"))
    assert "lamp oil" not in journal.lower()
    assert all("evidenceHash" in json.loads(line) for line in journal.splitlines() if '"feedback"' in line)


def test_turning_privacy_mode_on_takes_label_text_out_of_the_journal_at_once(learning: Bank, sample: Path) -> None:
    feedback(learning, SECRET, "before")
    assert holding([sample / ".writenow"], "lamp oil")
    learning.update_settings({"privacyModeEnabled": True})
    assert holding([sample / ".writenow"], "lamp oil") == []
    assert feedback(learning, SECRET, "after")["count"] == 2


def test_privacy_turned_on_globally_holds_in_a_project_made_by_init(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The template writes its settings as comments, so a new project does not override the global ones."""
    import membank
    from membank.files.project import init

    monkeypatch.setenv("WRITENOW_HOME", str(tmp_path / "global"))
    init(tmp_path / "novel", "Novel")
    bank = membank.open(tmp_path / "novel")
    try:
        bank.update_settings({"privacyModeEnabled": True}, scope="global")
        assert bank.settings()["privacyModeEnabled"] is True
        bank.ingest_feedback("r1", "s", "accept", "GLOBAL-SECRET words")
        journal = tmp_path / "novel" / ".writenow" / "journal"
        assert all("GLOBAL-SECRET" not in p.read_text("utf-8") for p in journal.glob("*.jsonl"))
    finally:
        bank.close()
