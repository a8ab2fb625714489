"""Bad input never stops the bank (quality.md, reliability promise 4).

fixtures/bad/ holds broken and awkward files laid out like a `.writenow/` folder;
fixtures/bad/expected.yaml says what membank must report for each one. Every file
is its own test case; the rest of the project must still be indexed, and
`membank doctor` must list every problem as source:line.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import membank
from membank import Bank
from membank.shells.cli import app
from membank.files import project
from membank.files.frontmatter import load_yaml
from membank.files.yamlbounds import MAX_DEPTH, TooComplex
from membank.files.parse import ID_RE, path_id
from membank.index import entries

from .badcorpus import BAD, CASES, SECTIONS, build, committed, source_of


def indexed_sources(bank: Bank) -> set[str]:
    found = {m["source"] for m in bank.list_memories(include_deleted=True)["items"]}
    found |= {c["source"] for c in bank.index.cards()}
    found |= {s["source"] for s in bank.index.skills()}
    return found


@dataclass
class Corpus:
    root: Path
    home: Path
    bank: Bank
    diagnostics: list[dict[str, Any]]
    indexed: set[str]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    root, home = build(tmp_path_factory.mktemp("bad-corpus"))
    bank = membank.open(root, home=home)
    yield Corpus(root, home, bank, bank.diagnostics()["items"], indexed_sources(bank))
    bank.close()


def _matches(diagnostic: dict[str, Any], want: dict[str, Any]) -> bool:
    return (diagnostic["severity"] == want["severity"] and diagnostic["line"] == want["line"]
            and want["message"].lower() in diagnostic["message"].lower())


# -- the corpus itself ----------------------------------------------------------------------------


def test_corpus_has_at_least_30_files_and_each_has_an_expectation() -> None:
    files = committed()
    assert len(files) >= 30
    expected = {c["path"] for c in CASES if "make" not in c}
    assert set(files) == expected
    assert len({c["path"] for c in CASES}) == len(CASES), "a path is listed twice in expected.yaml"


def test_git_kept_the_bytes_as_written() -> None:
    """fixtures/bad/.gitattributes (`* -text`) keeps CRLF, BOMs, Latin-1 and binaries untouched."""
    assert b"\r\n" in (BAD / "memories/facts/crlf-windows.md").read_bytes()
    assert (BAD / "memories/preferences/bom-notepad.md").read_bytes().startswith(b"\xef\xbb\xbf---\n")
    assert (BAD / "characters/bom-crlf-card.md").read_bytes().startswith(b"\xef\xbb\xbf---\r\n")
    assert b"Ren\xe9e" in (BAD / "memories/notes/latin1-accents.md").read_bytes()
    assert (BAD / "memories/notes/cover-image.md").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (BAD / "memories/notes/utf16-notepad.md").read_bytes().startswith(b"\xff\xfe")


# -- one test per file ----------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c["path"] for c in CASES])
def test_bad_file(case: dict[str, Any], corpus: Corpus) -> None:
    source = source_of(case["path"])
    got = [d for d in corpus.diagnostics if d["source"] == source]
    wanted = [] if case["severity"] == "none" else [case, *case.get("also", [])]
    assert len(got) == len(wanted), f"{source}: expected {len(wanted)} diagnostic(s), got {got}"
    for want in wanted:
        assert any(_matches(d, want) for d in got), f"{source}: nothing like {want} in {got}"
    if "indexed" in case:
        indexed = source in corpus.indexed or any(s.startswith(source + "/") for s in corpus.indexed)
        assert indexed == case["indexed"], f"{source} indexed: {indexed}"


# -- everything else ------------------------------------------------------------------------------


def test_every_other_file_is_still_indexed(corpus: Corpus) -> None:
    listed = {source_of(c["path"]) for c in CASES}
    good = [f".writenow/{p.relative_to(corpus.root / '.writenow').as_posix()}"
            for section in SECTIONS for p in (corpus.root / ".writenow" / section).rglob("*.md")
            if not any(parent.is_symlink() for parent in p.parents) and not p.is_symlink() and not p.is_dir()]
    good = [s for s in good if s not in listed and s.isprintable() and s == s.encode("utf-8", "replace").decode()]
    assert good, "the template's files should be in the project"
    with_problems = {d["source"] for d in corpus.diagnostics}
    for source in good:
        assert source in corpus.indexed, source
        assert source not in with_problems, source
    should_index = {source_of(c["path"]) for c in CASES if c.get("indexed") and "make" not in c}
    assert corpus.indexed == set(good) | should_index


def test_wrong_values_fall_back_to_defaults(corpus: Corpus) -> None:
    memories = {m["source"]: m for m in corpus.bank.list_memories(include_deleted=True)["items"]}

    def memory(path: str) -> dict[str, Any]:
        return memories[source_of(path)]

    assert memory("memories/preferences/type-two-words.md")["type"] == "preference"  # from the folder
    assert memory("memories/preferences/scope-chapter.md")["scope"] == "project"
    assert memory("memories/preferences/origin-ai.md")["origin"] == "manual"
    assert memory("memories/preferences/confidence-text.md")["confidence"] == 1.0
    assert memory("memories/preferences/confidence-percent.md")["confidence"] == 1.0
    assert memory("memories/preferences/tags-mapping.md")["tags"] == []
    assert memory("memories/preferences/tags-string.md")["tags"] == ["dialogue"]
    assert memory("memories/preferences/evidence-string.md")["evidence"] == []
    assert memory("memories/preferences/revision-zero.md")["revision"] == 1
    assert memory("memories/preferences/revision-text.md")["revision"] == 1
    assert memory("memories/preferences/pinned-quoted-yes.md")["pinned"] is False
    assert memory("memories/facts/created-in-words.md")["createdAt"] is None
    assert memory("memories/facts/updated-impossible-date.md")["updatedAt"] == "2026-02-14T00:00:00Z"
    assert memory("memories/facts/deleted-at-yes.md")["deletedAt"] is None
    assert memory("memories/facts/document-outside-project.md")["documentId"] is None
    assert memory("memories/facts/document-absolute-path.md")["documentId"] is None
    assert memory("memories/notes/duplicate-id-a.md")["id"] == "m-lamp-oil"
    assert memory("global/memories/document-scope-in-global.md")["scope"] == "global"
    assert memory("memories/notes/blank-line-before-front-matter.md")["content"].startswith("---")
    assert memory("memories/facts/updated-year-999.md")["updatedAt"] == "0999-06-01T00:00:00Z"
    assert memory("memories/facts/updated-past-9999-in-utc.md")["updatedAt"] == "2026-01-05T09:00:00Z"  # created
    assert memory("memories/facts/created-before-year-1-in-utc.md")["createdAt"] is None
    assert memory("memories/notes/infinite-number.md")["metadata"] == {"weight": None}
    assert memory("memories/notes/merge-key.md")["metadata"]["scene"] == {"mood": "grim", "pace": "fast"}
    derived = memory("memories/notes/my lamp note.md")["id"]  # the path has spaces: a valid id is made from it
    assert ID_RE.fullmatch(derived) and derived.startswith("notes/my-lamp-note-"), derived
    # BOM and CRLF are read as if they were not there
    assert memory("memories/preferences/bom-notepad.md")["content"] == "Short sentences in action scenes."
    assert memory("memories/facts/crlf-windows.md")["content"] == "The Teeth are three rocks off the harbour mouth."
    assert memory("memories/facts/crlf-windows.md")["tags"] == ["harbour"]
    assert memory("memories/facts/bom-crlf.md")["tags"] == ["lighthouse"]
    cards = {c["source"]: c for c in corpus.bank.index.cards()}
    card = cards[source_of("characters/bom-crlf-card.md")]
    assert (card["name"], card["aliases"], "\r" in card["content"]) == ("Ada Finch", ["Ada"], False)
    assert cards[source_of("characters/include-sometimes.md")]["include"] == "auto"
    assert cards[source_of("characters/aliases-as-text.md")]["aliases"] == ["the keeper's daughter"]
    assert cards[source_of("characters/relations-as-text.md")]["relations"] == []
    skills = {s["source"]: s for s in corpus.bank.index.skills()}
    # kept as written: assembly refuses the skill, naming `context_rules` (test_context.py)
    assert skills[source_of("skills/context-rules-list.md")]["contextRules"] == ["memories", "characters"]


def test_wrong_settings_use_the_default_and_keep_the_rest(corpus: Corpus) -> None:
    settings = corpus.bank.settings()
    assert settings["injectionMaxItems"] == 20  # `many` in the project file: the default
    assert settings["injectionTokenBudget"] == 1500  # the valid line next to it still counts


def test_the_bank_still_answers(corpus: Corpus) -> None:
    preview = corpus.bank.preview()
    assert preview["items"]
    assert all(i["content"].strip() for i in preview["items"])  # empty memories are never injected
    status = corpus.bank.status()
    assert status["diagnostics"]["errors"] == sum(d["severity"] == "error" for d in corpus.diagnostics)


def test_no_message_or_source_carries_a_path_from_the_computer(corpus: Corpus) -> None:
    base = corpus.root.parent
    for d in corpus.diagnostics:
        for text in (d["source"], d["message"]):
            assert str(base) not in text and base.name not in text, d
            assert str(Path.home()) not in text and "/Users/" not in text, d
            assert ".." not in text, d
        assert d["source"].startswith((".writenow/", "global:")), d
        assert not d["source"].replace("global:", "").startswith("/"), d


def test_rebuilding_the_index_gives_the_same_diagnostics(corpus: Corpus) -> None:
    corpus.bank.sync(rebuild=True)
    assert corpus.bank.diagnostics()["items"] == corpus.diagnostics
    assert indexed_sources(corpus.bank) == corpus.indexed


# -- fixing a file clears its diagnostic ------------------------------------------------------------


@pytest.mark.parametrize("narrow_from", [None, 0], ids=["key-by-key", "narrowed-first"])
def test_diagnostics_clear_when_the_files_are_fixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    narrow_from: int | None) -> None:
    if narrow_from is not None:  # as a large sync settles clashes (index/entries.py)
        monkeypatch.setattr(entries, "NARROW_FROM", narrow_from)
    root, home = build(tmp_path)
    bank = membank.open(root, home=home)
    try:
        clashing = [d for d in bank.diagnostics()["items"] if "is also used by" in d["message"]]
        assert {d["source"] for d in clashing} == {source_of("memories/notes/duplicate-id-a.md"),
                                                   source_of("memories/notes/duplicate-id-b.md")}
        bank_dir = root / ".writenow"
        fixes = {
            "memories/notes/unclosed-front-matter.md": "---\ntype: note\ntags: [pacing]\n---\nCut the cove.\n",
            "memories/notes/latin1-accents.md": "---\ntype: note\n---\nThe innkeeper is called Renée.\n",
            "memories/notes/duplicate-id-b.md": "---\nid: m-lamp-oil-copy\ntype: note\n---\nThe second lamp note.\n",
            "memories/preferences/confidence-text.md": "---\ntype: preference\nconfidence: 0.9\n---\nDry voice.\n",
            "characters/no-name.md": "---\nname: Harbourmaster\n---\nLost two sons to the Teeth.\n",
            "world/word-document.md": "---\nname: Saltmere\nkind: place\n---\nThe bay.\n",
        }
        before = {d["source"] for d in bank.diagnostics()["items"]}
        for rel, text in fixes.items():
            assert source_of(rel) in before
            (bank_dir / rel).write_bytes(text.encode("utf-8"))
        (bank_dir / "memories/notes/huge-paste.md").write_text("---\ntype: note\n---\nA short note now.\n", "utf-8")
        (bank_dir / "memories/notes/link-out.md").unlink()
        (bank_dir / "settings.yaml").write_text("memory:\n  injectionMaxItems: 7\n", "utf-8")
        (home / "settings.yaml").write_text("memory:\n  privacyModeEnabled: false\n", "utf-8")
        bank.sync()
        after = {d["source"] for d in bank.diagnostics()["items"]}
        cleared = [*fixes, "memories/notes/huge-paste.md", "memories/notes/link-out.md", "settings.yaml",
                   "global/settings.yaml"]
        for rel in cleared:
            assert source_of(rel) not in after, rel
        assert source_of("memories/notes/duplicate-id-a.md") not in after  # the clash is gone from both files
        indexed = indexed_sources(bank)
        for rel in (*fixes, "memories/notes/huge-paste.md"):
            assert source_of(rel) in indexed, rel
        assert bank.settings()["injectionMaxItems"] == 7
    finally:
        bank.close()


# -- membank doctor ------------------------------------------------------------------------------------


def _doctor(root: Path, home: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    monkeypatch.setenv("WRITENOW_HOME", str(home))
    return CliRunner().invoke(app, ["doctor", str(root), *args])


def test_doctor_lists_every_problem_and_exits_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = build(tmp_path)
    result = _doctor(root, home, monkeypatch)
    assert result.exit_code == 1, result.output
    bank = membank.open(root, home=home)
    try:
        items = bank.diagnostics()["items"]
    finally:
        bank.close()
    assert len(items) >= 50
    for d in items:
        assert f"{d['severity']} {d['source']}:{d['line']}: " in result.stdout, d
    assert str(tmp_path) not in result.stdout


def test_doctor_json_prints_exactly_the_envelope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = build(tmp_path)
    result = _doctor(root, home, monkeypatch, "--json")
    assert result.exit_code == 1
    envelope = json.loads(result.stdout)
    bank = membank.open(root, home=home)
    try:
        assert envelope == bank.call("index:diagnostics")
    finally:
        bank.close()
    assert envelope["ok"] is True and set(envelope) == {"ok", "data"} and set(envelope["data"]) == {"items"}
    assert all(set(d) == {"source", "line", "severity", "message"} for d in envelope["data"]["items"])


def test_doctor_exits_0_when_there_are_only_warnings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root, home = tmp_path / "novel", tmp_path / "home"
    root.mkdir()
    project.init(root, "warnings only")
    warnings = [c["path"] for c in CASES if c["severity"] == "warning" and "make" not in c]
    assert len(warnings) >= 5
    for rel in warnings:
        dest = home / rel[len("global/"):] if rel.startswith("global/") else root / ".writenow" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BAD / rel, dest)
    result = _doctor(root, home, monkeypatch)
    assert result.exit_code == 0, result.output
    for rel in warnings:
        line = next(c["line"] for c in CASES if c["path"] == rel)
        assert f"warning {source_of(rel)}:{line}: " in result.stdout
    assert "error" not in result.stdout


def test_doctor_on_a_clean_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "novel"
    root.mkdir()
    project.init(root, "clean")
    result = _doctor(root, tmp_path / "home", monkeypatch)
    assert result.exit_code == 0, result.output
    assert "no problems found" in result.stdout


# -- settings.yaml, line by line ------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "line", "message"), [
    ("memory:\n  injectionMaxItems: 2026-02-30\n", 2, "`memory.injectionMaxItems` should be a whole number"),
    ("memory:\n  injectionEnabled: \"no\"\n", 2, '`memory.injectionEnabled` should be true or false, not "no"'),
    ("memory:\n  injectionMaxItems: 5\n  injectionMaxItems: 6\n", 3, "appears twice (first on line 2)"),
    ("memory:\n\tinjectionMaxItems: 5\n", 2, "tab"),
    ("memory: [injectionEnabled]\n", 1, "should hold `key: value` lines"),
    ("- memory\n", 1, "should hold `memory:` and `embedding:` sections"),
    (b"\xef\xbb\xbfmemory:\r\n  injectionMaxItems: lots\r\n", 2, 'not "lots"'),
])
def test_settings_problems_name_the_key_and_line(text: str | bytes, line: int, message: str) -> None:
    from membank.files.settings import read

    data = text if isinstance(text, bytes) else text.encode("utf-8")
    found, problems = read(data, ".writenow/settings.yaml")
    assert [(p.line, p.severity) for p in problems] == [(line, "error")], problems
    assert message.lower() in problems[0].message.lower()
    assert "injectionMaxItems" not in found["memory"]  # a wrong value is left out: the default applies


# -- what one file may cost: depth and aliases ------------------------------------------------------------


def _nest(depth: int, kinds: list[bool]) -> Any:
    """A value `depth` collections deep: lists or one-key mappings, as `kinds` says level by level."""
    value: Any = "leaf"
    for level in range(depth):
        value = [value, level] if kinds[level % len(kinds)] else {"k": value}
    return value


@settings(max_examples=150, deadline=None)
@given(depth=st.integers(1, 90), kinds=st.lists(st.booleans(), min_size=1, max_size=5),
       flow=st.sampled_from([None, True, False]))
def test_front_matter_deeper_than_the_limit_is_always_refused(depth: int, kinds: list[bool], flow: bool | None) -> None:
    """However it is written (block, flow or mixed), nesting up to MAX_DEPTH loads and one more level is
    refused: the shortcut that skips the depth check for small texts never lets a deep one through."""
    text = yaml.safe_dump({"x": _nest(depth, kinds)}, default_flow_style=flow, width=10_000)
    if depth + 1 <= MAX_DEPTH:  # the top mapping is one level
        assert load_yaml(text) == {"x": _nest(depth, kinds)}
    else:
        with pytest.raises(TooComplex, match="nested more than"):
            load_yaml(text)


def test_aliases_are_shared_until_they_expand_too_far() -> None:
    ok = "base: &b {mood: grim}\nscenes: [*b, *b, *b]\n"
    assert load_yaml(ok)["scenes"] == [{"mood": "grim"}] * 3
    laughs = "".join(f"{c}: &{c} [" + ",".join([f"*{p}"] * 9 if p else ['"lol"'] * 9) + "]\n"
                     for p, c in zip([None, *"abcdefgh"], "abcdefghi"))
    with pytest.raises(TooComplex, match="repeat more than 2 MiB"):
        load_yaml(laughs)


@settings(max_examples=300, deadline=None)
@given(path=st.text(min_size=1, max_size=260).filter(lambda p: "\x00" not in p))
def test_every_path_gives_a_valid_id(path: str) -> None:
    """A file without `id:` takes its id from its path; when the path is not a valid id, one is made from it."""
    made = path_id(path)
    assert ID_RE.fullmatch(made), (path, made)
    assert made == path_id(path)
    if ID_RE.fullmatch(path):
        assert made == path  # every path that already was a valid id keeps it
