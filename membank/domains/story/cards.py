"""The cards as the story sees them: every live card, the matcher over their trigger words, names
resolved to cards and relations seen from both ends — built once per change of the cards."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ...index import Index
from ...kernel.text import estimate_tokens
from . import books as book_rules
from .matching import Keyed, Match, Matcher, Skipped, normalize
from .refs import LIVE
from .state import Relation, incoming, links, outgoing
from .regexkeys import REGEX_KEY_SECONDS

REGEX_TIMEOUT = REGEX_KEY_SECONDS  # seconds a writer's /regex/ key may run on one text before it is skipped


class Named(NamedTuple):
    first: dict[str, Match]  # card id -> its first match
    ids: frozenset[str]
    skipped: tuple[Skipped, ...]
    groups: tuple[tuple[str, ...], ...]  # `ids` as the matcher's spans hold them (a word's cards: one tuple)


@dataclass(frozen=True)
class Catalog:
    cards: dict[str, dict[str, Any]]  # id -> the card's API record
    keyed: tuple[Keyed, ...]  # the cards' keys, which the matcher is built from
    names: dict[str, tuple[str, ...]]  # a normalized name, alias or id -> the cards it names
    relations: dict[str, tuple[Relation, ...]]  # id -> relations written on it and written about it
    always: tuple[str, ...]  # the `include: always` cards, by kind, then name, then id
    tokens: dict[str, int]  # id -> the estimated tokens of the card's body
    by_source: dict[str, str]  # a card's file (citation) -> its id
    sections: dict[str, str]  # id -> "characters" | "world", for the cards a prompt may show (not `never`)
    owners: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a scoped book's entry -> its characters
    constant: dict[str, tuple[str, ...]] = field(default_factory=dict)  # character -> its book's always-on entries
    # the cards a prompt may show that ask to be activated by meaning (`match: meaning`, the card's or its
    # book's) -> their `minScore` (None: the default)
    meaning: dict[str, float | None] = field(default_factory=dict)
    _named: dict[str, Named] = field(default_factory=dict, repr=False, compare=False)
    _memos: dict[str, dict[Any, Any]] = field(default_factory=dict, repr=False, compare=False)
    _built: dict[str, Matcher] = field(default_factory=dict, repr=False, compare=False)

    @property
    def matcher(self) -> Matcher:
        """Built at first use, once per generation of the cards: `membank status` and `doctor` read only
        the names and relations (the matcher is ~50 ms of a 2,000-card project's command)."""
        found = self._built.get("matcher")
        if found is None:  # two threads may both build it: the same matcher, the last one kept
            found = self._built["matcher"] = Matcher.build(list(self.keyed), regex_timeout=REGEX_TIMEOUT)
        return found

    def memo(self, name: str, *key: Any, kept: int = 8) -> dict[Any, Any]:
        """A dict for what is derived from these cards and `key` alone (a story order and a position, say),
        kept as long as this catalog is (once per generation of the cards) and while `key` is one of the
        `kept` latest of `name`: a session works at a few positions."""
        memos = self._memos.setdefault(name, {})
        found = memos.get(key)
        if found is None:
            if len(memos) >= kept:
                memos.clear()
            found = memos[key] = {}
        return found  # type: ignore[no-any-return]

    def resolve(self, name: str) -> tuple[str, ...]:
        return self.names.get(normalize(name.strip()), ())

    def named_in(self, card_id: str) -> Named:
        """The cards the text of `card_id` (summary, then body) activates, each with its first match:
        scanned once per generation of the cards, however many prompts recurse through it (unless a
        regex key was not reached by the call's time allowance: the next call tries again)."""
        done = self._named.get(card_id)
        if done is None:
            card = self.cards[card_id]
            text = "\n".join(filter(None, (card.get("summary"), card.get("content"))))
            hits, skipped = self.matcher.activated(text, keep="first")
            spans, _ = self.matcher.spans(text, "first")  # the same cards (tests hold the two equal), by word
            groups = tuple({id(cards): cards for _, _, cards in spans if cards}.values())
            done = Named({other: matches[0] for other, matches in hits.items()}, frozenset(hits), tuple(skipped),
                         groups)
            if not any(s.reason == "budget" for s in skipped):
                self._named[card_id] = done
        return done


def _live_cards(index: Index) -> list[dict[str, Any]]:
    """The cards the story sees (refs.LIVE, which the story's problems read too), project cards first."""
    return [json.loads(record) for (record,) in index.db.execute(
        f"WITH {LIVE} SELECT e.record FROM live JOIN entries AS e ON e.rowid = live.entry"
        " ORDER BY e.bank = 'global', e.id")]


def _signature(index: Index) -> str:
    joined = index.db.execute(
        "SELECT group_concat(bank || hash || shadowed || deleted, ',') FROM"
        " (SELECT bank, hash, shadowed, deleted FROM entries WHERE grp = 'card' AND removed_at IS NULL ORDER BY rowid)"
    ).fetchall()[0][0] or ""
    return hashlib.blake2b(joined.encode(), digest_size=16).hexdigest()


def build(cards: list[dict[str, Any]]) -> Catalog:
    books = book_rules.of(cards)  # a book's `include:` and `scope:` applied to its entries (context.md, Books)
    if books.include or books.files:
        cards = [{**c, "include": "never"} if c["id"] in books.files else
                 {**c, "include": books.include[c["id"]]} if c["id"] in books.include else c for c in cards]
    by_id = {c["id"]: c for c in cards}
    keyed = [Keyed(c["id"], c["name"], tuple(c.get("aliases") or ()), tuple(c.get("keys") or ()),
                   tuple(c.get("excludeKeys") or ()), tuple(c.get("secondaryKeys") or ()), c.get("logic") or "and_any")
             for c in cards]  # `include: never` cards too: never injected (activation skips them), still named
    names: dict[str, list[str]] = {}
    for c in cards:
        for name in {c["name"], c["id"], *(c.get("aliases") or ())}:
            ids = names.setdefault(normalize(str(name).strip()), [])
            if c["id"] not in ids:
                ids.append(c["id"])
    resolved = {k: tuple(sorted(v)) for k, v in names.items()}
    relations: dict[str, list[Relation]] = {c["id"]: [] for c in cards}
    for c in cards:
        for rel in [*outgoing(c), *links(c)]:
            relations[c["id"]].append(rel)
            others = resolved.get(normalize(rel.other), ())
            if len(others) == 1 and others[0] != c["id"]:  # a name several cards share leads nowhere (doctor says)
                relations[others[0]].append(incoming(rel, c))
    # written on the card first (as written), then those other cards write about it (by source, line)
    ordered = {k: tuple(sorted(v, key=lambda r: (r.direction != "out", r.source if r.direction == "in" else "",
                                                 r.line))) for k, v in relations.items()}
    always = tuple(c["id"] for c in sorted((c for c in cards if c.get("include") == "always"),
                                          key=lambda c: (c["kind"], c["name"], c["id"])))
    tokens = {c["id"]: estimate_tokens(c.get("content") or "") for c in cards}
    sections = {c["id"]: c["section"] for c in cards if c.get("include") != "never"}
    matching = book_rules.matching(cards)
    meaning = {}
    for c in cards:
        match, score = matching.get(c["id"], (c.get("match"), c.get("minScore")))
        if match == "meaning" and c["id"] in sections and c["id"] not in books.files:
            meaning[c["id"]] = score
    return Catalog(by_id, tuple(keyed), resolved, ordered, always, tokens,
                   {c["source"]: c["id"] for c in cards}, sections, books.owners, books.constant, meaning)


def catalog(index: Index) -> Catalog:
    """The catalog of this index's cards; re-made only when a card changed (its matcher is built
    once per generation of the cards, not per call)."""
    memo = index.caches.setdefault("story.catalog", {})
    views: dict[Any, Catalog] = memo.setdefault("views", {})  # per connection's view: read threads each have one
    key = index.view_key()
    if key is not None and key in views:
        return views[key]
    signature = _signature(index)
    if memo.get("signature") != signature:
        memo["catalog"] = build(_live_cards(index))
        memo["signature"] = signature
    if key is not None:
        if len(views) >= 16:
            views.clear()
        views[key] = memo["catalog"]
    return memo["catalog"]  # type: ignore[no-any-return]
