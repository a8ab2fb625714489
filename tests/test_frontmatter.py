"""The fast reader of flat front matter gives exactly what PyYAML gives, or steps aside."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from membank.files.frontmatter import _Loader, _load_flat, iso, load_yaml

SCALARS = [
    "fact", "m-7k2q9x4b1c0d", "style/short-sentences", "林默", "阿默 Lin Mo", "yes", "No", "on", "OFF", "true", "False",
    "null", "Null", "~", "1", "0", "-3", "+7", "010", "0x1F", "0o17", "1_000", "190:20:30", "1.0", "0.5", ".5", "1e3",
    "1.5e-3", ".inf", "-.Inf", ".nan", "2026-11-21", "2026-11-21T10:00:00Z", "2026-11-21 10:00:00", "2026-02-30T10:00:00Z",
    "2026-11-21T10:00:00+08:00", "http://example.com/a#b", "a: b", "a:b", "it's", '"quoted"', "'single'", "a #b",
    "a#b", "- dash", "*star", "&anchor", "!tag", "@at", "`tick`", "%pct", "?q", "|", ">", "[x]", "{a: 1}", "=", "<<",
    "chapters/ch05.md", "两个 词", "", " ", "\xa0nbsp", "nbsp\xa0", "\u3000全角",
]
KEYS = ["id", "type", "tags", "created", "mood", "x_1", "a-b", "deleted_at", "pinned", "confidence"]


def _normal(value: Any) -> Any:
    """Times compared as the ISO text membank turns them into; everything else as it is."""
    if isinstance(value, (dt.date, dt.datetime)):
        return ("time", iso(value))
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


def _check(text: str) -> bool:
    """True when the fast path read `text` (and then it must agree with PyYAML)."""
    fast = _load_flat(text)
    if fast is None:
        return False  # PyYAML reads it
    try:
        slow = yaml.load(text, Loader=_Loader)  # noqa: S506
    except yaml.YAMLError:
        raise AssertionError(f"the fast path read what PyYAML refuses: {text!r}") from None
    assert _normal(fast) == _normal(slow or {}), text
    return True


def test_every_scalar_alone_in_a_line_a_flow_list_and_a_block_list() -> None:
    taken = 0
    for scalar in SCALARS:
        for text in (f"k: {scalar}", f"k: [{scalar}]", f"k: [{scalar}, x]", f"k:\n  - {scalar}", f"k:\n- {scalar}",
                     f"k: {scalar}  # note", f"k: {scalar} #"):
            taken += _check(text)
    assert taken > len(SCALARS) * 3  # most of them really went the fast way


def test_block_list_of_flow_mappings_agrees_with_pyyaml() -> None:
    """A card's progressions, `- {at: …, state: …}`: every scalar as a value and as a key, read the fast way
    only when PyYAML reads it the same."""
    taken = 0
    for scalar in SCALARS:
        for item in (f"{{at: chapters/ch01.md, state: {scalar}}}", f"{{{scalar}: x}}", f"{{a: {scalar}, b: {scalar}}}",
                     f"{{a: x,b: {scalar}}}", f"{{ a: {scalar} }}", f"{{a: {scalar}}}  # why", f"{{a: [{scalar}]}}"):
            for text in (f"k:\n  - {item}", f"k:\n  - {item}\n  - x\nn: 1"):
                taken += _check(text)
    assert _load_flat("progressions:\n  - {at: chapters/ch01.md, state: 在家}") is not None
    assert taken > len(SCALARS) * 3


def test_a_plain_key_is_its_word_on_both_ways() -> None:
    """YAML 1.1 reads the keys `yes:`, `on:`, `null:` as True and None; a writer naming a field means the
    word, and both readers must say the same whatever else the file holds. Values keep YAML's reading."""
    for scalar in SCALARS:
        for text in (f"{scalar}: x", f"id: m-1\n{scalar}: [a]", f"{scalar}:\n  - a", f"k:\n  - {{{scalar}: x}}"):
            _check(text)
    assert _load_flat("yes: 1") == {"yes": 1} and _load_flat("pinned: yes") == {"pinned": True}
    slow = 'on: x\nyes: [a]\nNULL: ~\n"off": 1\npinned: yes\nq: "quoted: the slow way"'
    assert _load_flat(slow) is None
    assert load_yaml(slow) == {"on": "x", "yes": ["a"], "NULL": None, "off": 1, "pinned": True,
                               "q": "quoted: the slow way"}


