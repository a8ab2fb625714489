"""A word-based role link (issue 35; the calibration study's rows with `--roles`, not shipped).

Most questions the strong preview misses name someone by a role, not a name ("how does the first mate die",
"the captain", "which gunsmith"), and so do many questions across languages; the name bridge (membank/domains/
recall/bridge.py) sees only names. A card's summary often says its role ("First mate of the Gannet's Wake"),
so a question's content-word phrases that a card's summary holds count as naming that card: English words
lowercased on word boundaries, stopwords and the words of any card's names and aliases left out (a name is
the name bridge's; generic titles such as captain or doctor stay), phrases of 1-3 adjacent content words;
Chinese as substrings of 2-4 characters of the question's runs of Han characters once the cards' names and
aliases are cut out, none holding a function or number character. A phrase is worth its rarity among the
cards' summaries, log(n / df) / log(n) (df: the summaries holding it; one in more than `most` names none),
and a card the most any phrase linking it is worth. A memory's evidence is the card's worth times what naming
the card is worth in the memory's pool (Bridge.worth: its rarity among that language's memories), the most
over the linked cards. Then (a) in the question's own pool, memories naming a linked card gain `own` times
that evidence; (b) across languages the linked cards count as named by the name bridge (the larger of the
two evidences, `lift` 1 as shipped).
docs/recall.md gives the figures and why it does not ship.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np

from benchmarks import lexicon
from membank.domains.recall.bridge import Bridge
from membank.domains.recall.calibrate import calibrated_arrays
from membank.domains.story.matching import Keyed, Matcher
from membank.kernel.text import STOPWORDS

_WORD = re.compile(r"[a-z0-9]+")  # Shen's: shen and s (s a stopword-like single letter, left out)
_HAN = re.compile(r"[\u3400-\u9fff]+")
TITLES = frozenset("mr mrs ms dr doctor captain father lord lady madame sergeant senior brother granny master "
                   "commander governor princess".split())  # role words a name may carry: kept as phrases
# a writer's bank's own function words: numbers and the book's parts say no one's role
MORE_STOP = frozenset("one two three four five six seven eight nine ten second third last book chapter chapters "
                      "scene scenes story character characters".split())
# Chinese function characters (question words, particles): a substring holding one is no role
HAN_STOP = frozenset("一二三四五六七八九十第的了是在么什怎哪谁吗呢吧着过和与"
                     "就都也还才要会能把被从到这那个几多少时候之后里")
LONGEST = 3  # English content words in a phrase
CJK = (2, 4)  # Chinese phrase lengths, in characters


def read_cards(fixture: Path, body: bool = False) -> list[tuple[Keyed, str]]:
    """The fixture's cards (name and aliases, as the name bridge matches them) and each one's role text: its
    summary (and its body when `body`)."""
    import yaml

    out = []
    for path in sorted((fixture / "project" / ".writenow").rglob("*.md")):
        if "memories" in path.parts:
            continue
        _, head_text, rest = path.read_text("utf-8").split("---", 2)
        head = yaml.safe_load(head_text)
        if not isinstance(head, dict) or "name" not in head:
            continue
        names = [str(head["name"]), *(str(a) for a in head.get("aliases") or ())]
        text = str(head.get("summary") or "") + ("\n" + rest if body else "")
        out.append((Keyed(str(head.get("id", path.stem)), names[0], tuple(dict.fromkeys(names[1:]))), text))
    return out


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


class RoleLink:
    """Which cards a question's words name by role, each with its worth (pure)."""

    def __init__(self, cards: Iterable[tuple[Keyed, str]], most: int = 3) -> None:
        cards = list(cards)
        self.most = most
        self.n = len(cards)
        names = [k for k, _ in cards]
        self.name_words = {w for k in names for n in (k.name, *k.aliases) for w in _words(n)} - TITLES
        han = sorted({s for k in names for n in (k.name, *k.aliases) for s in _HAN.findall(n)}, key=len, reverse=True)
        self._unnamed = re.compile("|".join(map(re.escape, han)) or "(?!)")
        self.texts = [(k.id, " " + " ".join(_words(t)) + " ", "".join(_HAN.findall(t))) for k, t in cards]

    def phrases(self, question: str) -> set[str]:
        """The question's content-word phrases (English: space-joined words; Chinese: substrings)."""
        out: set[str] = set()
        run: list[str] = []
        for w in [*_words(question), ""]:
            if w and len(w) > 1 and w not in STOPWORDS and w not in MORE_STOP and w not in self.name_words \
                    and not w.isdigit():
                run.append(w)
                continue
            out.update(" ".join(run[i:i + n]) for n in range(1, LONGEST + 1) for i in range(len(run) - n + 1))
            run = []
        for han in self._unnamed.sub(" ", " ".join(_HAN.findall(question))).split():  # names cut out
            for n in range(CJK[0], CJK[1] + 1):
                out.update(s for s in (han[i:i + n] for i in range(len(han) - n + 1))
                           if HAN_STOP.isdisjoint(s))
        return out

    def cards(self, question: str) -> dict[str, float]:
        """The cards whose role text holds one of the question's phrases, each worth the rarest such phrase's
        rarity among the cards."""
        out: dict[str, float] = {}
        if self.n < 2:
            return out
        for phrase in self.phrases(question):
            holding = [cid for cid, words, han in self.texts
                       if (f" {phrase} " in words if phrase.isascii() else phrase in han)]
            if not holding or len(holding) > self.most:
                continue
            worth = math.log(self.n / len(holding)) / math.log(self.n)
            for cid in holding:
                out[cid] = max(out.get(cid, 0.0), worth)
        return out


