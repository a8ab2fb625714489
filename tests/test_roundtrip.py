"""Rewrites keep the writer's front matter: comments, unknown keys, order, quoting, line endings."""

from __future__ import annotations

from pathlib import Path

from membank import Bank

ORIGINAL = """---
# The writer's own note about this memory.
id: m-round            # keep this id
type: fact
mood: "wistful"   # an unknown key, quoted
tags: [sea, light]
revision: 3
custom:
  nested: [1, 2]
  other: {a: b}
relations:
  - {to: 苏瑶, type: ally}
created: 2026-01-01T00:00:00Z
updated: 2026-01-02T00:00:00Z
---
Maren never learned to swim.
"""


def _changed_lines(before: str, after: str) -> set[str]:
    return set(before.splitlines()) ^ set(after.splitlines())


def test_rewrite_keeps_comments_and_unknown_keys_byte_for_byte(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/memories/facts/round.md"
    path.write_text(ORIGINAL, "utf-8")
    bank.sync()
    bank.update_memory("m-round", {"tags": ["sea"]})
    after = path.read_text("utf-8")
    changed = _changed_lines(ORIGINAL, after)
    assert all(line.split(":")[0] in ("tags", "revision", "updated") for line in changed), changed
    for line in ORIGINAL.splitlines():
        if not line.startswith(("tags:", "revision:", "updated:")):
            assert line in after.splitlines()
    assert after.index("mood:") < after.index("tags:") < after.index("custom:")  # order kept


def test_metadata_patch_adds_and_removes_unknown_keys(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/memories/facts/round.md"
    path.write_text(ORIGINAL, "utf-8")
    bank.sync()
    memory = bank.update_memory("m-round", {"metadata": {"mood": None, "arc": "act two"}})
    assert "mood" not in memory["metadata"] and memory["metadata"]["arc"] == "act two"
    text = path.read_text("utf-8")
    assert "mood:" not in text and "arc: act two" in text and "# The writer's own note" in text


def test_crlf_and_bom_survive_a_rewrite(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/memories/facts/round.md"
    path.write_bytes(b"\xef\xbb\xbf" + ORIGINAL.replace("\n", "\r\n").encode("utf-8"))
    bank.sync()
    bank.update_memory("m-round", {"content": "Maren swims now."})
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf---\r\n")
    assert b"\n" not in data.replace(b"\r\n", b"")
    assert bank.get_memory("m-round")["content"] == "Maren swims now."


def test_delete_and_restore_touch_only_their_keys(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/memories/facts/round.md"
    path.write_text(ORIGINAL, "utf-8")
    bank.sync()
    bank.delete_memory("m-round")
    bank.restore_memory("m-round")
    changed = _changed_lines(ORIGINAL, path.read_text("utf-8"))
    assert {line.split(":")[0] for line in changed} <= {"revision", "updated", "deleted_at"}


def test_comments_under_a_removed_key_stay(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/memories/notes/doc.md"
    path.write_text("---\nid: m-doc\nscope: document\ndocument: chapters/ch05.md   # the fight chapter\n"
                    "# why this matters: the pacing of the whole act\ntags: [pace]\n---\nSlow down here.\n", "utf-8")
    bank.sync()
    bank.update_memory("m-doc", {"documentId": None})
    text = path.read_text("utf-8")
    assert "# why this matters: the pacing of the whole act" in text and "document:" not in text


def test_a_file_membank_reads_is_a_file_membank_can_rewrite(bank: Bank, sample: Path) -> None:
    """Old Mac line endings and a `--- ` opening line: the rewrite splits exactly as the reader does."""
    path = sample / ".writenow/memories/notes/mac.md"
    path.write_bytes(b"--- \rid: m-mac\rtype: preference\rtags: [a, b]\r---\rKeep it terse.\r")
    bank.sync()
    memory = bank.update_memory("m-mac", {"pinned": True})
    assert (memory["type"], memory["tags"], memory["content"]) == ("preference", ["a", "b"], "Keep it terse.")


def test_words_yaml_1_1_would_misread_are_written_quoted(bank: Bank) -> None:
    created = bank.create_memory("fact", "project", "Answers.", tags=["no", "on", "12:30"],
                                 metadata={"answer": "yes", "code": "007"})
    bank.sync(rebuild=True)
    again = bank.get_memory(created["id"])
    assert again["tags"] == ["no", "on", "12:30"] and again["metadata"] == {"answer": "yes", "code": "007"}
