"""The deterministic order: the same files give the same answer, whatever order or time they were written."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membank
from membank.files.project import init
from membank.domains.recall.order import deterministic_key

from .helpers import write_memory

TYPES = st.sampled_from(["preference", "fact", "note", "plot-thread", "clue"])
SCOPES = st.sampled_from(["project", "document", "global"])
DOCS = st.sampled_from(["chapters/ch01.md", "chapters/ch05.md"])
# few distinct times, so ties on updatedAt are common and the id tie-break is exercised
TIMES = st.sampled_from([f"2026-0{m}-0{d}T10:00:00Z" for m in (1, 2) for d in (1, 2)])
IDS = st.text(alphabet="abcXYZ019-_", min_size=1, max_size=6).map(lambda s: "m" + s)

memory_specs = st.lists(
    st.fixed_dictionaries({"id": IDS, "type": TYPES, "scope": SCOPES, "document": DOCS, "updated": TIMES,
                           "body": st.text(alphabet="abc xyz", min_size=1, max_size=30).filter(str.strip)}),
    min_size=1, max_size=14, unique_by=lambda m: m["id"])


def _build(folder: Path, home: Path, specs: list[dict], seed: int) -> None:
    """Write the files in a shuffled order, with shuffled mtimes, into a fresh project."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    init(folder, "order")
    for existing in (folder / ".writenow" / "memories").rglob("*.md"):
        existing.unlink()  # the template's examples would only add noise
    rng = random.Random(seed)
    order = list(specs)
    rng.shuffle(order)
    for spec in order:
        meta = {"id": spec["id"], "type": spec["type"], "updated": spec["updated"]}
        if spec["scope"] == "document":
            meta.update(scope="document", document=spec["document"])
        rel = f"{rng.choice(['a', 'b/c', ''])}/{spec['id']}.md".lstrip("/")
        if spec["scope"] == "global":
            path = _write_global(home, rel, spec["body"], meta)
        else:
            path = write_memory(folder, rel, spec["body"], **meta)
        stamp = rng.randint(1_600_000_000, 1_900_000_000)
        os.utime(path, (stamp, stamp))


def _write_global(home: Path, rel: str, body: str, meta: dict) -> Path:
    path = home / "memories" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("---\n" + "".join(f"{k}: {v}\n" for k, v in meta.items()) + f"---\n{body}\n", encoding="utf-8")
    return path


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs=memory_specs, seeds=st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
       document=st.sampled_from([None, "chapters/ch05.md"]))
def test_order_ignores_file_order_and_mtimes(tmp_path: Path, specs: list[dict], seeds: tuple[int, int],
                                             document: str | None) -> None:
    answers = []
    for seed in seeds:
        home = tmp_path / "home"
        os.environ["WRITENOW_HOME"] = str(home)
        _build(tmp_path / "p", home, specs, seed)
        bank = membank.open(tmp_path / "p")
        try:
            listed = [m["id"] for m in bank.list_memories()["items"]]
            previewed = [i["id"] for i in bank.preview(document_id=document)["items"]]
            full = bank.list_memories()["items"]
        finally:
            bank.close()
        answers.append((listed, previewed))
    assert answers[0] == answers[1]

    # the SQL order (the list, the preview) is exactly the Python key over the same memories
    assert answers[0][0] == [m["id"] for m in sorted(full, key=deterministic_key)]
    eligible = [m for m in full if m["scope"] != "document" or m["documentId"] == document]
    expected = [m["id"] for m in sorted(eligible, key=deterministic_key)][:20]
    assert answers[0][1] == expected


def test_sample_project_order_is_the_documented_one(sample: Path) -> None:
    """scope document > project > global; preference > fact > note > others; newest first; id."""
    bank = membank.open(sample)
    bank.create_memory("preference", "global", "Prefer British spelling.")
    try:
        ids = [i["id"] for i in bank.preview(document_id="chapters/ch05.md")["items"]]
    finally:
        bank.close()
    assert ids[0] == "m-note-ch05-pacing"
    assert ids[1:7] == ["m-9c4t2w7k1p3z", "m-pref-short-sentences", "m-pref-linmo-zh-dialogue",
                        "m-style-sea-first-line", "m-pref-no-modern-idioms", "m-pref-close-third"]
    assert ids[7:10] == ["m-fact-linmo-wounded", "m-fact-tingchao", "m-fact-maren-father"]
    assert ids[10:13] == ["notes/gulls-before-a-wreck", "m-note-last-dawn", "m-thread-dark-light"]
    assert len(ids) == 14  # the global preference comes last, after every project memory
