"""Hostile files for tests/test_fuzz.py: front matter (tame and wild), damaged bytes, settings,
journal lines, project.yaml, and the kinds of entry a folder can hold (links, loops, FIFOs, sockets,
folders named like files, names that are not UTF-8)."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.fuzzkit import ints, json_values, texts

VALID_NOTE = b"---\ntype: note\n---\nA good note next to a bad one.\n"


def bomb(levels: int, width: int) -> str:
    """A billion-laughs alias bomb: width ** levels strings from a few hundred bytes."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines)


SCALARS = [
    "yes", "no", "on", "off", "true", "~", "null", "", "1:30", "0o17", "0x1F", "1e400", "-1e400", ".nan", ".inf",
    "-.inf", "99999999999999999999", "-0", "1_000", "0999-06-01", "0001-01-01T00:00:00+01:00",
    "9999-12-31T23:59:59-01:00",
    "2026-02-30", "2026-11-21T10:00:00Z", "2026-13-01", "10000-01-01", "'single'", '"nul \\0 here"', '"\\ud800"',
    '"\\x00"', "|\n  line one\n  line two", ">-\n  folded", "[a, b, [c, {d: e}]]", "{a: 1, b: [2, 3]}", "&x anchored",
    "*x", "*missing", "!!python/object/apply:os.system ['true']", "!!python/name:os.system", "!!binary aGVsbG8=",
    "!!set {a, b}", "!!omap [a: 1]", "!!timestamp 2020-01-01", "!!float nan", "!custom x", "!!str 5", "!!int 0b101",
    "- dash", "? q", "@at", "`tick", "%pct", "#comment", "a: b: c", "\t tabbed", "[unclosed", "{unclosed", "'unclosed",
    '"unclosed', "x" * 300, "\n  - a\n  - b", "\n - a\n  - b", "\n  nested: value\n  deeper:\n    x: 1",
    "[" * 600 + "]" * 600, "{a: " * 300 + "1" + "}" * 300, "[" * 5000 + "]" * 5000,
    "".join(f"\n{'  ' * i}a:" for i in range(1, 200)) + " 1", "\ufeff", "é", "林默", "-1", "0", "1.5",
]
KEYS = ["id", "type", "scope", "document", "origin", "confidence", "tags", "evidence", "created", "updated", "revision",
        "deleted_at", "pinned", "name", "kind", "aliases", "keys", "include", "summary", "state", "state_at",
        "relations", "progressions", "context_rules", "x", "<<", "'q'", '"id"', "日本", "? k", "1", "null", "true",
        "id "]
IDS = ["fz-1", "fz-1", "m-example-fact1", "m-example-pref1", "x/../y", "Z" * 201, "-x", "[a]", "1"]
BODIES = ["", "A body.", "---", "---\ntype: x\n---", "林默受伤了。", "\x0c\x1b[31m", "x" * 5000]


# values YAML reads without complaint, each of which has tripped a reader or a rewriter somewhere
TAME = ["yes", "on", "~", "", "1:30", "0o17", "0x1F", "1e400", ".nan", "-.inf", "99999999999999999999", "0999-06-01",
        "0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2026-02-30", "2026-11-21T10:00:00Z", "'single'",
        '"\\ud800"', '"\\x00"', '"\\u2028"', "|\n  line one\n  line two", ">-\n  folded", "[a, b, [c, {d: e}]]",
        "{a: 1, b: [2, 3]}", "!!binary aGVsbG8=", "!!set {a, b}", "!!omap [a: 1]", "!!float nan", "!!str 5",
        "[" * 600 + "]" * 600, "林默", "-1", "1.5", "x" * 300, "\n  - a\n  - b",
        "\n  nested: value\n  deeper: {x: 1}", "[yes, on, 1:30]", "!!timestamp 2020-01-01"]


@st.composite
def tame_front_matter(draw: Any) -> bytes:
    """A memory (id fz-1) that parses, with odd values: it is indexed, so it gets rewritten and deleted."""
    lines = ["id: fz-1", "type: note"]
    keys = st.sampled_from(["tags", "created", "updated", "pinned", "confidence", "revision", "evidence",
                            "document", "scope", "origin", "deleted_at", "extra", "notes", "x-y"])
    for key in draw(st.lists(keys, min_size=1, max_size=3, unique=True)):
        lines.append(f"{key}: {draw(st.sampled_from(TAME))}")
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.sampled_from(["# a comment", "  # indented"])))
    body = draw(st.sampled_from(BODIES[1:]))
    return ("---\n" + "\n".join(lines) + "\n---\n" + body + "\n").encode()


