"""What a watcher batch tells its listener: the sources that changed, and the problems `membank doctor`
would now report that it did not before the batch (and those that went away).

A problem is the same problem while its file, severity and message stay the same: an edit above it that
moves it to another line neither reports it again nor calls it fixed. `diff` is pure; `problems` reads
what `index:diagnostics` answers (the index's diagnostics, the settings files' and the story's).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from ..kernel.limits import MAX_LISTED

if TYPE_CHECKING:
    from ..runtime.project import Project as Bank

Problem = dict[str, Any]  # {"source", "line", "severity", "message"}, as index:diagnostics lists them


@dataclass(frozen=True)
class Report:
    """One applied batch: `sources` changed; `diagnostics` are the problems it introduced, `fixed` those it
    cleared (each {source, line, severity, message}, sorted by source, line and message)."""

    sources: list[str]
    diagnostics: list[Problem] = field(default_factory=list)
    fixed: list[Problem] = field(default_factory=list)


def _key(problem: Problem) -> tuple[str, str, str]:
    return problem["source"], problem["severity"], problem["message"]


def _order(problem: Problem) -> tuple[str, int, str]:
    return problem["source"], problem["line"], problem["message"]


def _unmatched(these: list[Problem], others: list[Problem]) -> list[Problem]:
    """The problems of `these` (sorted) that no problem of `others` matches, each match used once."""
    left = Counter(_key(p) for p in others)
    out = []
    for p in sorted(these, key=_order):
        if left[_key(p)] > 0:
            left[_key(p)] -= 1
        else:
            out.append(p)
    return out


def diff(before: Iterable[Problem], after: Iterable[Problem]) -> tuple[list[Problem], list[Problem]]:
    """(introduced, fixed): the problems in `after` that `before` lacks, and those in `before` gone from
    `after`, compared by source, severity and message (the line may move), counting repeats."""
    before, after = list(before), list(after)
    return _unmatched(after, before), _unmatched(before, after)


def problems(bank: Bank) -> list[Problem]:
    """Every problem `membank doctor` reports for this bank right now. Read as the sidecar reads
    `index:diagnostics`: in a snapshot on this thread's own read-only connection, since the watcher's
    thread must not share the writer's connection with a write lane that is syncing meanwhile."""
    from ..domains.indexing.report import diagnostics
    from ..index.store import reading

    with reading():
        return list(diagnostics(bank)["items"])


def line(problem: Problem, fixed: bool = False) -> str:
    """`error .writenow/characters/x.md:3: message`, as doctor prints it (`fixed …` once it is gone)."""
    word = "fixed" if fixed else problem["severity"]
    return f"{word} {problem['source']}:{problem['line']}: {problem['message']}"


SHOWN = 20  # problem lines `membank watch` prints per batch, each of new and fixed (doctor lists them all)


def listed(report: Report, most: int = MAX_LISTED) -> dict[str, Any]:
    """The problems of `index:changed`: at most `most` of each list, with how many there are in all (a
    checkout that breaks 10,000 files must not send a 5 MB notification; `index:diagnostics` lists all)."""
    return {"diagnostics": report.diagnostics[:most], "fixed": report.fixed[:most],
            "diagnosticsTotal": len(report.diagnostics), "fixedTotal": len(report.fixed)}


def lines(report: Report, most: int = SHOWN) -> list[str]:
    """`membank watch`'s problem lines for a batch: the first `most` new and fixed ones, then how many more."""
    out: list[str] = []
    for problems_, fixed in ((report.diagnostics, False), (report.fixed, True)):
        out += [line(p, fixed) for p in problems_[:most]]
        if len(problems_) > most:
            out.append(f"… and {len(problems_) - most:,} more {'fixed' if fixed else 'new'}: membank doctor lists them all")
    return out
