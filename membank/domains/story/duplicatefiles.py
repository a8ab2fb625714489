"""`story:duplicates` (issue 33.6): near-duplicate cards (a name or alias two live cards answer to) and
facts (nearly the same words, or the same meaning by the index's stored vectors: meaning.py), each with
both sources; `membank doctor` prints them as suggestions after its problems (they are not problems:
the index's diagnostics stay what the files get wrong)."""

from __future__ import annotations

import itertools
import json
from typing import Any

from ...files.frontmatter import MAX_FILE_BYTES, FrontMatterError, decode, split
from ...files.reader import Unreadable, read_regular
from ...index.embed import mismatch
from ..contract import Bank
from . import cardsentences, duplicates, meaning
from .cards import catalog
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
        out.append({"kind": "card", "name": name, "ids": list(ids), "score": None, "by": "name",
                    "sources": [{"source": cards[i]["source"], "line": (cards[i].get("lines") or {}).get("name") or 1}
                                for i in ids],
                    "message": f"`{name}` is a name or alias of {len(ids)} cards: merge them, or give each a "
                               "name of its own"})
    return out


# each live card's kept sentences (cardsentences.py); its record only when it has none kept
_CARDS = (f"WITH {LIVE} SELECT live.entry, live.id, s.texts, s.zh, s.zh_card, s.vectors,"
          " CASE WHEN s.entry IS NULL THEN e.record END FROM live JOIN entries AS e ON e.rowid = live.entry"
          " LEFT JOIN story_sentences AS s ON s.entry = live.entry AND s.hash = e.hash ORDER BY live.id")
_RECORDS = "SELECT rowid, record FROM entries WHERE rowid IN (SELECT value FROM json_each(?))"


def _cards_by_meaning(bank: Bank, named: set[frozenset[str]]) -> list[dict[str, Any]]:
    """Two live cards that say the same things sentence by sentence (meaning.cover at or above COVER, by the
    static model's sentence vectors, each language's mean removed), compared with the CARD_NEIGHBOURS
    nearest by the vectors the index stores; a pair the name rule found (`named`) is not said twice. The
    sentences and their vectors are the ones the index keeps (cardsentences.py): no model is loaded, but
    for a card embedded before they were kept (said on the fly, as every card was before)."""
    copy = bank.index.vector_copy() if bank.index.vec_error is None else None
    if copy is None:
        return []
    import numpy as np

    position = {int(r): n for n, r in enumerate(copy.rowids.tolist())}
    on = catalog(bank.index).sections  # a card switched off (`include: never`, its book off) is not suggested
    dim = copy.matrix.shape[1]
    cards = [(rowid, id_, cardsentences.kept(*kept, dim)) for rowid, id_, *kept in bank.index.db.execute(_CARDS)
             if rowid in position and id_ in on]
    own = meaning.own([c.texts for _, _, c in cards])
    keep = [n for n, at in enumerate(own) if at]
    if len(keep) < 2:
        return []
    whole = copy.matrix[np.array([position[cards[n][0]] for n in keep], np.int64)]
    zh = np.array([cards[n][2].language(own[n]) for n in keep])
    near = [(keep[i], keep[j]) for i, j, _ in meaning.close_pairs(meaning.centred(whole, zh), -1.0,
                                                                   meaning.CARD_NEIGHBOURS)
            if frozenset((cards[keep[i]][1], cards[keep[j]][1])) not in named]
    rows = _sentence_rows(bank, [c for _, _, c in cards], own, sorted({n for pair in near for n in pair}))
    if rows is None:
        return []
    found = [(a, b, score) for a, b in sorted(near, key=lambda p: (cards[p[0]][1], cards[p[1]][1]))
             if (score := meaning.cover(rows[a], rows[b])) >= meaning.COVER]
    records = _records(bank, [cards[n][0] for a, b, _ in found for n in (a, b)])
    out = []
    for a, b, score in found:
        pair = sorted((records[cards[a][0]], records[cards[b][0]]), key=lambda c: c["id"])
        out.append({"kind": "card", "name": None, "ids": [c["id"] for c in pair], "score": score, "by": "meaning",
                    "sources": [{"source": c["source"], "line": _card_line(c)} for c in pair],
                    "message": f"two cards say the same things (by meaning, {score:.2f}): merge them, or tell "
                               "them apart"})
    return out


