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


@dataclass(frozen=True)
class StoryOrder:
    """The reading order of the story's positions. A position it does not hold counts as after every
    known one (story.md): it can never leak into an earlier chapter."""

    positions: tuple[str, ...]
    explicit: bool  # from project.yaml `chapters:` (else natural order)

    @classmethod
    def of(cls, chapters: tuple[str, ...] | None, manuscript: Iterable[str], named: Iterable[str]) -> StoryOrder:
        if chapters is not None:
            return cls(expand(chapters, manuscript), True)
        return cls(tuple(sorted(set(manuscript) | set(named), key=natural_key)), False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rank", {p: i for i, p in enumerate(self.positions)})

    def rank(self, position: str) -> int:
        """Its place in the order; len(positions) for one the order does not hold."""
        return self._rank.get(position, len(self.positions))  # type: ignore[attr-defined, no-any-return]

    def knows(self, position: str) -> bool:
        return position in self._rank  # type: ignore[attr-defined]

    def reached(self, at: str, position: str) -> bool:
        """Whether something that happens `at` has happened by `position` (at ≤ position)."""
        return self.knows(at) and self.rank(at) <= self.rank(position)

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
