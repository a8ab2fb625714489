"""Memories through the channels: files written atomically, index updated at once, conflicts refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from membank.domains.memories import write as bank_module
from membank import Bank
from membank.kernel.errors import MembankError

from .helpers import write_memory


def test_create_writes_a_file_with_an_explicit_id_under_its_type(bank: Bank, sample: Path) -> None:
    created = bank.create_memory("fact", "project", "Maren's lamp burns whale oil.", tags=["lamp"], confidence=0.8)
    assert created["source"] == ".writenow/memories/fact/maren-s-lamp-burns-whale-oil.md"
    text = (sample / created["source"]).read_text("utf-8")
    assert text.startswith(f"---\nid: {created['id']}\ntype: fact\nscope: project\n")
    assert "tags: [lamp]" in text and "confidence: 0.8" in text
    assert created["revision"] == 1 and created["deletedAt"] is None
    assert bank.get_memory(created["id"]) == created


def test_slug_keeps_any_script_and_numbers_clashes(bank: Bank) -> None:
    first = bank.create_memory("note", "project", "林默 受伤!")
    second = bank.create_memory("note", "project", "林默 受伤?")
    assert first["source"].endswith("/note/林默-受伤.md")
    assert second["source"].endswith("/note/林默-受伤-2.md")
    assert first["id"] != second["id"]


def test_slug_keeps_the_vowel_signs_of_scripts_that_write_them_as_marks(bank: Bank) -> None:
    names = [bank.create_memory("note", "project", text)["source"].rsplit("/", 1)[1]
             for text in ("नमस्ते दुनिया", "สวัสดี ครับ", "- ़ -")]
    assert names == ["नमस्ते-दुनिया.md", "สวัสดี-ครับ.md", "memory.md"]


def test_a_memory_never_gets_a_windows_device_name(bank: Bank) -> None:
    names = [bank.create_memory("note", "project", text)["source"].rsplit("/", 1)[1] for text in ("Con", "NUL.", "com1")]
    assert names == ["con-1.md", "nul-1.md", "com1-1.md"]  # `con.md` is the console on Windows, not a file


def test_global_memories_go_to_the_global_bank(bank: Bank, home: Path) -> None:
    created = bank.create_memory("preference", "global", "Prefer British spelling.")
    assert created["source"].startswith("global:memories/preference/")
    assert (home / created["source"].removeprefix("global:")).is_file()
    assert created["scope"] == "global"


@pytest.mark.parametrize("payload, field", [
    ({"type": "Fact!", "scope": "project", "content": "x"}, "type"),
    ({"type": "fact", "scope": "planet", "content": "x"}, "scope"),
    ({"type": "fact", "scope": "project", "content": "   "}, "content"),
    ({"type": "fact", "scope": "document", "content": "x"}, "documentId"),
    ({"type": "fact", "scope": "document", "content": "x", "documentId": "../secret.md"}, "documentId"),
    ({"type": "fact", "scope": "project", "content": "x", "confidence": 2}, "confidence"),
    ({"type": "fact", "scope": "project", "content": "x", "tags": "style"}, "tags"),
    ({"type": "fact", "scope": "project"}, "content"),
])
def test_create_refuses_bad_payloads_naming_the_field(bank: Bank, payload: dict, field: str) -> None:
    envelope = bank.call("memory:create", payload)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"]["field"] == field


def test_update_bumps_revision_and_keeps_the_rest(bank: Bank, sample: Path) -> None:
    before = bank.get_memory("m-note-last-dawn")
    after = bank.update_memory("m-note-last-dawn", {"content": "The book ends at noon.", "tags": ["ending"]})
    assert after["revision"] == before["revision"] + 1
    assert after["content"] == "The book ends at noon." and after["tags"] == ["ending"]
    assert after["metadata"] == before["metadata"]  # the unknown key `mood` survives
    assert bank.list_memories()["items"][0]["updatedAt"] >= before["updatedAt"]


def test_update_with_a_stale_revision_is_a_conflict_and_changes_nothing(bank: Bank, sample: Path) -> None:
    memory = bank.get_memory("m-fact-maren-father")
    path = sample / memory["source"]
    original = path.read_bytes()
    envelope = bank.call("memory:update", {"id": memory["id"], "expectedRevision": memory["revision"] + 5,
                                           "patch": {"content": "changed"}})
    assert envelope["error"]["code"] == "CONFLICT"
    assert path.read_bytes() == original


def test_file_edited_on_disk_since_read_is_a_conflict(bank: Bank, sample: Path) -> None:
    memory = bank.get_memory("m-fact-maren-father")
    path = sample / memory["source"]
    path.write_text(path.read_text("utf-8").replace("thirty years", "forty years"), "utf-8")  # the writer, in vim
    envelope = bank.call("memory:update", {"id": memory["id"], "expectedRevision": memory["revision"],
                                           "patch": {"content": "the app's version"}})
    assert envelope["error"]["code"] == "CONFLICT"
    assert "forty years" in path.read_text("utf-8")
    assert "forty years" in bank.get_memory(memory["id"])["content"]  # the index caught up with the writer


def test_file_edited_between_read_and_write_is_a_conflict(bank: Bank, sample: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    memory = bank.get_memory("m-fact-maren-father")
    path = sample / memory["source"]
    real_rewrite = bank_module.rewrite

    def rewrite_while_the_writer_saves(*args, **kwargs):  # type: ignore[no-untyped-def]
        result = real_rewrite(*args, **kwargs)
        path.write_text(path.read_text("utf-8") + "\nA line the writer just typed.\n", "utf-8")
        return result

    monkeypatch.setattr(bank_module, "rewrite", rewrite_while_the_writer_saves)
    envelope = bank.call("memory:update", {"id": memory["id"], "patch": {"content": "the app's version"}})
    assert envelope["error"]["code"] == "CONFLICT"
    text = path.read_text("utf-8")
    assert "A line the writer just typed." in text and "the app's version" not in text


def test_delete_is_soft_and_restore_brings_it_back(bank: Bank, sample: Path) -> None:
    deleted = bank.delete_memory("m-fact-maren-father")
    assert deleted["deletedAt"]
    path = sample / bank.get_memory("m-fact-maren-father")["source"]
    assert path.is_file() and f"deleted_at: {deleted['deletedAt']}" in path.read_text("utf-8")
    assert "m-fact-maren-father" not in [m["id"] for m in bank.list_memories()["items"]]
    assert "m-fact-maren-father" not in [i["id"] for i in bank.preview()["items"]]
    assert "m-fact-maren-father" in [m["id"] for m in bank.list_memories(include_deleted=True)["items"]]
    restored = bank.restore_memory("m-fact-maren-father")
    assert restored["deletedAt"] is None
    assert "m-fact-maren-father" in [i["id"] for i in bank.preview()["items"]]


def test_file_removed_by_hand_leaves_a_tombstone_only(bank: Bank, sample: Path) -> None:
    source = bank.get_memory("m-fact-maren-father")["source"]
    (sample / source).unlink()
    report = bank.sync()
    assert report["removed"] == 1
    assert bank.status()["counts"]["tombstones"] == 1
    assert "m-fact-maren-father" not in [m["id"] for m in bank.list_memories(include_deleted=True)["items"]]
    with pytest.raises(MembankError) as caught:
        bank.get_memory("m-fact-maren-father")
    assert caught.value.code == "NOT_FOUND"


def test_hand_written_file_gets_an_explicit_id_when_membank_rewrites_it(bank: Bank, sample: Path) -> None:
    memory = bank.update_memory("notes/gulls-before-a-wreck", {"pinned": True})
    assert memory["pinned"] is True and memory["id"] == "notes/gulls-before-a-wreck"
    assert "id: notes/gulls-before-a-wreck" in (sample / memory["source"]).read_text("utf-8")


def test_document_id_patch_moves_between_scopes(bank: Bank) -> None:
    memory = bank.update_memory("m-fact-maren-father", {"documentId": "chapters/ch01.md"})
    assert (memory["scope"], memory["documentId"]) == ("document", "chapters/ch01.md")
    memory = bank.update_memory("m-fact-maren-father", {"documentId": None})
    assert (memory["scope"], memory["documentId"]) == ("project", None)


def test_unknown_id_is_not_found(bank: Bank) -> None:
    for channel in ("memory:get", "memory:delete", "memory:restore"):
        assert bank.call(channel, {"id": "m-nope"})["error"]["code"] == "NOT_FOUND"


def test_no_temporary_files_are_left_behind(bank: Bank, sample: Path) -> None:
    bank.create_memory("note", "project", "one")
    bank.update_memory("m-note-last-dawn", {"content": "two"})
    leftovers = [p for p in (sample / ".writenow").rglob("*") if "membank-tmp" in p.name]
    assert leftovers == []


def test_two_files_with_one_id_both_get_an_error_and_the_smaller_source_wins(bank: Bank, sample: Path) -> None:
    write_memory(sample, "a/dup.md", "first", id="m-dup")
    write_memory(sample, "b/dup.md", "second", id="m-dup")
    bank.sync()
    assert bank.get_memory("m-dup")["content"] == "first"
    problems = [d for d in bank.diagnostics()["items"] if "m-dup" in d["message"]]
    assert {d["source"] for d in problems} == {".writenow/memories/a/dup.md", ".writenow/memories/b/dup.md"}
    (sample / ".writenow/memories/a/dup.md").unlink()
    bank.sync()
    assert bank.get_memory("m-dup")["content"] == "second"
    assert not [d for d in bank.diagnostics()["items"] if "m-dup" in d["message"]]


def test_a_rewrite_keeps_the_file_mode_and_never_replaces_a_link(bank: Bank, sample: Path) -> None:
    source = bank.get_memory("m-fact-maren-father")["source"]
    (sample / source).chmod(0o600)
    bank.update_memory("m-fact-maren-father", {"pinned": True})
    assert (sample / source).stat().st_mode & 0o777 == 0o600
    target = sample / ".writenow/target.md"  # inside the bank, outside memories/: the link is followed
    target.write_text("---\nid: m-linked\n---\nthe real file\n", "utf-8")
    (sample / ".writenow/memories/linked.md").symlink_to(target)
    bank.sync()
    assert bank.get_memory("m-linked")["content"] == "the real file"
    envelope = bank.call("memory:update", {"id": "m-linked", "patch": {"pinned": True}})
    assert envelope["error"]["code"] == "CONFLICT"
    assert (sample / ".writenow/memories/linked.md").is_symlink()
