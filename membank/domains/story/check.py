"""The consistency check (story.md): the evidence an app's "consistency check" skill needs to judge a
passage at its story position, and what membank can flag without a model. Pure: the card catalog,
the story order, the passage and the facts in; never anything from a later position."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Callable, Collection, Iterable

if TYPE_CHECKING:
    import numpy as np

from ...kernel import cancel
from ...kernel.limits import MAX_LISTED
from .cards import Catalog
from .matching import call_allowance
from .graph import entity, fresh_entity
from .order import StoryOrder
from .state import progressions

NOT_YET_INTRODUCED = "NOT_YET_INTRODUCED"
NOT_ALIVE = "NOT_ALIVE"
_FALSE = {"false", "no", "dead", "0"}  # `alive: false` as writers write it


@dataclass(frozen=True)
class Flag:
    code: str
    entity: str
    message: str
    evidence: tuple[tuple[str, int], ...]  # (source, line)

    def to_api(self) -> dict[str, Any]:
        return {"code": self.code, "entity": self.entity, "message": self.message,
                "evidence": [{"source": s, "line": n} for s, n in self.evidence]}


Named = tuple[dict[str, Any], tuple[str, ...]]  # a fact memory and the ids of the cards its text names


@dataclass(frozen=True, eq=False)  # arrays inside: compared by identity
class Facts:
    """The facts valid at a position (`items`, in id order) and who names what, made once per list: each
    fact's set of names (`group_of`, a number per distinct set), the sets (`groups`), how many facts hold
    each (`sizes`); each card named, a number (`index`) and the sets it is in (`holders`; as the bits of an
    int in `bits`, made at a check's first asking); each set's members by those numbers (`picks`, an
    itemgetter: a mark per member). A check ORs the bits of its mentioned cards and reads the members of
    the sets it lists, rather than looking up every name of every fact (~30,000 look-ups on the bench)."""
    items: list[Named]
    group_of: np.ndarray
    groups: list[tuple[str, ...]]
    sizes: np.ndarray
    index: dict[str, int]
    holders: dict[str, list[int]]
    picks: list[Callable[[bytearray], Any] | None]  # None: a set of no card, or of one
    bits: dict[str, int]

    @classmethod
    def of(cls, items: list[Named]) -> Facts:
        import numpy as np

        number: dict[tuple[str, ...], int] = {}
        group_of = np.array([number.setdefault(ids, len(number)) for _, ids in items], np.int64)
        groups = list(number)
        holders: dict[str, list[int]] = {}
        for g, ids in enumerate(groups):
            for card_id in dict.fromkeys(ids):  # a name a set holds twice is one membership
                holders.setdefault(card_id, []).append(g)
        index = {card_id: n for n, card_id in enumerate(holders)}
        picks = [itemgetter(*(index[c] for c in ids)) if len(ids) > 1 else None for ids in groups]
        return cls(items, group_of, groups, np.bincount(group_of, minlength=len(groups)), index, holders, picks, {})


def naming(facts: Facts, mentioned: Collection[str]) -> tuple[list[dict[str, Any]], int]:
    """The first MAX_LISTED facts that name a `mentioned` card, each a copy with `entities` (the cards it
    names that are mentioned, in its own order), and how many facts name one."""
    import numpy as np

    bits = 0
    marked = bytearray(len(facts.index))
    for card_id in mentioned:
        held = facts.bits.get(card_id)
        if held is None:
            if card_id not in facts.index:
                continue
            held = facts.bits[card_id] = sum(1 << g for g in facts.holders[card_id])  # the same from any thread
        bits |= held
        marked[facts.index[card_id]] = 1
    if not bits:
        return [], 0
    count = len(facts.groups)
    hit = np.unpackbits(np.frombuffer(bits.to_bytes((count + 7) // 8, "little"), np.uint8), count=count,
                        bitorder="little").view(np.bool_)
    first = np.flatnonzero(hit[facts.group_of])[:MAX_LISTED]
    names: dict[int, list[str]] = {}
    out = []
    for i, g in zip(first.tolist(), facts.group_of[first].tolist()):
        mine = names.get(g)
        if mine is None:
            pick = facts.picks[g]  # a set of one card that is hit: that card
            mine = names[g] = list(facts.groups[g]) if pick is None else list(compress(facts.groups[g], pick(marked)))
        fact = facts.items[i][0].copy()
        fact["entities"] = mine.copy()
        out.append(fact)
    return out, int(facts.sizes[hit].sum())


def first_appearance(card: dict[str, Any], order: StoryOrder, items: list[tuple[str, dict[str, Any], int]] | None = None
                     ) -> tuple[str, int] | None:
    """Where a card enters the story: `introduced`, else its earliest progression (position, line).
    `items`: the card's `progressions`, for a caller that has them."""
    lines = card.get("lines") or {}
    if card.get("introduced"):
        return card["introduced"], lines.get("introduced", 1)
    items = progressions(card) if items is None else items
    if not items:
        return None
    at, _, line = min(items, key=lambda p: order.rank(p[0]))
    return at, line


def mention_words(card: dict[str, Any]) -> frozenset[str] | None:
    """The keys whose occurrence is a mention of `card` (story.md: a name or alias; its extra `keys` too
    when it says `mention_keys: true`, None standing for every key). A card its other keys bring is listed
    among the entities (evidence) but gets no NOT_YET_INTRODUCED / NOT_ALIVE. An entry switched off
    (`include: never`, or its book off) is not an entity of any chapter: the empty set."""
    if card.get("include") == "never":
        return frozenset()
    meta = card.get("metadata")
    if isinstance(meta, dict) and meta.get("mention_keys") is True:
        return None
    return frozenset((card["name"], *(card.get("aliases") or ())))


def _dead(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().casefold() in _FALSE)


def flags(card: dict[str, Any], facets: dict[str, Any], order: StoryOrder, position: str | None,
          items: list[tuple[str, dict[str, Any], int]] | None = None) -> list[Flag]:
    """What a mention of `card` at `position` contradicts in the card itself (`items`: its `progressions`)."""
    out = []
    name = card["name"]
    first = first_appearance(card, order, items)
    if position is not None and order.knows(position) and first is not None and not order.reached(first[0], position):
        out.append(Flag(NOT_YET_INTRODUCED, card["id"], f"{name} is mentioned in {position}, before entering the "
                        f"story at {first[0]}", ((card["source"], first[1]),)))
    alive = facets.get("alive")
    if alive is not None and _dead(alive["value"]):
        out.append(Flag(NOT_ALIVE, card["id"], f"{name} is mentioned in {position or 'this text'}, but is not alive "
                        f"there (alive: {alive['value']} since {alive['at']})", ((alive["source"], alive["line"]),)))
    return out


def _entity(card: dict[str, Any], catalog: Catalog, order: StoryOrder, position: str | None
            ) -> tuple[dict[str, Any], list[Flag]]:
    # no position: an empty story order, where only what is timeless holds
    items = progressions(card)
    view = entity(card, catalog, order, position, relations=True, items=items) if position is not None else \
        entity(card, catalog, StoryOrder((), False), "", relations=True, items=items)
    return view, flags(card, view["facets"], order, position, items)


Mentions = dict[str, list[tuple[int, int, str]]]  # card -> its mentions (offset, -length, word as found)


Judged = dict[str, tuple[dict[str, Any], list[Flag]]]  # card -> its view and flags at one position


def mentioned(catalog: Catalog, spans: dict[str, list[tuple[int, int, str]]],
              regex_rows: list[tuple[int, int, str, str, str]]) -> tuple[Mentions, set[str]]:
    """Each card the text mentions, with its mentions in `mention_rows`' order (a card one word brings, as
    most are, shares that word's list: read-only), and the cards a name or alias names (`mention_words`).
    `spans` and `regex_rows`: `Matcher.word_spans` of the text. A switched-off card is in neither."""
    by_card: Mentions = {}
    named: set[str] = set()
    first_key: dict[str, str] = {}  # the key of the one word that has brought a card so far
    merged: dict[str, list[tuple[int, int, str, str]]] = {}  # a card several words bring: its rows, with keys
    targets: dict[str, tuple[tuple[str, str, bool], ...]] = catalog.memo("check.targets")  # per word

    def add(card_id: str, key: str, found: list[tuple[int, int, str]]) -> None:
        mine = by_card.get(card_id)
        if mine is None:
            by_card[card_id], first_key[card_id] = found, key
            return
        rows = merged.get(card_id)
        if rows is None:
            rows = merged[card_id] = [(a, length, first_key[card_id], seen) for a, length, seen in mine]
        rows += [(a, length, key, seen) for a, length, seen in found]

    keyed: dict[str, list[tuple[int, int, str]]] = {}  # a card's spans of keys that are not mentions of it

    def note(card_id: str, names: bool, found: list[tuple[int, int, str]]) -> None:
        if names:
            named.add(card_id)
        else:
            keyed.setdefault(card_id, []).extend(found)

    for word, found in spans.items():
        cards = targets.get(word)
        if cards is None:
            cards = targets[word] = _targets(catalog, catalog.matcher.named(word))
        for card_id, key, names in cards:
            note(card_id, names, found)
            add(card_id, key, found)
    for offset, length, row_card, row_key, seen in regex_rows:
        for card_id, key, names in _targets(catalog, ((row_card, row_key),)):
            note(card_id, names, [(offset, length, seen)])
            add(card_id, key, [(offset, length, seen)])
    for card_id, rows in merged.items():
        by_card[card_id] = [(a, length, seen) for a, length, _, seen in sorted(set(rows))]
    for card_id in named & keyed.keys():  # 宝玉 inside its key 通灵宝玉 names the object, not 贾宝玉
        keys = keyed[card_id]
        if all(span in keys or _within(span[0], -span[1], keys) for span in by_card[card_id]):
            named.discard(card_id)
    return by_card, named


def _within(start: int, size: int, keys: list[tuple[int, int, str]]) -> bool:
    """Whether the span at `start` of `size` lies inside a longer one of `keys`' spans (offset, -length, word)."""
    return any(a <= start and start + size <= a - length and -length > size for a, length, _ in keys)


def _targets(catalog: Catalog, pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str, bool], ...]:
    """(card, key as written, whether the key names the card) for each of `pairs` whose card is not switched
    off; each card's `mention_words` worked out once per generation of the cards."""
    counted: dict[str, frozenset[str] | None] = catalog.memo("check.words")
    out = []
    for card_id, key in pairs:
        words = counted.get(card_id, _UNSEEN)
        if words is _UNSEEN:
            words = counted[card_id] = mention_words(catalog.cards[card_id])
        if words is None or words:
            out.append((card_id, key, words is None or key in words))
    return tuple(out)


