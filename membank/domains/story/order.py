"""Story order (story.md): which manuscript document comes before which. Pure: the caller lists the
files and reads `project.yaml`; this decides the order and answers "is X reached at P?"."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Iterable

_DIGITS = re.compile(r"(\d+)")


def natural_key(path: str) -> tuple[tuple[int, int | str], ...]:
    """`ch2` before `ch10`: runs of digits compare as numbers, the rest case-folded, then as written."""
    parts: list[tuple[int, int | str]] = []
    for i, part in enumerate(_DIGITS.split(path)):
        if i % 2:
            parts.append((0, int(part)))
        elif part:
            parts.append((1, part.casefold()))
    return (*parts, (2, path))


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def expand(patterns: Iterable[str], files: Iterable[str]) -> tuple[str, ...]:
    """`chapters:` in reading order: a path as written, a glob as the files it matches in natural
    order; a path listed twice keeps its first place."""
    files = sorted(set(files), key=natural_key)
    out: dict[str, None] = {}
    for pattern in patterns:
        if is_glob(pattern):
            for path in files:
                if fnmatch.fnmatchcase(path, pattern):
                    out.setdefault(path, None)
        else:
            out.setdefault(pattern, None)
    return tuple(out)


RANKS_KEPT = 4096  # positions whose rank an order keeps
END_OF_DOCUMENT = 1 << 30  # the scene number of an unknown scene: it counts as the end of its document


def split(position: str) -> tuple[str, str | None]:
    """A story position as (document, scene or None): `chapters/ch05.md#雨夜` names a scene of ch05 by its
    heading's text, `chapters/ch05.md#2` its second scene (docs/manuscript.md, "Scene positions")."""
    doc, sep, scene = position.partition("#")
    scene = scene.strip()
    return _document(doc), (scene if sep and scene else None)


def _document(doc: str) -> str:
    """A position's document as the order spells it: outer spaces, `./` and backslashes are not another
    document (` chapters/ch01.md` must not count as after every chapter and see the whole story)."""
    doc = doc.strip().replace("\\", "/")
    while doc.startswith("./"):
        doc = doc[2:]
    return doc


@dataclass(frozen=True)
class StoryOrder:
    """The reading order of the story's positions. A position it does not hold counts as after every
    known one (story.md): it can never leak into an earlier chapter. A position may name a scene of its
    document: positions order by document, then scene; a document alone is its start (scene 0), so
    something dated to a scene is not reached at the chapter's first scene; an unknown scene counts as the
    end of its document."""

    positions: tuple[str, ...]
    explicit: bool  # from project.yaml `chapters:` (else natural order)
    scenes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (document, its scenes' labels in order), by document

    @classmethod
    def of(cls, chapters: tuple[str, ...] | None, manuscript: Iterable[str], named: Iterable[str]) -> StoryOrder:
        if chapters is not None:
            return cls(expand(chapters, manuscript), True)
        return cls(tuple(sorted(set(manuscript) | {split(p)[0] for p in named}, key=natural_key)), False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rank", {p: i for i, p in enumerate(self.positions)})
        object.__setattr__(self, "_scenes", dict(self.scenes))
        object.__setattr__(self, "_ranks", {})  # each position's `rank`, as asked: a check asks ~1,000 times
        object.__setattr__(self, "_hash", hash((self.positions, self.explicit, self.scenes)))

    def __hash__(self) -> int:  # the dataclass's own, made once: an order keys a dozen memos a prompt
        return self._hash  # type: ignore[attr-defined,no-any-return]

    def scene_number(self, document: str, scene: str) -> int | None:
        """The scene's number in its document (by heading text, else `N` / `#N`); None if it has none such."""
        labels: tuple[str, ...] = self._scenes.get(document, ())  # type: ignore[attr-defined]
        if scene in labels:
            return labels.index(scene) + 1
        digits = scene[1:] if scene.startswith("#") else scene
        if digits.isdecimal() and 1 <= int(digits) and (not labels or int(digits) <= len(labels)):
            return int(digits)
        if digits.isdecimal() and int(digits) == 0:
            return 0  # `#0`: before the first scene, the document's start (as the document alone)
        return None

    def unknown_scene(self, position: str) -> bool:
        doc, scene = self.locate(position)  # `chapters/ch03 #2.md#1`: scene 1 of that file, known
        return scene is not None and self.scene_number(doc, scene) is None

    def locate(self, position: str) -> tuple[str, str | None]:
        """`split`, knowing the documents: a file whose name holds `#` (`chapters/ch02 #2.md`) is that
        document, not `chapters/ch02 ` and a scene (an unknown document would count as after every one)."""
        doc, scene = split(position)
        if doc in self._rank or "#" not in position:  # type: ignore[attr-defined]
            return doc, scene
        if _document(position) in self._rank:  # type: ignore[attr-defined]
            return _document(position), None
        cut = position.rfind("#")
        while cut > 0:
            head, tail = _document(position[:cut]), position[cut + 1:].strip()
            if head in self._rank:  # type: ignore[attr-defined]
                return head, tail or None
            cut = position.rfind("#", 0, cut)
        return doc, scene

    def rank(self, position: str) -> tuple[int, int]:
        """Its place in the order: (the document's, the scene's); (len(positions), 0) for a document the
        order does not hold. Worked out once per position and order (the order is frozen)."""
        ranks: dict[str, tuple[int, int]] = self._ranks  # type: ignore[attr-defined]
        made = ranks.get(position)
        if made is None:
            made = self._rank_of(position)
            if len(ranks) >= RANKS_KEPT:
                ranks.clear()  # positions an app sent, not the story's: a bound, never the answer
            ranks[position] = made
        return made

    def _rank_of(self, position: str) -> tuple[int, int]:
        doc, scene = self.locate(position)
        at = self._rank.get(doc)  # type: ignore[attr-defined]
        if at is None:
            return len(self.positions), 0
        if scene is None:
            return at, 0
        number = self.scene_number(doc, scene)
        return at, (number if number is not None else END_OF_DOCUMENT)

    def document_rank(self, position: str) -> int:
        """The place of a position's document in the order (its scene ignored); len(positions) for a
        document the order does not hold."""
        return self.rank(position)[0]

    def knows(self, position: str) -> bool:
        return self.rank(position)[0] < len(self.positions)  # `rank` places an unknown document after all

    def reached(self, at: str, position: str) -> bool:
        """Whether something that happens `at` has happened by `position` (at ≤ position)."""
        made = self.rank(at)
        return made[0] < len(self.positions) and made <= self.rank(position)

    def holds(self, since: str | None, until: str | None, position: str | None) -> bool:
        """Whether a span [since, until) holds at `position`; without a position only a timeless span
        (neither end set) holds."""
        if since is None and until is None:
            return True
        if position is None or not self.knows(position):
            return False
        if since is not None and not self.reached(since, position):
            return False
        return until is None or self.rank(until) > self.rank(position)
