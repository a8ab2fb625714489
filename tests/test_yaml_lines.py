"""Front matter line by line (files/yamllines.py) is byte for byte what PyYAML's emitter writes."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from membank.files import yamllines
from membank.files.rewrite import IsoTime, dump, render

_TRICKY = ["yes", "No", "ON", "off", "null", "Null", "~", "", " ", "y", "n", "true", "False", "1:30", "017", "0x1f",
           "1e3", ".inf", ".nan", "-a", "a-", "a: b", "a #b", "#a", "a#b", "[a]", "{a}", "a,b", "*a", "&a", "!a", "|",
           ">", "'a'", '"a"', "%a", "@a", "`a", "a\nb", "a\tb", "\u2028", "林默", "नमस्ते", "<<", "=", "a b", " a",
           "a ", "m-abcdefghijkl", "deleted_at", "Y", "e", "E1", "-", "--", "---", "...", "?", "? a", "a:", ":a",
           "2026-11-28", "2026-11-28T00:00:00Z", "1_000", "+1", "-0", "0o7", "0b1", "NaN", "inf", "\x85", "\ufeff"]
_TEXT = st.one_of(st.sampled_from(_TRICKY), st.text(st.sampled_from("aZ09_- :#'\"\n.林-x\u00e9"), max_size=12))
_TIMES = st.sampled_from(["2026-11-28T00:00:00Z", "2026-11-28T10:20:30.123456Z", "2026-11-28T00:00:00+02:00",
                          "2026-11-28", "2026-1-2T3:04:05Z", "2026-11-28T00:00:00.Z"]).map(IsoTime)
_SCALAR = st.one_of(_TEXT, _TIMES, st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
                    st.booleans(), st.none())
_VALUE = st.one_of(_SCALAR, st.lists(_SCALAR, max_size=4), st.lists(_SCALAR, max_size=3).map(tuple))
_KEY = st.one_of(st.sampled_from(["id", "type", "scope", "tags", "created", "deleted_at", "pinned", "x-y",
                                  "k" * 127, "k" * 128]), _TEXT)


@settings(max_examples=300)
@given(st.dictionaries(_KEY, _VALUE, max_size=8))
def test_line_by_line_is_the_emitters_text(mapping: dict) -> None:  # type: ignore[type-arg]
    lines = yamllines.Lines(dump, IsoTime)
    for _ in range(2):  # made, then kept
        assert lines.render(mapping) in (None, dump(mapping))
    assert lines.render(mapping) is not None or not mapping or any(
        type(k) is not str or len(k) > yamllines.SIMPLE_KEY or not yamllines.plain_word(k) for k in mapping) or any(
        isinstance(v, (list, tuple)) and any(isinstance(x, (list, tuple, dict)) for x in v) for v in mapping.values())


def test_a_new_memorys_front_matter_takes_no_emitter_for_its_plain_keys() -> None:
    meta = {"id": "m-abcdefghijkl", "type": "note", "scope": "project", "origin": "manual", "confidence": 1.0,
            "tags": ["style", "tone"], "evidence": [], "created": IsoTime("2026-11-28T00:00:00Z"),
            "updated": IsoTime("2026-11-28T00:00:00Z"), "revision": 1, "deleted_at": None, "pinned": False}
    calls: list[dict] = []  # type: ignore[type-arg]
    lines = yamllines.Lines(lambda m: (calls.append(m), dump(m))[1], IsoTime)
    assert lines.render(meta) == dump(meta)
    assert [list(c) for c in calls] == [["confidence"], ["tags"], ["evidence"]]
    lines.render(meta)
    assert len(calls) == 3  # kept
    assert render(meta, "Body.").startswith("---\n" + dump(meta) + "---\n")


def test_nested_values_are_left_to_the_emitter() -> None:
    lines = yamllines.Lines(dump, IsoTime)
    assert lines.render({"metadata": {"a": 1}}) is None
    assert lines.render({"evidence": [["a"]]}) is None
    assert lines.render({1: "a"}) is None


def test_a_long_key_is_left_to_the_emitter() -> None:
    lines = yamllines.Lines(dump, IsoTime)
    for n in (99, 100, 101, 127, 128, 200):
        mapping = {"k" * n: "v", "id": "m-1"}
        assert lines.render(mapping) in (None, dump(mapping))
    assert dump({"k" * 200: "v"}).startswith("? ")


def test_one_list_under_two_keys_is_the_emitters_anchor_and_alias() -> None:
    # found attacking: the emitter writes `tags: &id001 [a, b]` / `other: *id001` for one list object met twice
    lines = yamllines.Lines(dump, IsoTime)
    shared, pair, empty = ["a", "b"], (1, 2), []
    for mapping in ({"tags": shared, "other": shared}, {"a": pair, "id": "m-1", "b": pair}, {"a": empty, "b": empty},
                    {"a": [], "b": []}, {"tags": ["a", "b"], "other": ["a", "b"]}):
        assert lines.render(mapping) in (None, dump(mapping))


_WIDE = st.one_of(st.text(max_size=20), st.text(st.sampled_from("ab 林😀\t\r\x00\x85\u2028\ufeff:#'\"\\"), max_size=12),
                  st.text(st.sampled_from("ab 林😀"), min_size=70, max_size=160))  # past 80 columns
_ANY = st.one_of(_WIDE, st.integers(-2**70, 2**70), st.floats(), st.booleans(), st.none(), st.dates(),
                 st.datetimes(timezones=st.sampled_from([None, __import__("datetime").timezone.utc])))


@settings(max_examples=200)
@given(st.dictionaries(st.sampled_from(["id", "a-b", "x_1", "tags", "Yes", "k" * 101]),
                       st.one_of(_ANY, st.lists(_ANY, max_size=3)), max_size=6))
def test_any_text_number_or_time_is_the_emitters_line_and_reads_back(mapping: dict) -> None:  # type: ignore[type-arg]
    from membank.files.frontmatter import load_yaml
    lines = yamllines.Lines(dump, IsoTime)
    whole = dump(mapping)
    assert lines.render(mapping) in (None, whole)
    assert lines.render(mapping) in (None, whole)  # kept
    assert _alike(load_yaml(whole), mapping)  # the fast reader or PyYAML reads the values back


def _alike(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and a != a:
        return b != b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_alike(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