_UNSEEN = frozenset({"<unseen>"})


def scene_flags(catalog: Catalog, order: StoryOrder, card_id: str, mentions: list[tuple[int, int, str]],
                scenes: list[tuple[int, str]], first: list[Flag], starts: list[int], made: dict[str, Any]
                ) -> list[Flag]:
    """The flags of a card's mentions, each judged at the position of the scene it is in (`first`: those at
    the document's start, for the first scene; `starts`: each later scene's offset); a code once, at the
    first scene that raises it. `made`: each card's flags at every scene (an empty tuple for a card with
    none, as most are), kept per generation of the cards and chapter."""
    every = made.get(card_id)
    if every is None:
        every = [first]
        for _, at_scene in scenes:
            judged: Judged = catalog.memo("check.scenes", order, at_scene, kept=64)
            view = judged.get(card_id)
            if view is None:
                view = judged[card_id] = _entity(catalog.cards[card_id], catalog, order, at_scene)
            every.append(view[1])
        every = made[card_id] = tuple(every) if any(every) else ()
    if not every:
        return []
    numbers = (bisect_right(starts, mentions[0][0]),) if len(mentions) == 1 else \
        sorted({bisect_right(starts, offset) for offset, _, _ in mentions})
    out: dict[str, Flag] = {}
    for n in numbers:
        for flag in every[n]:
            out.setdefault(flag.code, flag)
    return list(out.values())


