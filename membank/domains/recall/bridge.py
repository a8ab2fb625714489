"""The bank's name bridge (issue 35, docs/recall.md "Tiers"): pure, no I/O.

A question across languages nearly always names someone or something ("why is Shen limping?"), and the
bank's cards and world entries carry their names in both scripts (温玉, aliases Wen Yu, 小师弟). A memory
that names a card the query names (story/matching.py's rules on the cards' names and aliases: Latin on
word boundaries, CJK as substrings) has evidence no vector gives: whatever script each is written in, the
card is the same. The evidence is worth the card's rarity in the memory's language pool (a name every
memory of that language mentions says next to nothing; one few mention, much), and calibrate.py adds it,
`LIFT` times, to an other-language candidate's standing before its gate and cap: the vectors still
decide among memories that name the same card (look-alikes share the answer's names).

`Bridge.of` is made once per copy of the strong rows and generation of the cards (bridgebank.py keeps
it); `evidence` is per query: a few array writes per card the query names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Bridge:
    """For each card some row names: those rows (positions) and what naming it is worth in each one."""

    size: int  # rows in all
    rows: dict[str, np.ndarray]  # card id -> positions of the rows whose text names it
    worth: dict[str, np.ndarray]  # card id -> the evidence each of those rows gets, in (0, 1]

    @classmethod
    def of(cls, named: Sequence[Iterable[str]], zh: np.ndarray, counted: np.ndarray | None = None,
           rarity: bool = True) -> Bridge:
        """`named`: per row, the cards its text names; `zh`: which rows are Chinese (the others English);
        `counted`: the rows that count for a card's rarity in their pool (memories, not the cards' own rows;
        default all). Worth: log(n / df) / log(n) over the counted rows of the row's language (n of them, df
        naming the card), 1 when the pool has fewer than two rows or `rarity` is off."""
        import numpy as np

        zh = np.asarray(zh, bool)
        counted = np.ones(len(zh), bool) if counted is None else np.asarray(counted, bool)
        where: dict[str, list[int]] = {}
        for i, cards in enumerate(named):
            for card in cards:
                where.setdefault(card, []).append(i)
        pools = {True: int((counted & zh).sum()), False: int((counted & ~zh).sum())}
        rows, worth = {}, {}
        for card, positions in where.items():
            at = np.array(positions, np.int64)
            value = np.ones(len(at), np.float64)
            if rarity:
                for lang, n in pools.items():
                    if n < 2:
                        continue
                    mine = zh[at] == lang
                    df = int((counted[at] & mine).sum())
                    value[mine] = math.log(n / df) / math.log(n) if df else 1.0
            rows[card], worth[card] = at, value
        return cls(len(zh), rows, worth)

    def evidence(self, cards: Iterable[str]) -> np.ndarray | None:
        """Each row's evidence for a query naming `cards`: the most any of them is worth in it (0 where it
        names none); None when no row names any (nothing to add)."""
        import numpy as np

        out = None
        for card in cards:
            at = self.rows.get(card)
            if at is None:
                continue
            if out is None:
                out = np.zeros(self.size, np.float64)
            out[at] = np.maximum(out[at], self.worth[card])  # a card's rows are distinct
        return out
