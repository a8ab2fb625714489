"""`manuscript:status`: each document of the story order as the manuscript's index holds it."""

from __future__ import annotations

from typing import Any

from ..contract import Bank
from .sync import documents


def status(bank: Bank) -> dict[str, Any]:
    db = bank.index.db
    held: dict[str, dict[str, Any]] = {}
    for doc, scene, count, size in db.execute(
            "SELECT document, scene, count(*), sum(length(text)) FROM manuscript_passages"
            " GROUP BY document, scene_no ORDER BY document, scene_no"):
        row = held.setdefault(doc, {"passages": 0, "scenes": [], "codePoints": 0})
        row["passages"] += count
        row["scenes"].append(scene)
        row["codePoints"] += size
    problems = dict(db.execute("SELECT document, problem FROM manuscript_documents WHERE problem IS NOT NULL"))
    from ..story.cards import catalog
    from .mentions import table
    from .summaries import read_all, stale_ones

    cat = catalog(bank.index)
    people: dict[str, set[str]] = {}
    for card_id, places in table(bank, cat).items():
        if cat.cards[card_id].get("section") == "characters":
            for doc, _ in places:
                people.setdefault(doc, set()).add(cat.cards[card_id]["name"])

    summarized = {s.of for s in read_all(bank) if s.level == "chapter"}
    stale = {s.of for s in stale_ones(bank) if s.level == "chapter"}
    items = []
    for doc in documents(bank):
        row = held.get(doc, {"passages": 0, "scenes": [], "codePoints": 0})
        summary = "stale" if doc in stale else "current" if doc in summarized else "none"
        items.append({"source": doc, **row, "characters": sorted(people.get(doc, ())), "problem": problems.get(doc),
                      "summary": summary})
    total, embedded = db.execute("SELECT count(*), count(vec) FROM manuscript_passages").fetchall()[0]
    return {"items": items, "passages": total, "embedded": embedded}