def check(catalog: Catalog, order: StoryOrder, position: str | None, text: str,
          facts: Callable[[], Facts], scenes: list[tuple[int, str]] | None = None) -> dict[str, Any]:
    """`kg:consistency:check`'s data: every entity mentioned in `text` (its mentions, its state, facets
    and relations at `position`), the facts valid there that name one, and the flags. Each list holds at
    most MAX_LISTED items in full (entities by first mention, each with its first mentions), with its
    total beside it (`entitiesTotal`, `mentionsTotal`, …): a chapter full of one-character names answers
    in kilobytes, not in a hundred megabytes. The regex keys of all scans share one time allowance: the
    passage is scanned first, then `facts()` (the facts valid there, each with the cards it names) is asked.
    `scenes`: (start offset, position) of each scene after the first in a whole document: a mention there
    is judged at that scene's position (the views and facts stay those at `position`, its start)."""
    with call_allowance():
        spans, regex_rows, skipped = catalog.matcher.word_spans(text)  # `mention_rows`, by word
    by_card, named = mentioned(catalog, spans, regex_rows)
    entities, found_flags = [], []
    # a card's view and flags at a position are the same for every passage checked there: made once
    # per generation of the cards
    at: Judged = catalog.memo("check.entities", order, position)
    starts = [start for start, _ in scenes or ()]
    made_at = catalog.memo("check.chapter", order, position, tuple(scenes or ()))  # its scenes' judgements
    for n, (_, card_id) in enumerate(sorted([(mine[0][0], c) for c, mine in by_card.items()])):
        cancel.check()  # canceled or past its deadline: nothing is kept (a read; caches are filled whole)
        made = at.get(card_id)
        if made is None:
            made = at[card_id] = _entity(catalog.cards[card_id], catalog, order, position)
        if card_id in named:  # a card its extra keys bring is evidence, but what a mention contradicts is not
            found_flags += scene_flags(catalog, order, card_id, by_card[card_id], scenes, made[1], starts, made_at) \
                if scenes else made[1]
        if n >= MAX_LISTED:
            continue  # counted, its flags kept; not listed
        view = fresh_entity(made[0])  # the kept view stays as it was, whatever a caller does with this one
        view["mentions"] = [{"match": word, "offset": offset, "length": -length}
                            for offset, length, word in by_card[card_id][:MAX_LISTED]]
        view["mentionsTotal"] = len(by_card[card_id])
        entities.append(view)
    listed, total_facts = naming(facts(), by_card.keys())
    return {"documentId": position, "entities": entities, "entitiesTotal": len(by_card),
            "facts": listed, "factsTotal": total_facts,
            "flags": [f.to_api() for f in found_flags[:MAX_LISTED]], "flagsTotal": len(found_flags),
            "skipped": [{"id": s.id, "key": s.key, "reason": s.reason, "message": s.message}
                        for s in skipped[:MAX_LISTED]], "skippedTotal": len(skipped)}