def tame_memory() -> st.SearchStrategy[Drop]:
    return mangled(tame_front_matter()).map(lambda data: Drop("memories/note", "x.md", "file", data))


@st.composite
def front_matter(draw: Any) -> bytes:
    """A Markdown file with front matter: tame half the time, else anything, mostly broken."""
    if draw(st.booleans()):
        return draw(tame_front_matter())
    lines = [line for line, keep in ((f"id: {draw(st.sampled_from(IDS))}", draw(st.booleans())),
                                     ("type: note", draw(st.booleans())), ("name: Elin", draw(st.booleans()))) if keep]
    if draw(st.integers(0, 4)) == 0:
        lines.append(draw(st.sampled_from([bomb(4, 9), bomb(3, 4), "base: &b {x: 1, y: [1, 2]}\n<<: *b",
                                            "a: &a [1]\nb: {<<: [*a, *a]}", "a: &a\n  - *a"])))
    for _ in range(draw(st.integers(0, 5))):
        key = draw(st.one_of(st.sampled_from(KEYS), st.from_regex(r"[a-z_]{1,8}", fullmatch=True)))
        value = draw(st.one_of(st.sampled_from(SCALARS), st.text(max_size=12)))
        lines.append(f"{key}: {value}")
    body = draw(st.one_of(st.sampled_from(BODIES), st.text(max_size=40)))
    return ("---\n" + "\n".join(lines) + "\n---\n" + body + "\n").encode("utf-8", "surrogatepass")


@st.composite
def mangled(draw: Any, base: st.SearchStrategy[bytes]) -> bytes:
    """Bytes of `base`, then an editor's or a disk's worth of damage."""
    data = draw(base)
    if draw(st.integers(0, 2)):
        return data
    for op in draw(st.lists(st.sampled_from(["bom", "crlf", "cr", "utf16", "nul", "latin1", "cesu", "cut", "tab"]),
                            max_size=2)):
        at = draw(st.integers(0, max(len(data), 1)))
        data = {"bom": lambda: b"\xef\xbb\xbf" + data, "crlf": lambda: data.replace(b"\n", b"\r\n"),
                "cr": lambda: data.replace(b"\n", b"\r"), "nul": lambda: data[:at] + b"\x00" + data[at:],
                "utf16": lambda: data.decode("utf-8", "replace").encode("utf-16"),
                "latin1": lambda: data[:at] + b"Ren\xe9e" + data[at:],
                "cesu": lambda: data[:at] + b"\xed\xa0\x80" + data[at:],
                "cut": lambda: data[:at], "tab": lambda: data.replace(b"\n", b"\n\t", 1)}[op]()
    return data


def settings_yaml() -> st.SearchStrategy[bytes]:
    keys = st.sampled_from(["injectionEnabled", "preferenceLearningEnabled", "privacyModeEnabled", "injectionMaxItems",
                            "preferenceLearningThreshold", "injectionTokenBudget", "model", "unknownKey", "<<"])
    values = st.one_of(st.sampled_from(SCALARS), ints(False).map(str),
                       st.sampled_from(["/dev/zero", "../outside", "~"]))
    section = st.tuples(st.sampled_from(["memory", "embedding", "Memory", "x", "memory"]),
                        st.lists(st.tuples(keys, values), max_size=4))
    text = st.lists(section, max_size=3).map(
        lambda secs: "".join(f"{name}:\n" + "".join(f"  {k}: {v}\n" for k, v in pairs) for name, pairs in secs))
    return st.one_of(text, st.sampled_from([bomb(5, 9), "memory: &m {injectionMaxItems: 5}\nembedding: *m",
                                            "memory: [1, 2]", "- a", "memory:\n\tinjectionMaxItems: 3"])
                     ).map(lambda t: t.encode("utf-8", "surrogatepass"))


