"""What `membank doctor` says about the story (story.md): a relation or `[[link]]` naming no card (or
several), a relation whose `until` is not after its `since`, and, with a `chapters:` list in project.yaml, a position a card or memory names that the
list does not hold (it counts as after every chapter, so it never leaks into an earlier one)."""

from __future__ import annotations

import re
from typing import Any

from ...files.reader import read_regular
from ...files.records import WARNING, Diagnostic
from ..contract import Bank
from . import positions, refs


def _memory_line(bank: Bank, source: str, key: str) -> int:
    """The line of `key:` in a memory's file (memory records do not keep their keys' lines)."""
    for root in (bank.project, bank.global_):
        rel = root.rel(source)
        if rel is None:
            continue
        try:
            text = read_regular(root.file(rel), 1 << 20)[0].decode("utf-8", "replace")
        except OSError:
            return 1
        for i, line in enumerate(text.splitlines(), start=1):
            if re.match(rf"\s*{key}\s*:", line):
                return i
    return 1


def _placed(order: Any, position: str) -> str:
    if order.knows(position):  # its document is known, its scene is not
        return (f"`{position}` names no scene of its chapter (a heading's text, or #2 for the second scene); it "
                "counts as the end of the chapter")
    return _outside(position)


def _outside(position: str) -> str:
    return (f"`{position}` is not in project.yaml `chapters:`; it counts as after every chapter (add it to the "
            "list to place it)")


def diagnostics(bank: Bank) -> list[Diagnostic]:
    """Read from what the cards' indexing kept (refs.py), never from the card catalog; kept until the
    index or the story order changes (`index:status` asks every time). Without `chapters:` the order
    is not needed at all: only an explicit list makes a position a problem."""
    with bank.index.lock:
        order = positions.story_order(bank) if positions.chapters(bank) is not None else None
        key = bank.index.view_key()
    memo = bank.index.caches.setdefault("story.problems", {})  # per connection's view
    kept = memo.get(key) if key is not None else None
    if kept is not None and kept[0] is order:
        return list(kept[1])
    found = _diagnostics(bank, order)
    if key is not None:
        if len(memo) >= 16:
            memo.clear()
        memo[key] = (order, found)
    return list(found)


def _ends_first(order: Any, spans: tuple[tuple[str, int, str, str, str, str], ...]) -> list[Diagnostic]:
    """A relation whose `until` is not after its `since` holds at no position of the story."""
    out = []
    for source, line, other, type_, since, until in spans:
        if order.knows(since) and order.knows(until) and order.rank(until) <= order.rank(since):
            out.append(Diagnostic(source, line, WARNING, f"the relation ({type_}) with `{other}` ends (until `{until}`) "
                                  f"{'where' if until == since else 'before'} it begins (since `{since}`), so it holds "
                                  "nowhere in the story; fix one of them"))
    return out


def _diagnostics(bank: Bank, order: Any) -> list[Diagnostic]:
    with bank.index.lock:
        written = refs.written(bank.index, positions=order is not None)
        if written.spans and order is None:  # a relation with both ends is rare: the order only then
            order_of_spans = positions.story_order(bank)
        else:
            order_of_spans = order
        memories = bank.index.db.execute(
            "SELECT e.source, p.role, p.position FROM story_positions AS p JOIN entries AS e ON e.rowid = p.entry"
            " WHERE e.kind = 'memory' AND e.removed_at IS NULL AND p.role IN ('since', 'until')").fetchall() \
            if order is not None else []
    out = [Diagnostic(source, line, WARNING, message) for source, line, message in refs.unresolved(written)]
    if written.spans:
        out += _ends_first(order_of_spans, written.spans)
    if order is not None:
        out += [Diagnostic(source, line, WARNING, _placed(order, position)) for source, line, position in written.positions
                if not order.knows(position) or order.unknown_scene(position)]
        for source, role, position in memories:
            if not order.knows(position) or order.unknown_scene(position):
                out.append(Diagnostic(source, _memory_line(bank, source, role), WARNING, _placed(order, position)))
    return sorted(set(out), key=lambda d: (d.source, d.line, d.message))