def _records(bank: Bank, rowids: list[int]) -> dict[int, dict[str, Any]]:
    """The records of the cards at `rowids` (those suggested: their sources and lines), by rowid."""
    return {rowid: json.loads(record) for rowid, record in bank.index.db.execute(_RECORDS, (json.dumps(rowids),))}


def _sentence_rows(bank: Bank, cards: list[cardsentences.Said], own: list[list[int]],
                   used: list[int]) -> dict[int, Any] | None:
    """The centred unit rows of the sentences of each card in `used` (positions in `cards`) that are its own
    (`own`), centred together by language: kept ones read, a card with none kept said by the model (None
    when it cannot load, or is not the one the index's vectors, and so the kept rows, were made with)."""
    import numpy as np

    fresh = [n for n in used if cards[n].vectors is None and own[n]]
    model = bank.embedder() if fresh else None
    if fresh and (model is None or mismatch(bank.index.vector_model(), model) is not None):
        return None
    said = {}
    if model is not None:
        texts = [cards[n].texts[i] for n in fresh for i in own[n]]
        encoded, at = model.encode(texts), 0
        for n in fresh:
            said[n], at = encoded[at:at + len(own[n])], at + len(own[n])
    parts, zh = [], []
    for n in used:
        card = cards[n]
        whole = len(own[n]) == len(card.texts)
        if card.vectors is not None:
            said[n] = card.vectors if whole else card.vectors[own[n]]
        parts.append(said[n])
        if card.zh is None:
            zh += [meaning.is_chinese(card.texts[i][:meaning.LANGUAGE_CHARS]) for i in own[n]]
        else:
            zh += card.zh if whole else [card.zh[i] for i in own[n]]
    rows = meaning.centred(np.concatenate(parts) if parts else np.zeros((0, 1), np.float32), np.array(zh, bool))
    out, at = {}, 0
    for n in used:
        out[n], at = rows[at:at + len(own[n])], at + len(own[n])
    return out


def _card_line(card: dict[str, Any]) -> int:
    """A card's summary's line (what a merge compares first), or its name's when it has no summary."""
    lines = card.get("lines") or {}
    return (lines.get("summary") if card.get("summary") else lines.get("name")) or 1


_FACTS = ("SELECT rowid, id, source, record FROM entries WHERE kind = 'memory' AND type = 'fact'"
          " AND removed_at IS NULL AND deleted = 0 AND shadowed = 0")


def _by_meaning(bank: Bank, rowids: list[int], texts: list[str]) -> list[tuple[int, int, float]]:
    """(i, j, cosine) of the facts (positions in `rowids`) that say the same thing by the index's stored
    vectors: the static tier's (a fact without one, still waiting or with no known word, is not compared),
    and the strong tier's when every fact has its strong vector; each tier at its own measured threshold
    (meaning.py), a pair either finds kept with its higher cosine."""
    if len(rowids) < 2:
        return []
    import numpy as np  # here: only a bank with two facts or more computes with vectors

    zh = np.array([meaning.is_chinese(t[:meaning.LANGUAGE_CHARS]) for t in texts])
    found: dict[tuple[int, int], float] = {}
    tiers = []
    copy = bank.index.vector_copy() if bank.index.vec_error is None else None
    if copy is not None:
        tiers.append((copy.rowids, lambda at: copy.matrix[at], meaning.STATIC, False))
    strong = bank.index.strong_copy()
    if strong is not None:
        tiers.append((strong.rowids, lambda at: strong.rows[at].astype(np.float32) * strong.factor[at, None],
                      meaning.STRONG, True))
    for ids, rows, threshold, every in tiers:
        if not len(ids):
            continue
        position = {int(r): n for n, r in enumerate(ids.tolist())}
        at = np.array([position.get(r, -1) for r in rowids], np.int64)
        if every and (at < 0).any():
            continue  # a fact still waiting for its strong vector: the tier cannot compare every fact yet
        unit = rows(np.maximum(at, 0))
        unit[at < 0] = 0.0  # no vector: no direction, never a pair
        for i, j, score in meaning.close_pairs(meaning.centred(unit, zh), threshold):
            found[(i, j)] = max(score, found.get((i, j), 0.0))
    return [(i, j, s) for (i, j), s in sorted(found.items())]