def journal_lines() -> st.SearchStrategy[bytes]:
    event = st.fixed_dictionaries(
        {"event": st.sampled_from(["feedback", "learned", "preferences-cleared", "other", 5, None])},
        optional={"signalKey": st.sampled_from(["@@SIGNAL@@", "prefer:0", "", 5]), "at": st.one_of(
                  st.sampled_from(["2026-01-01T00:00:00.000000Z", "0999-06-01", "", "x"]), ints(False)),
                  "weight": st.one_of(st.floats(), ints(False), st.sampled_from(["1", None, True])),
                  "runId": texts(False), "evidence": texts(False), "ignored": json_values(False),
                  "tags": json_values(False), "action": st.sampled_from(["accept", "reject", "partial", "x"]),
                  "skillId": texts(False)})
    line = st.one_of(event.map(lambda e: json.dumps(e).encode()), st.sampled_from(
        [b"NaN", b"{", b"[]", b"\xff\xfe", b'{"event": "feedback", "weight": NaN, "signalKey": "@@SIGNAL@@", '
         b'"at": "2026-01-01T00:00:00.000000Z"}', b'{"event": "feedback"} trailing', b"\x00" * 8]))
    return st.lists(line, max_size=5).map(lambda ls: b"\n".join(ls) + b"\n")


def project_yaml() -> st.SearchStrategy[bytes]:
    return st.one_of(st.sampled_from(SCALARS).map(lambda v: f"id: {v}\nname: x\n".encode()),
                     st.sampled_from(SCALARS).map(lambda v: f"id: p-fuzz\nname: {v}\n".encode()))


PLACES = ["memories/note", "memories/note", "memories/note", "memories", "memories/fact/deep", "characters", "world",
          "world/rules", "skills",
          "global:memories", "global:characters", "global:world/x"]
SECTION_TARGETS = ["memories/fact", "memories", "world", "journal", "skills", "global:memories"]
FILE_TARGETS = ["settings.yaml", "global:settings.yaml", "journal/@@MONTH@@.jsonl", "journal/2020-01.jsonl",
                "project.yaml"]
NAMES: list[str | bytes] = ["x.md", "X.MD", "b c.md", "林默.md", ".hidden.md", "x.md~", "x.md.swp", "4913", "x.txt",
                            "example-hero.md", b"\xff\xfe.md", b"caf\xe9.md", "a\\b.md", "a:b.md", " .md",
                            "a" * 252 + ".md"]
KINDS = ["file"] * 12 + ["empty", "dir", "link-in", "link-in-dir", "link-out", "link-out-dir", "link-big",
         "dangling", "loop", "loop-pair", "fifo", "socket", "dev-null", "dev-zero"]
# Never /dev/zero where membank reads a file whole (settings.yaml, project.yaml): on a bank that does
# not bound that read it would fill this machine's memory, not fail a test.
UNBOUNDED = {"settings.yaml", "global:settings.yaml", "project.yaml"}


@dataclass(frozen=True)
class Drop:
    """One hostile entry: where (a folder, a section, or a special file), its name, what it is."""

    place: str
    name: str | bytes | None
    kind: str
    data: bytes = b""


def contents(place: str) -> st.SearchStrategy[bytes]:
    if place in ("settings.yaml", "global:settings.yaml"):
        base = settings_yaml()
    elif place.startswith("journal/"):
        base = journal_lines()
    elif place == "project.yaml":
        base = project_yaml()
    else:
        base = st.one_of(front_matter(), front_matter(), st.binary(max_size=64))
    return mangled(base)


@st.composite
def drops(draw: Any) -> Drop:
    in_folder = st.tuples(st.sampled_from(PLACES), st.sampled_from(NAMES), st.sampled_from(KINDS))
    section = st.tuples(st.sampled_from(SECTION_TARGETS), st.none(),
                        st.sampled_from(["link-out-dir", "link-in-dir", "file", "fifo", "dangling", "loop", "empty"]))
    special = st.tuples(st.sampled_from(FILE_TARGETS), st.none(), st.sampled_from(KINDS))
    place, name, kind = draw(st.one_of(in_folder, in_folder, in_folder, section, special).filter(
        lambda t: not (t[0] in UNBOUNDED and t[2] == "dev-zero")))
    return Drop(place, name, kind, draw(contents(place)) if kind == "file" else b"")


