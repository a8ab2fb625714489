"""`story:duplicates` (issue 33.6): near-duplicate cards (a name or alias two live cards answer to) and
facts (nearly the same words), each with both sources; `membank doctor` prints them as suggestions
after its problems (they are not problems: the index's diagnostics stay what the files get wrong)."""

from __future__ import annotations

import json
from typing import Any

from ..contract import Bank
from . import duplicates
from .refs import LIVE, NAME


def _cards(bank: Bank) -> list[dict[str, Any]]:
    db = bank.index.db
    shared = db.execute(
        f"WITH {LIVE} SELECT r.value FROM live JOIN story_refs AS r ON r.entry = live.entry WHERE r.role = ?"
        " GROUP BY r.value HAVING count(DISTINCT live.entry) > 1", (NAME,)).fetchall()
    if not shared:
        return []
    rows = db.execute(
        f"WITH {LIVE} SELECT DISTINCT e.record FROM live JOIN story_refs AS r ON r.entry = live.entry"
        " JOIN entries AS e ON e.rowid = live.entry WHERE r.role = ? AND r.value IN (SELECT value FROM json_each(?))",
        (NAME, json.dumps([v for (v,) in shared]))).fetchall()
    cards = {c["id"]: c for c in (json.loads(r) for (r,) in rows)}
    out = []
    for name, ids in duplicates.shared_names((i, (c["name"], *(c.get("aliases") or ())))
                                             for i, c in sorted(cards.items())):
        out.append({"kind": "card", "name": name, "ids": list(ids), "score": None,
                    "sources": [{"source": cards[i]["source"], "line": (cards[i].get("lines") or {}).get("name") or 1}
                                for i in ids],
                    "message": f"`{name}` is a name or alias of {len(ids)} cards: merge them, or give each a "
                               "name of its own"})
    return out


_FACTS = ("SELECT id, source, record FROM entries WHERE kind = 'memory' AND type = 'fact' AND removed_at IS NULL"
          " AND deleted = 0 AND shadowed = 0")


def _facts(bank: Bank) -> list[dict[str, Any]]:
    found = {i: (source, json.loads(record).get("content") or "")
             for i, source, record in bank.index.db.execute(_FACTS)}
    return [{"kind": "fact", "name": None, "ids": [a, b], "score": score,
             "sources": [{"source": found[a][0], "line": 1}, {"source": found[b][0], "line": 1}],
             "message": f"two facts say nearly the same thing ({int(score * 100)}% of their words): merge them"}
            for a, b, score in duplicates.similar_texts({i: text for i, (_, text) in found.items()})]


def find(bank: Bank) -> dict[str, Any]:
    """Every near-duplicate pair or group, cards first; kept while the index does not change."""
    with bank.index.lock:
        memo = bank.index.view_memo("story.duplicates")
        if memo is not None and "found" in memo:
            items = memo["found"]
        else:
            items = _cards(bank) + _facts(bank)
            if memo is not None:
                memo["found"] = items
    return {"items": [dict(i) for i in items[:200]], "total": len(items)}
