"""A rewrite keeps what every value means to the reader (YAML 1.1) and the bytes of every key it did not change."""

from __future__ import annotations

from pathlib import Path

import pytest

from membank import Bank
from membank.kernel.errors import MembankError
from membank.files.project import init, read_project
from membank.files.rewrite import rewrite

SETTINGS = """# mine
memory:
  privacyModeEnabled: yes   # the writer's own word
  injectionMaxItems: 20
  injectionEnabled: on
embedding:
  model: ~
"""


def _lines_other_than(text: str, keys: tuple[str, ...]) -> list[str]:
    return [line for line in text.split("\n") if not line.lstrip().startswith(keys)]


def test_settings_set_keeps_a_yes_true_and_every_other_line(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.write_text(SETTINGS, "utf-8")
    assert bank.settings()["privacyModeEnabled"] is True
    settings = bank.update_settings({"injectionMaxItems": 10})
    assert settings["privacyModeEnabled"] is True and settings["injectionEnabled"] is True
    assert settings["injectionMaxItems"] == 10
    after = path.read_text("utf-8")
    assert _lines_other_than(after, ("injectionMaxItems:",)) == _lines_other_than(SETTINGS, ("injectionMaxItems:",))
    assert "  injectionMaxItems: 10\n" in after


def test_privacy_mode_written_as_yes_survives_a_settings_change_and_keeps_text_out_of_the_journal(
        bank: Bank, sample: Path) -> None:
    (sample / ".writenow/settings.yaml").write_text(SETTINGS, "utf-8")
    bank.update_settings({"injectionMaxItems": 10})
    bank.ingest_feedback("run-1", "style", "reject", "the raw words of chapter five")
    journal = "".join(p.read_text("utf-8") for p in (sample / ".writenow/journal").rglob("*") if p.is_file())
    assert journal and "raw words of chapter five" not in journal


def test_a_new_setting_goes_under_its_section_with_the_section_indent(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.write_text("memory:\n    injectionEnabled: off\n# the end\n", "utf-8")
    bank.update_settings({"injectionMaxItems": 4})
    assert path.read_text("utf-8") == "memory:\n    injectionEnabled: off\n    injectionMaxItems: 4\n# the end\n"
    bank.update_embedding_settings({"model": "models/m2v"})
    assert path.read_text("utf-8").endswith("# the end\nembedding:\n  model: models/m2v\n")
    assert bank.settings()["injectionEnabled"] is False


MEMORY = """---
id: m-tricky
type: fact
pinned: yes
tags: [sea]
mood: on                # the writer's own words, typed as YAML 1.1 reads them
when: 1:30
code: 017
big: 1_000
half: .5
at: 2026-11-21 10:00:00
plain_date: 2026-11-21
hex: 0x1f
nothing: ~
octal_word: 0o17
evidence:
    - run:a
    - run:b
steps:
- one
- two
summary: |
  line one
    indented line

  last line
folded: >-
  folded
  text
plot: the first part
  and the second part
quoted: "first
  second"
anchor: &shared [x, y]
alias: *shared
revision: 2
---
Body text.
"""


def _write(bank: Bank, sample: Path, text: str) -> Path:
    path = sample / ".writenow/memories/facts/tricky.md"
    path.write_text(text, "utf-8")
    bank.sync()
    return path


def test_a_tag_edit_keeps_pinned_yes_and_every_untouched_line(bank: Bank, sample: Path) -> None:
    path = _write(bank, sample, MEMORY)
    before = bank.get_memory("m-tricky")
    assert before["pinned"] is True
    after = bank.update_memory("m-tricky", {"tags": ["sea", "no"]})
    assert after["pinned"] is True and after["tags"] == ["sea", "no"]
    assert after["metadata"] == before["metadata"]
    text = path.read_text("utf-8")
    changed = ("tags:", "revision:", "updated:")
    assert _lines_other_than(text, changed) == _lines_other_than(MEMORY, changed)


def test_unknown_keys_keep_their_yaml_1_1_types(bank: Bank, sample: Path) -> None:
    _write(bank, sample, MEMORY)
    metadata = bank.get_memory("m-tricky")["metadata"]
    assert (metadata["mood"], metadata["when"], metadata["code"], metadata["big"], metadata["hex"]) == (
        True, 90, 15, 1000, 31)
    assert metadata["octal_word"] == "0o17" and metadata["nothing"] is None and metadata["half"] == 0.5
    bank.update_memory("m-tricky", {"pinned": False})
    assert bank.get_memory("m-tricky")["metadata"] == metadata


def test_multi_line_scalars_and_block_lists_stay_as_written(bank: Bank, sample: Path) -> None:
    path = _write(bank, sample, MEMORY)
    metadata = bank.get_memory("m-tricky")["metadata"]
    assert metadata["summary"] == "line one\n  indented line\n\nlast line\n"
    assert (metadata["folded"], metadata["plot"], metadata["quoted"]) == (
        "folded text", "the first part and the second part", "first second")
    bank.delete_memory("m-tricky")
    bank.restore_memory("m-tricky")
    text = path.read_text("utf-8")
    for block in ("evidence:\n    - run:a\n    - run:b\n", "steps:\n- one\n- two\n",
                  "summary: |\n  line one\n    indented line\n\n  last line\n", "folded: >-\n  folded\n  text\n",
                  "plot: the first part\n  and the second part\n", 'quoted: "first\n  second"\n'):
        assert block in text
    assert bank.get_memory("m-tricky")["metadata"] == metadata


def test_a_key_set_to_what_it_already_means_is_left_as_written(bank: Bank, sample: Path) -> None:
    path = _write(bank, sample, MEMORY)
    bank.update_memory("m-tricky", {"pinned": True, "metadata": {"mood": True, "when": 90}})
    text = path.read_text("utf-8")
    assert "\npinned: yes\n" in text and "\nwhen: 1:30\n" in text and "mood: on                # the" in text


def test_an_end_of_line_comment_stays_on_a_changed_one_line_key(bank: Bank, sample: Path) -> None:
    path = _write(bank, sample, MEMORY.replace("revision: 2\n", "revision: 2   # bumped by membank\n"))
    bank.update_memory("m-tricky", {"pinned": False})
    assert "\nrevision: 3   # bumped by membank\n" in path.read_text("utf-8")


def test_a_change_that_would_break_an_alias_is_refused_and_nothing_is_written(bank: Bank, sample: Path) -> None:
    text = "---\nid: m-alias\ntags: &mine [sea]\nalso: *mine\n---\nBody.\n"
    path = _write(bank, sample, text)
    with pytest.raises(MembankError) as refused:
        bank.update_memory("m-alias", {"tags": ["land"]})
    assert refused.value.code == "CONFLICT" and "alias" in refused.value.message
    assert path.read_text("utf-8") == text and bank.get_memory("m-alias")["tags"] == ["sea"]


def test_front_matter_written_as_one_flow_mapping_is_refused_not_rewritten(bank: Bank, sample: Path) -> None:
    text = "---\n{id: m-flow, type: fact, mood: yes}   # all on one line\n---\nBody.\n"
    path = _write(bank, sample, text)
    with pytest.raises(MembankError) as refused:
        bank.update_memory("m-flow", {"pinned": True})
    assert refused.value.code == "CONFLICT"
    assert path.read_text("utf-8") == text


def test_an_indented_mapping_and_explicit_keys_are_edited_in_place(bank: Bank, sample: Path) -> None:
    text = "---\n  id: m-ind\n  ? tags\n  : [a]\n  mood: off\n---\nBody.\n"
    path = _write(bank, sample, text)
    memory = bank.update_memory("m-ind", {"tags": ["b"], "pinned": True})
    assert memory["tags"] == ["b"] and memory["pinned"] is True and memory["metadata"] == {"mood": False}
    after = path.read_text("utf-8")
    assert after.startswith("---\n  id: m-ind\n  tags: [b]\n  mood: off\n  pinned: true\n  revision: 2\n  updated: ")


def test_what_membank_writes_reads_back_exactly(bank: Bank) -> None:
    odd = ["a\x85b", "line\u2028sep", "tab\there", "😀", " lead", "trail ", "*star", "&amp", "!bang", "%pct", "@at",
           "`tick", "a: b", "a #b", "", "\ufeffbom", "---", "a\n---\nb"]
    created = bank.create_memory("fact", "project", "Odd words.", tags=odd, metadata={"odd": odd + ["x" * 2000]})
    bank.update_memory(created["id"], {"metadata": {"more": odd[::-1]}})
    bank.sync(rebuild=True)
    again = bank.get_memory(created["id"])
    assert again["tags"] == odd and again["metadata"] == {"odd": odd + ["x" * 2000], "more": odd[::-1]}


def test_settings_keep_bom_and_crlf_and_refuse_a_one_line_section(bank: Bank, sample: Path) -> None:
    path = sample / ".writenow/settings.yaml"
    path.write_bytes(b"\xef\xbb\xbf# mine\r\nmemory:\r\n  injectionEnabled: no\r\n")
    bank.update_settings({"injectionMaxItems": 2})
    assert path.read_bytes() == b"\xef\xbb\xbf# mine\r\nmemory:\r\n  injectionEnabled: no\r\n  injectionMaxItems: 2\r\n"
    path.write_text("memory: {injectionMaxItems: 5, injectionEnabled: off}\n", "utf-8")
    with pytest.raises(MembankError) as refused:
        bank.update_settings({"injectionMaxItems": 2})
    assert refused.value.code == "DB_ERROR"
    assert path.read_text("utf-8") == "memory: {injectionMaxItems: 5, injectionEnabled: off}\n"


@pytest.mark.parametrize("name", ["The Lighthouse Keeper and the Long Winter of the Northern Coast, a Novel in Three Parts",
                                  "Act one\nAct two", "yes", "017", "line\u2028sep", "not utf-8 \udcff"])
def test_a_project_name_reads_back_whole(tmp_path: Path, name: str) -> None:
    info, _ = init(tmp_path / "novel", name)
    assert read_project(tmp_path / "novel").name == info.name == name.replace("\udcff", "?")


def test_a_removed_keys_indented_comment_stays_a_comment(bank: Bank, sample: Path) -> None:
    """Once `document:` is gone, its indented comment would be read as more `summary` text: it moves left."""
    text = ("---\nid: m-gap\nsummary: |\n  one\n  two\ndocument: chapters/ch05.md\n  # why: the fight\n"
            "scope: document\n---\nBody.\n")
    path = _write(bank, sample, text)
    memory = bank.update_memory("m-gap", {"documentId": None})
    assert memory["metadata"]["summary"] == "one\ntwo\n" and memory["scope"] == "project"
    assert "\n  two\n# why: the fight\nscope: project\n" in path.read_text("utf-8")


def test_blank_lines_after_a_replaced_block_of_text_stay() -> None:
    text = "---\nsummary: |\n  one\n\n\nkept: |+\n  two\n\nnext: 1\n---\nBody.\n"
    assert rewrite(text, {"summary": "new"}) == "---\nsummary: new\n\n\nkept: |+\n  two\n\nnext: 1\n---\nBody.\n"
    assert rewrite(text, {"kept": "new"}) == "---\nsummary: |\n  one\n\n\nkept: new\nnext: 1\n---\nBody.\n"