def evidence(bridge: Bridge, linked: dict[str, float], weighted: bool = True) -> np.ndarray | None:
    """Each row's role evidence: the most any linked card is worth in it (times the link's worth)."""
    out = None
    for card, worth in linked.items():
        found = bridge.worth(card)
        if found is not None:
            found = found * (worth if weighted else 1.0)
            out = found if out is None else np.maximum(out, found)
    return out


def matrix(texts: list[str], questions: list[str], zh: np.ndarray, cards: list[tuple[Keyed, str]],
           most: int = 3, weighted: bool = True) -> np.ndarray:
    """The role evidence of every memory for every question (questions x memories)."""
    matcher = Matcher.build([k for k, _ in cards])
    bridge = Bridge.of([frozenset(m.id for m in matcher.mentions(t)[0]) for t in texts], zh)
    link = RoleLink(cards, most)
    out = np.zeros((len(questions), len(texts)))
    for qi, q in enumerate(questions):
        found = evidence(bridge, link.cards(q), weighted)
        if found is not None:
            out[qi] = found
    return out


def ranked(strong: np.ndarray, static: np.ndarray, zh: np.ndarray, qzh: list[bool], own: np.ndarray,
            other: np.ndarray, before: bool = False) -> Callable[[int], list[int]]:
    """The shipped gate and cap with evidence on both sides: `own` in the question's pool, `other` across;
    `before`: the gate's bar set by the question's pool before its own lift (the lift reorders that pool
    only, an other-language memory is let in as without it)."""
    if not before:  # the lexicon study's rule with evidence on both sides
        return lexicon.both(strong, static, zh, qzh, other, own)

    def rank(qi: int) -> list[int]:
        scores, competes = calibrated_arrays(strong[qi], static[qi], zh, qzh[qi], evidence=other[qi])
        return list(np.lexsort((-(scores + np.where(zh == qzh[qi], own[qi], 0.0)), ~competes)))
    return rank


def rows(measure: Callable[..., None], fixture: Path, texts: list[str], qs: list[dict[str, Any]], zh: np.ndarray,
         names: np.ndarray, strong: np.ndarray, static: np.ndarray, qzh: list[bool],
         lifted: Callable[[np.ndarray, float], np.ndarray]) -> None:
    """The study's rows: the role link in the question's own pool (`own` lift), across languages (the name
    bridge's evidence or the role's, the larger), or both; summaries (or summaries and bodies) as role text,
    a phrase in at most `most` cards, its worth weighted or flat."""
    questions = [q["query"] for q in qs]
    zero = np.zeros_like(names)
    for body, most, weighted in ((False, 3, True), (False, 1, True), (False, 3, False), (True, 3, True)):
        roles = matrix(texts, questions, zh, read_cards(fixture, body), most, weighted)
        tag = f"role link, {'summary + body' if body else 'summary'}, df <= {most}{'' if weighted else ', flat'}"
        cross = np.maximum(names, roles)
        measure(f"{tag}, across only", ranked(strong, static, zh, qzh, zero, cross), lifted(cross, 1.0))
        for own in (0.25, 0.5, 1.0, 1.5):
            for before in (False, True):
                how = f"own {own}{', bar before it' if before else ''}"
                measure(f"{tag}, {how}", ranked(strong, static, zh, qzh, own * roles, names, before),
                        lifted(names, 1.0))
                measure(f"{tag}, {how} + across", ranked(strong, static, zh, qzh, own * roles, cross, before),
                        lifted(cross, 1.0))
