"""The fact memories as the narrative reads them (story.md, Reveals; the check's `BEFORE_REVEAL` and
`FACTS_DISAGREE`): each live fact's `revealed`, `keys`, `subject`/`facet`/`value`, read from the index
once per view of it; `story:reader`."""

from __future__ import annotations

import json
import re
from typing import Any

from ...index import Index
from ...kernel.limits import MAX_LISTED
from ..contract import Bank
from . import positions, reveals
from .cards import Catalog
from .check import Flag, mention_words
from .graph import entity
from .matching import Match, Matcher, call_allowance, normalize
from .order import StoryOrder
from .reveals import Fact
from .positions import known_position

FACTS_DISAGREE = "FACTS_DISAGREE"
MAY_NOT_KNOW = "MAY_NOT_KNOW"
_PARAGRAPHS = re.compile(r"\n[ \t]*\n")

_LIVE_FACTS = ("SELECT record FROM entries WHERE kind = 'memory' AND type = 'fact' AND removed_at IS NULL"
               " AND deleted = 0 AND shadowed = 0 ORDER BY id")


def facts(index: Index) -> tuple[dict[str, Fact], Matcher | None]:
    """Every live fact by id, and a matcher over the keys of those that have keys (None: there are none);
    read once per view of the index."""
    memo = index.view_memo("story.facts.narrative")
    if memo is not None and "facts" in memo:
        return memo["facts"], memo["matcher"]
    found = {f.id: f for f in (reveals.of(json.loads(r)) for (r,) in index.db.execute(_LIVE_FACTS))}
    keyed = any(f.keys for f in found.values())
    made = (found, reveals.matcher(found.values()) if keyed else None)
    if memo is not None:
        memo["facts"], memo["matcher"] = made
    return made


def key_line(bank: Bank, source: str, key: str) -> int:
    """The line `key:` is written on in a project file (1 when it is not found or not readable)."""
    rel = source[len(".writenow/"):] if source.startswith(".writenow/") else None
    if rel is None:
        return 1
    try:
        text = bank.project.file(rel).read_text("utf-8", "replace")[:65536]
    except OSError:
        return 1
    found = re.search(rf"^{re.escape(key)}\s*:", text, re.MULTILINE)
    return text.count("\n", 0, found.start()) + 1 if found else 1


def reader(bank: Bank, at: str) -> dict[str, Any]:
    """`story:reader`: the facts the reader knows at `at` (revealed there or before, or never said)."""
    order = positions.story_order(bank)
    position = known_position(order, at)
    assert position is not None
    found, _ = facts(bank.index)
    known = reveals.reader(found.values(), order, position)
    return positions.warned({"at": position, "items": [{"id": f.id, "content": f.content, "source": f.source,
                                                        "revealed": f.revealed, "keys": list(f.keys)}
                                                       for f in known[:MAX_LISTED]], "total": len(known)}, order, position)


def unrevealed(index: Index, order: StoryOrder, at: str | None) -> frozenset[str]:
    """The ids of the facts whose `revealed` lies after `at` (every fact with one, without a position)."""
    memo = index.view_memo("story.facts.unrevealed")
    if memo is not None and (order, at) in memo:
        return memo[(order, at)]  # type: ignore[no-any-return]
    found, _ = facts(index)
    made = frozenset(i for i, f in found.items() if f.revealed is not None and not reveals.known(f, order, at))
    if memo is not None:
        if len(memo) >= 16:
            memo.clear()
        memo[(order, at)] = made
    return made


def secret_hits(bank: Bank, text: str) -> list[Match]:
    """Every occurrence in `text` of a fact's keys, by offset: one scan, which both flags read."""
    _, matcher = facts(bank.index)
    if matcher is None:
        return []
    with call_allowance():
        return matcher.mentions(text)[0]


def reveal_flags(bank: Bank, order: StoryOrder, document: str, hits: list[Match]) -> list[Flag]:
    """`BEFORE_REVEAL`: the passage uses the keys of a fact the reader is told only later."""
    if not hits:
        return []
    found, _ = facts(bank.index)
    out = []
    for fact, word in reveals.before_reveal(found, order, document, ((m.id, m.word) for m in hits)):
        out.append(Flag(reveals.BEFORE_REVEAL, fact.id,
                        f"the passage says {word}, which gives away {fact.id}: the reader learns it in "
                        f"{fact.revealed}, after {document}",
                        ((fact.source, key_line(bank, fact.source, "revealed")),)))
    return out