line = st.one_of(
    st.tuples(st.sampled_from(KEYS), st.sampled_from(SCALARS)).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    st.tuples(st.sampled_from(KEYS), st.lists(st.sampled_from(SCALARS), max_size=3))
    .map(lambda kv: f"{kv[0]}: [{', '.join(kv[1])}]"),
    st.tuples(st.sampled_from(KEYS), st.lists(st.sampled_from(SCALARS), max_size=3), st.sampled_from(["", "  ", "    "]))
    .map(lambda kv: f"{kv[0]}:" + "".join(f"\n{kv[2]}- {item}" for item in kv[1])),
    st.sampled_from(["# a comment", "", "  # indented comment", "key with space: x", "  nested: 1", " - odd item",
                     "   - deeper item", "- item"]),
    st.tuples(st.sampled_from(KEYS), st.sampled_from(SCALARS)).map(lambda kv: f"{kv[0]}: {kv[1]}   # why"),
    st.tuples(st.sampled_from(KEYS), st.lists(st.tuples(st.sampled_from(KEYS + SCALARS), st.sampled_from(SCALARS)),
                                              max_size=3))
    .map(lambda kv: f"{kv[0]}:\n  - {{{', '.join(f'{k}: {v}' for k, v in kv[1])}}}"),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(line, min_size=1, max_size=8))
def test_fast_path_agrees_with_pyyaml(lines: list[str]) -> None:
    _check("\n".join(lines))


def test_typical_front_matter_takes_the_fast_path() -> None:
    text = ("id: m-1   # keep\ntype: fact\nscope: project\nconfidence: 0.8\ntags: [style, 林默]\nevidence:\n  - run:r1\n"
            "created: 2026-11-21T10:00:00Z\ndeleted_at: null\npinned: false\nmood: wistful")
    fast = _load_flat(text)
    assert fast is not None and _normal(fast) == _normal(yaml.safe_load(text))
    assert load_yaml(text)["evidence"] == ["run:r1"]


def test_a_bare_equals_sign_is_text() -> None:
    """YAML 1.1 tags a plain `=` as a "value"; a writer means the text, in a scalar or a list."""
    from membank.files.frontmatter import load_yaml

    assert load_yaml("mood: =\nmarks: [=, x]\n") == {"mood": "=", "marks": ["=", "x"]}


@pytest.mark.parametrize("value", ['!!bool maybe', '!!bool ""', '!!timestamp foo', '!!timestamp ""',
                                   '!<tag:yaml.org,2002:timestamp> foo', '!!int ""', '!!int +', '!!float ""'])
def test_a_tagged_value_its_type_cannot_hold_is_one_files_problem(sample: Path, home: Path, value: str) -> None:
    """PyYAML's constructors raise KeyError, AttributeError or IndexError on these: a diagnostic on the file."""
    import membank

    note = sample / ".writenow" / "memories" / "notes" / "tagged.md"
    note.write_text(f"---\ntype: note\nx: {value}\n---\nA note.\n", "utf-8")
    bank = membank.open(sample, home=home)
    try:
        problems = [d for d in bank.diagnostics()["items"] if d["source"].endswith("notes/tagged.md")]
        assert [(d["line"], d["severity"]) for d in problems] == [(3, "error")]
        assert "!! type" in problems[0]["message"]
        assert bank.list_memories()["items"]  # every other file still answers
    finally:
        bank.close()


def test_a_long_block_list_is_read_in_linear_time() -> None:
    """150,000 items (900 KB) took 39 s when each item copied the list; the fast path appends."""
    from membank.files.frontmatter import load_yaml

    assert len(load_yaml("tags:\n" + "  - a\n" * 150_000)["tags"]) == 150_000
