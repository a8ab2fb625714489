"""The bank's name bridge (issue 35, docs/recall.md "Tiers"): pure, no I/O.

A question across languages nearly always names someone or something ("why is Shen limping?"), and the
bank's cards and world entries carry their names in both scripts (温玉, aliases Wen Yu, 小师弟). A memory
that names a card the query names (story/matching.py's rules on the cards' names and aliases: Latin on
word boundaries, CJK as substrings) has evidence no vector gives: whatever script each is written in, the
card is the same. The evidence is worth the card's rarity in the memory's language pool (a name every
memory of that language mentions says next to nothing; one few mention, much), and calibrate.py adds it,
`LIFT` times, to an other-language candidate's standing before its gate and cap: the vectors still
decide among memories that name the same card (look-alikes share the answer's names).

`Bridge.of` is made once per copy of the strong rows (bridgebank.py keeps it), then `patched` as a save
patches the copy and `renamed` as the cards' names change; `evidence` is per query: a few array writes per
card the query names.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import numpy as np


class Sets:
    """The distinct sets of cards rows name, each with a number, and the sets each card is in: grown as
    rows are added, shared by a bridge and the bridges patched from it (a set no row names any more
    stays: harmless, and a bank's memories share few)."""

    def __init__(self) -> None:
        self.ids: dict[frozenset[str], int] = {}
        self.holding: dict[str, list[int]] = {}  # card -> the numbers of the sets it is in
        self._lock = threading.Lock()  # two read threads may patch bridges of one table at once

    def number(self, cards: Iterable[str]) -> int:
        """`cards`' set's number (-1: the empty set)."""
        found = cards if isinstance(cards, frozenset) else frozenset(cards)
        if not found:
            return -1
        n = self.ids.get(found)
        if n is None:
            with self._lock:
                n = self.ids.get(found)
                if n is None:
                    n = len(self.ids)
                    for card in found:
                        self.holding.setdefault(card, []).append(n)
                    self.ids[found] = n  # last: a reader that finds it finds its cards held
        return n


@dataclass(frozen=True)
class Bridge:
    """Which cards each row names (the number of its set of cards in `sets`), and what naming each card is
    worth in each row, worked out at the card's first query and kept."""

    row_set: np.ndarray  # each row's set of cards, by its number in `sets`; -1: it names none
    zh: np.ndarray  # which rows are Chinese (the others English)
    counted: np.ndarray  # the rows that count for a card's rarity in their pool
    sets: Sets
    rarity: bool = True
    _cards: dict[str, np.ndarray | None] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def of(cls, named: Sequence[Iterable[str]], zh: np.ndarray, counted: np.ndarray | None = None,
           rarity: bool = True, sets: Sets | None = None) -> Bridge:
        """`named`: per row, the cards its text names; `zh`: which rows are Chinese; `counted`: the rows that
        count for a card's rarity in their pool (memories, not the cards' own rows; default all). A card's
        worth in a row: log(n / df) / log(n) over the counted rows of the row's language (n of them, df
        naming the card), 1 when the pool has fewer than two rows or `rarity` is off."""
        import numpy as np

        sets = Sets() if sets is None else sets
        zh = np.asarray(zh, bool)
        return cls(np.array([sets.number(s) for s in named], np.int64), zh,
                   np.ones(len(zh), bool) if counted is None else np.asarray(counted, bool), sets, rarity)

    def patched(self, keep: np.ndarray, named: Sequence[Iterable[str]], zh: np.ndarray, counted: np.ndarray) -> Bridge:
        """The bridge over this one's rows `keep` (a mask), then the rows `named` (as a patched copy of the
        strong rows lays them out: strongcopy.py); `zh` and `counted` over all of those."""
        import numpy as np

        fresh = np.array([self.sets.number(s) for s in named], np.int64)
        return Bridge(np.concatenate([self.row_set[keep], fresh]), np.asarray(zh, bool), np.asarray(counted, bool),
                      self.sets, self.rarity)

    def renamed(self, at: np.ndarray, named: Sequence[Iterable[str]]) -> Bridge:
        """This bridge with the rows `at` naming the cards `named` (the same rows, the cards changed)."""
        row_set = self.row_set.copy()
        row_set[at] = [self.sets.number(s) for s in named]
        return Bridge(row_set, self.zh, self.counted, self.sets, self.rarity)

    def worth(self, card: str) -> np.ndarray | None:
        """What naming `card` is worth in each row (0 where the row does not name it); None: no row does."""
        if card in self._cards:
            return self._cards[card]
        import numpy as np

        holding = self.sets.holding.get(card)
        out = None
        rows = None
        if holding:
            # one slot per set number (a set numbered on another thread meanwhile too), the last one for a
            # row naming no card (-1)
            marked = np.zeros(max(len(self.sets.ids), max(holding) + 1) + 1, bool)
            marked[holding] = True
            rows = marked[self.row_set]
        if rows is not None and rows.any():
            out = rows.astype(np.float64)
            if self.rarity:
                for pool in (self.zh, ~self.zh):
                    n = int((self.counted & pool).sum())
                    df = int((self.counted & pool & rows).sum())
                    if n >= 2 and df:
                        out[rows & pool] = math.log(n / df) / math.log(n)
        self._cards[card] = out  # two threads may both work it out: the same array, the last one kept
        return out

    def evidence(self, cards: Iterable[str]) -> np.ndarray | None:
        """Each row's evidence for a query naming `cards`: the most any of them is worth in it (0 where it
        names none); None when no row names any (nothing to add)."""
        import numpy as np

        out = None
        for card in cards:
            found = self.worth(card)
            if found is not None:
                out = found if out is None else np.maximum(out, found)
        return out