def _norm(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(sorted(_norm(v) for v in value))
    return normalize(str(value).strip())


def disagree_flags(bank: Bank, order: StoryOrder, document: str) -> list[Flag]:
    """`FACTS_DISAGREE`: two facts valid at `document` state different values for one subject and facet;
    made once per view of the index, story order and document (the facts' lines read once per view)."""
    memo = bank.index.view_memo("story.facts.disagree")
    key = (order, document)
    if memo is not None and key in memo:
        return list(memo[key])
    made = _disagree(bank, order, document, memo.setdefault("lines", {}) if memo is not None else {})
    if memo is not None:
        if len(memo) > 16:
            memo.clear()
        memo[key] = made
    return list(made)


def _disagree(bank: Bank, order: StoryOrder, document: str, lines: dict[str, int]) -> list[Flag]:
    found, _ = facts(bank.index)

    def line(source: str) -> int:
        if source not in lines:
            lines[source] = key_line(bank, source, "value")
        return lines[source]

    said: dict[tuple[str, str], list[Fact]] = {}
    for fact in found.values():
        meta = fact.meta
        if not all(isinstance(meta.get(k), (str, int, float, bool, list)) for k in ("subject", "facet")) or \
                "value" not in meta or not order.holds(fact.since, fact.until, document):
            continue
        said.setdefault((_norm(meta["subject"]), _norm(meta["facet"])), []).append(fact)
    out = []
    for (_, _), group in sorted(said.items()):
        values = {_norm(f.meta["value"]) for f in group}
        if len(values) < 2:
            continue
        first = group[0].meta
        shown = "; ".join(f"{f.id}: {f.meta['value']}" for f in group)
        out.append(Flag(FACTS_DISAGREE, str(first["subject"]),
                        f"the facts disagree on {first['subject']}'s {first['facet']} at {document} ({shown})",
                        tuple((f.source, line(f.source)) for f in group)))
    return out


def _paragraphs(text: str, hits: list[Match]) -> list[tuple[str, dict[str, str]]]:
    """The paragraphs of `text` (split at blank lines) that hold a hit, each with its facts' first words."""
    bounds, start = [], 0
    for gap in _PARAGRAPHS.finditer(text):
        bounds.append((start, gap.start()))
        start = gap.end()
    bounds.append((start, len(text)))
    out: dict[int, dict[str, str]] = {}
    n = 0
    for m in hits:  # by offset
        while n < len(bounds) - 1 and m.offset >= bounds[n][1]:
            n += 1
        out.setdefault(n, {}).setdefault(m.id, m.word)
    return [(text[bounds[i][0]:bounds[i][1]], words) for i, words in sorted(out.items())]


def may_not_know_flags(bank: Bank, cat: Catalog, order: StoryOrder, document: str, text: str,
                       hits: list[Match]) -> list[Flag]:
    """`MAY_NOT_KNOW`: a paragraph names a character together with the keys of a secret (a fact with
    `keys`, valid here) that the character's `knows` facet does not hold yet at `document`. A warning:
    the model judges whether the character acts on it. `hits`: the secrets' keys in `text`."""
    if not hits:
        return []
    found, _ = facts(bank.index)
    out: list[Flag] = []
    seen: set[tuple[str, str]] = set()
    knows: dict[str, Any] = {}
    with call_allowance():
        for paragraph, words in _paragraphs(text, hits):
            secrets = {i: w for i, w in words.items() if order.holds(found[i].since, found[i].until, document)}
            if not secrets:
                continue
            rows, _ = cat.matcher.mention_rows(paragraph)
            for _, _, card_id, key, _ in rows:
                card = cat.cards[card_id]
                words = mention_words(card)
                if card.get("section") != "characters" or (words is not None and key not in words):
                    continue
                if card_id not in knows:
                    knows[card_id] = entity(card, cat, order, document)["facets"].get("knows")
                held = knows[card_id]
                for fact_id, word in sorted(secrets.items()):
                    if (card_id, fact_id) in seen or reveals.holds(held["value"] if held else None, found[fact_id]):
                        continue
                    seen.add((card_id, fact_id))
                    evidence = [(found[fact_id].source, key_line(bank, found[fact_id].source, "keys"))]
                    if held:
                        evidence.append((held["source"], held["line"]))
                    out.append(Flag(MAY_NOT_KNOW, card_id, f"{card['name']} and {word} in one paragraph: "
                                    f"{card['name']} may not know {fact_id} yet at {document} (not in knows)",
                                    tuple(evidence)))
    return out
