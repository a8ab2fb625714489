"""Hostile checks of the preview's census (recall/census.py, queries.fitting): random banks of
document-scoped, shared, soft-deleted, empty and hidden memories, edited between two calls, on two
threads each in a reading block; fitting must stay the greedy fit over the whole order."""

from __future__ import annotations

import random
import threading
from pathlib import Path

from membank import Bank
from membank.domains.indexing.refresh import refresh
from membank.domains.recall import queries
from membank.index.store import reading
from membank.kernel.budget import fit

from .helpers import write_memory

_DOCS = ("chapters/ch01.md", "chapters/ch05.md", "notes/other.md")


def _expected(bank: Bank, document: str | None, max_items: int, budget: int) -> list[tuple[str, int]]:
    return [(m["id"], t) for m, t in fit(queries.ordered(bank.index, document), max_items, budget)]


def _fitting(bank: Bank, document: str | None, max_items: int, budget: int) -> list[tuple[str, int]]:
    return [(m["id"], t) for m, t in queries.fitting(bank.index, document, max_items, budget)]


def _check(bank: Bank, rng: random.Random) -> None:
    with bank.index.lock:
        rowids = [r for (r,) in bank.index.db.execute("SELECT rowid FROM entries WHERE kind = 'memory'")]
    for hidden, types in (((), ()), (rng.sample(rowids, len(rowids) // 3), ()), ((), ("note",))):
        with queries.hiding(hidden, types):
            for document in (None, *_DOCS):
                with bank.index.lock:
                    assert queries.eligible_count(bank.index, document) == sum(
                        1 for _ in queries.ordered(bank.index, document))
                    for max_items, budget in ((1, 1), (2, 5), (3, 17), (20, 60), (0, 100), (50, 10**6), (5, 0)):
                        assert _fitting(bank, document, max_items, budget) == _expected(
                            bank, document, max_items, budget), (document, max_items, budget)


def _write_random(sample: Path, rng: random.Random, n: int) -> None:
    for i in range(n):
        words = rng.choice([0, 1, 2, 5, 30, 200])
        body = " ".join(rng.choice(["ink", "harbour", "林默", "dusk", "x"]) for _ in range(words))
        meta: dict[str, object] = {"id": f"m-h{i:04d}", "type": rng.choice(["note", "fact", "preference"]),
                                   "updated": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T00:00:00Z"}
        kind = rng.randrange(4)
        if kind == 0:
            meta.update(scope="document", document=rng.choice(_DOCS))
        elif kind == 1:
            meta.update(scope="project")
        elif kind == 2:
            meta.update(scope="project", document=rng.choice(_DOCS))  # a document named, shared scope
        if rng.random() < 0.15:
            meta["deleted_at"] = "2026-11-01T00:00:00Z"
        write_memory(sample, f"hostile/m{i:04d}.md", body, **meta)


def test_fitting_is_the_greedy_fit_on_random_banks_edited_between_calls(bank: Bank, sample: Path) -> None:
    rng = random.Random(7)
    _write_random(sample, rng, 40)
    bank.sync()
    _check(bank, rng)
    for path in sorted((sample / ".writenow" / "memories" / "hostile").glob("*.md"))[::3]:
        text = path.read_text(encoding="utf-8")
        head, body = text.rsplit("---\n", 1)
        path.write_text(head + "---\n" + rng.choice(["", "a", "x " * 400]) + "\n", encoding="utf-8")
    bank.sync()
    _check(bank, rng)


def test_two_threads_in_reading_blocks_each_see_their_own_census(bank: Bank, sample: Path) -> None:
    rng = random.Random(11)
    _write_random(sample, rng, 20)
    bank.sync()
    doc = _DOCS[1]
    with bank.index.lock:
        want = {d: _expected(bank, d, 20, 90) for d in (None, doc)}
    seen: dict[str, list[tuple[str, int]]] = {}
    errors: list[BaseException] = []

    def read(document: str | None) -> None:
        try:
            with reading():
                for _ in range(3):
                    seen[str(document)] = _fitting(bank, document, 20, 90)
                    with reading():  # nested: the same snapshot
                        assert _fitting(bank, document, 20, 90) == seen[str(document)]
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
    threads = [threading.Thread(target=read, args=(d,)) for d in (None, doc)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert seen == {str(d): w for d, w in want.items()}


def test_another_banks_write_and_a_rebuild_move_the_census(bank: Bank, sample: Path) -> None:
    import membank
    doc = _DOCS[1]
    with bank.index.lock:
        fewest = queries.eligible_census(bank.index, doc).fewest
        assert fewest is not None and fewest > 1
        assert _fitting(bank, doc, 5, fewest - 1) == []
    with reading():
        assert _fitting(bank, doc, 5, fewest - 1) == []
    other = membank.open(sample)
    try:
        write_memory(sample, "hostile/tiny.md", "x", id="m-tiny", type="note", scope="document", document=doc,
                     updated="2020-01-01T00:00:00Z")
        other.sync()
    finally:
        other.close()
    for _ in range(2):
        with bank.index.lock:
            assert [i for i, _ in _fitting(bank, doc, 5, fewest - 1)] == ["m-tiny"]
        with reading():
            assert [i for i, _ in _fitting(bank, doc, 5, fewest - 1)] == ["m-tiny"]
        (sample / ".writenow" / "memories" / "hostile" / "tiny.md").write_text(
            "---\nid: m-tiny\ntype: note\nscope: document\ndocument: " + doc + "\n---\n" + "word " * 300 + "\n",
            encoding="utf-8")
        refresh(bank, rebuild=True)
        with bank.index.lock:
            assert _fitting(bank, doc, 5, fewest - 1) == []
        with reading():
            assert _fitting(bank, doc, 5, fewest - 1) == []
        write_memory(sample, "hostile/tiny.md", "x", id="m-tiny", type="note", scope="document", document=doc,
                     updated="2020-01-01T00:00:00Z")
        bank.sync()


def test_a_views_censuses_stay_bounded_over_many_documents(bank: Bank) -> None:
    # found attacking: a document's own census was kept without bound (1,001 after 1,000 documents)
    with bank.index.lock:
        for i in range(600):
            queries.eligible_census(bank.index, f"chapters/d{i}.md")
        assert all(len(memo) <= 256 for memo in bank.index.caches["recall.census"].values())
        assert queries.eligible_count(bank.index, "chapters/ch05.md") == sum(
            1 for _ in queries.ordered(bank.index, "chapters/ch05.md"))
