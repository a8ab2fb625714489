"""What a writer reads: diagnostics that name the bad item, and CLI views that fit the terminal (issue 31.6)."""

from __future__ import annotations

from membank.files.parse import parse_card, parse_memory


def test_a_pair_inside_tags_is_named_with_quotes_suggested_and_the_good_tags_kept() -> None:
    data = "---\ntype: note\ntags: [贾雨村, idea: 判案]\n---\n葫芦僧乱判葫芦案。\n".encode()
    parsed = parse_memory(data, ".writenow/memories/n.md", "notes/n.md", "project", 0)
    assert parsed.record is not None and parsed.record.tags == ("贾雨村",)
    (diagnostic,) = parsed.diagnostics
    assert diagnostic.severity == "warning" and diagnostic.line == 3
    assert "`idea: 判案`" in diagnostic.message and '("idea: 判案")' in diagnostic.message
    assert "item 2" in diagnostic.message and "other items are kept" in diagnostic.message
    assert "not a list" not in diagnostic.message


def test_a_card_keeps_its_good_keys_around_a_bad_one() -> None:
    data = "---\nname: 贾雨村\nkeys: [雨村, [a, b], ~]\n---\nBody.\n".encode()
    parsed = parse_card(data, ".writenow/characters/j.md", "characters", "j.md", 0)
    assert parsed.record is not None and parsed.record.keys == ("雨村",)
    assert [d.message.split(" is ")[0] for d in parsed.diagnostics] == ["`keys` item 2", "`keys` item 3"]
