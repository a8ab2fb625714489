"""The core round trip a user takes first: open, list, create, preview."""

from membank import Bank


def test_sample_project_lists_live_memories_in_order(bank: Bank) -> None:
    ids = [m["id"] for m in bank.list_memories()["items"]]
    assert ids[0] == "m-note-ch05-pacing"  # document scope ranks first in a listing
    assert all(not m["deletedAt"] for m in bank.list_memories()["items"])
    assert len(bank.list_memories(include_deleted=True)["items"]) == len(ids) + 1


def test_created_memory_shows_in_preview_at_once(bank: Bank) -> None:
    created = bank.create_memory("preference", "project", "Never use the word 'suddenly'.")
    preview = bank.preview()
    assert created["id"] in [i["id"] for i in preview["items"]]