# text a writer might put in a memory and a rewrite must keep as it is
WORDS = ["yes", "no", "on", "~", "null", "1:30", "0x1F", "1e400", ".nan", "- x", "? y", "#tag", "a: b", "[x]", "{y}",
         "'q'", '"dq"', "*a", "&b", "!!str", "%", "@", "`", "|", ">", "---", "...", "林默", "é", "x" * 100, "", " "]


def tame_patches() -> st.SearchStrategy[dict[str, Any]]:
    """memory:update patches a caller would send (valid, if odd): what a rewrite of an odd file meets."""
    word = st.one_of(st.sampled_from(WORDS), st.text(st.characters(categories=["L", "N", "P", "S", "Zs"]), max_size=12))
    plain = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(0, 1), word)
    return st.fixed_dictionaries({}, optional={
        "content": st.lists(word, min_size=1, max_size=4).map("\n".join).filter(str.strip),
        "type": st.sampled_from(["note", "fact", "preference", "style", "x-y_1"]),
        "tags": st.lists(word, max_size=3), "confidence": st.floats(0, 1), "pinned": st.booleans(),
        "evidence": st.lists(plain, max_size=3), "documentId": st.sampled_from(["chapters/ch01.md", "a b/c.md"]),
        "metadata": st.dictionaries(st.sampled_from(["extra", "notes", "x-y", "n1"]),
                                    st.one_of(plain, st.lists(plain, max_size=2)), max_size=3)})


# -- putting a drop in place --------------------------------------------------------------------------


@dataclass(frozen=True)
class Folders:
    bank: Path  # the project's .writenow/
    home: Path  # the global bank
    outside: Path  # a folder outside both, holding secret.md, drafts/ and big.md
    journal_month: str  # replaces @@MONTH@@ in a place
    signal: str  # replaces @@SIGNAL@@ in a file's bytes


def _target(drop: Drop, at: Folders) -> tuple[Path, bytes]:
    """The bank folder a drop belongs to, and the drop's full path."""
    place = drop.place.replace("@@MONTH@@", at.journal_month)
    base, rel = (at.home, place[len("global:"):]) if place.startswith("global:") else (at.bank, place)
    path = os.fsencode(base / rel)
    if drop.name is not None:
        path += b"/" + (drop.name if isinstance(drop.name, bytes) else drop.name.encode())
    return base, path


def _remove(path: bytes) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


def make(drop: Drop, at: Folders) -> bytes | None:
    """Put the drop in place; returns the FIFO made, if any. A drop under a folder an earlier drop
    replaced (a link, a file) is skipped: the test must never write through a link itself."""
    base, path = _target(drop, at)
    folder = os.path.dirname(path)
    walk = folder
    while len(walk) > len(os.fsencode(base)):
        if os.path.islink(walk) or (os.path.lexists(walk) and not os.path.isdir(walk)):
            return None
        walk = os.path.dirname(walk)
    os.makedirs(folder, exist_ok=True)
    _remove(path)
    outside = os.fsencode(at.outside)
    target = {"link-in": os.fsencode(at.bank / "memories/note/example-forgery-idea.md"),
              "link-in-dir": os.fsencode(at.bank / "world"), "link-out": outside + b"/secret.md",
              "link-out-dir": outside + b"/drafts", "link-big": outside + b"/big.md",
              "dangling": outside + b"/missing.md", "loop": path, "dev-null": b"/dev/null", "dev-zero": b"/dev/zero"}
    if drop.kind in ("file", "empty"):
        with open(path, "wb") as f:
            f.write(drop.data.replace(b"@@SIGNAL@@", at.signal.encode()))
    elif drop.kind == "dir":
        os.mkdir(path)
        with open(path + b"/inner.md", "wb") as f:
            f.write(VALID_NOTE)
    elif drop.kind == "loop-pair":
        other = folder + b"/loop-other.md"
        _remove(other)
        os.symlink(other, path)
        os.symlink(path, other)
    elif drop.kind == "fifo":
        os.mkfifo(path)
        return path
    elif drop.kind == "socket":
        os.mknod(path, stat.S_IFSOCK | 0o644)
    else:
        os.symlink(target[drop.kind], path)
    return None