def text_line(bank: Bank, source: str) -> int:
    """The line a memory file's text starts on, below its front matter (1 when the file is not readable,
    or its front matter broken: the index then holds no such fact; read for the facts suggested only)."""
    for root in bank.roots:  # the project's bank or the global one (`global:` sources)
        rel = root.rel(source)
        if rel is not None:
            try:  # bounded and never through a link, as the index read it
                data, _ = read_regular(root.file(rel), MAX_FILE_BYTES, follow_links=False)
                return split(decode(data)).body_line
            except (OSError, Unreadable, FrontMatterError):
                return 1
    return 1


def _facts(bank: Bank) -> list[dict[str, Any]]:
    rows = [(rowid, i, source, json.loads(record).get("content") or "")
            for rowid, i, source, record in bank.index.db.execute(_FACTS)]
    rows.sort(key=lambda r: r[1])
    source = {i: s for _, i, s, _ in rows}
    words = duplicates.similar_texts({i: text for _, i, _, text in rows})
    said = [r for r in rows if r[3].strip()]  # an empty fact has no meaning to compare (nor a strong vector)
    near = [(said[i][1], said[j][1], s) for i, j, s in _by_meaning(bank, [r[0] for r in said], [r[3] for r in said])]
    out = []
    for a, b, score, how in meaning.merged(words, near):
        reason = f"{int(score * 100)}% of their words" if how == "words" else f"by meaning, cosine {score:.2f}"
        out.append({"kind": "fact", "name": None, "ids": [a, b], "score": score, "by": how,
                    "sources": [{"source": source[i], "line": None} for i in (a, b)],  # `shown` reads it
                    "message": f"two facts say nearly the same thing ({reason}): merge them"})
    return out


def find(bank: Bank) -> dict[str, Any]:
    """Every near-duplicate pair or group, cards first; kept while the index does not change."""
    with bank.index.lock:
        memo = bank.index.view_memo("story.duplicates")
        if memo is not None and "found" in memo:
            items = memo["found"]
        else:
            by_name = _cards(bank)
            named = {frozenset(pair) for i in by_name for pair in itertools.combinations(i["ids"], 2)}
            items = by_name + _cards_by_meaning(bank, named) + _facts(bank)
            if memo is not None:
                memo["found"] = items
        lines = memo.setdefault("lines", {}) if memo is not None else {}
        return {"items": [shown(bank, i, lines) for i in items[:200]], "total": len(items)}


def shown(bank: Bank, item: dict[str, Any], lines: dict[str, int]) -> dict[str, Any]:
    """A copy of `item` (its lists too: the items are kept for the view, the answer is the caller's) with
    each fact's line read from its file (only the items answered: a bank of thousands of facts alike has
    thousands of pairs), each file once per view (`lines`)."""
    sources = []
    for s in item["sources"]:
        if s["line"] is None and s["source"] not in lines:
            lines[s["source"]] = text_line(bank, s["source"])
        sources.append({**s, "line": lines[s["source"]]} if s["line"] is None else dict(s))
    return {**item, "ids": list(item["ids"]), "sources": sources}
