"""An import's answer is bounded (quality.md): at most 200 changes and 200 skipped files of an input in
full, `changesTotal` / `skippedTotal` beside them; the changes that write or keep something are listed
before those that change nothing."""

from __future__ import annotations

import json
from pathlib import Path

from membank import Bank
from membank.domains.cards.report import bounded

from .helpers import membank as run


def test_a_long_list_keeps_the_changes_that_matter_in_their_order() -> None:
    changes = [{"source": f"s{n}", "change": "same" if n % 3 else "changed"} for n in range(10)]
    item = {"file": "f", "changes": changes, "skipped": [{"name": f"n{n}", "reason": "r"} for n in range(5)]}
    cut = bounded(item, most=5)
    assert [c["source"] for c in cut["changes"]] == ["s0", "s1", "s3", "s6", "s9"]
    assert cut["changesTotal"] == 10 and "skippedTotal" not in cut and len(cut["skipped"]) == 5
    assert bounded(item, most=10) == item  # nothing cut: the answer as it was, no totals
    assert [s["name"] for s in bounded(item, most=3)["skipped"]] == ["n0", "n1", "n2"]
    assert bounded(item, most=3)["skippedTotal"] == 5


def test_a_change_of_many_fields_lists_the_kept_ones_first() -> None:
    fields = [{"field": f"card.data.extensions.k{n}", "change": "kept" if n in (7, 8) else "changed"} for n in range(9)]
    item = {"changes": [{"source": "a", "change": "kept", "fields": fields}, {"source": "b", "change": "same"}],
            "skipped": []}
    cut = bounded(item, most=3)
    assert [f["field"][-2:] for f in cut["changes"][0]["fields"]] == ["k0", "k7", "k8"]
    assert cut["changes"][0]["fieldsTotal"] == 9 and cut["changes"][1] == {"source": "b", "change": "same"}
    assert "changesTotal" not in cut and bounded(item, most=9) == item


def test_a_large_book_answers_200_changes_and_the_total(bank: Bank, sample: Path, tmp_path: Path, home: Path) -> None:
    entries = {str(n): {"uid": n, "key": [f"word{n}"], "comment": f"Entry {n}", "content": f"Lore {n}."}
               for n in range(205)}
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"name": "Big", "entries": entries}), "utf-8")
    envelope = bank.call("card:import", {"paths": [str(path)]})
    assert envelope["ok"], envelope
    (item,) = envelope["data"]["items"]
    assert item["status"] == "created" and len(item["changes"]) == 200 and item["changesTotal"] == 206
    assert "skippedTotal" not in item
    shown = run("import", str(path), cwd=sample, home=home)  # again: unchanged, and said so in one line
    assert shown.returncode == 0, shown.stderr
    assert "206 files in all (--json lists 200 of them)" in shown.stdout
