"""Bringing the index level with the files: a pure change plan, then reading only what changed."""

from __future__ import annotations

import gc
import json
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ...files.intake import Outcome, Taken, embed_text, read, take
from ...files.reader import content_hash
from ...files.records import ERROR, Diagnostic
from ...files.scan import JOURNAL, SKIPPED, BankRoot, FileStat, examine, readable_name, scan, shown
from ...index import sidevectors
from ...index.embed import Embedder
from ...kernel import cancel
from ...kernel.clock import now_iso
from ...index import Index
from ...index.entries import FileState, entry_kind
from ..episodes import store as episode_store
from . import intakes, journals
from .embedahead import EmbedAhead, vectors_accept

Progress = Callable[[int, int], None]
EmbedderSource = Callable[[], Embedder | None]  # loads the model only when something needs embedding
EMBED_BATCH = 512
BY_NAME_UP_TO = 2_000  # files a sync reads whose rows are looked up by name; more: the bank's whole table
HAND_OVER = 128  # files written between hand-overs to the embedding beside a large sync: what is left to
# embed when the last file is written is at most this many (512 left ~40 ms at the end with one core busy)


@dataclass(frozen=True)
class Plan:
    to_read: tuple[FileStat, ...]  # new, or size/mtime differ: read and compare hashes
    removed: tuple[str, ...]
    unchanged: int


@dataclass
class Report:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    errors: int = 0
    took_ms: float = 0.0
    changed: list[str] = field(default_factory=list)  # sources whose entries changed

    def to_api(self) -> dict[str, object]:
        return {"added": self.added, "updated": self.updated, "removed": self.removed,
                "unchanged": self.unchanged, "errors": self.errors, "tookMs": round(self.took_ms, 2)}


def plan(disk: Iterable[FileStat], known: dict[str, tuple[int, int]]) -> Plan:
    """Which files to read: stat alone decides; a matching size and mtime (`known`: each indexed
    file's, `Index.file_stamps`) is trusted."""
    disk = list(disk)
    to_read = tuple(f for f in disk if known.get(f.source) != (f.size, f.mtime_ns))
    removed = tuple(sorted(known.keys() - {f.source for f in disk}))
    return Plan(to_read, removed, len(disk) - len(to_read))


def sync(index: Index, roots: list[BankRoot], progress: Progress | None = None,
         embedder: EmbedderSource | None = None, temps: dict[str, list[str]] | None = None) -> Report:
    """One transaction: every bank scanned, changed files parsed and written, clashes settled. With
    `temps`, the scan notes each bank's temporary files under its sections (files/scan.py)."""
    started = time.perf_counter()
    report = Report()
    # a cold index reads every file and has each one's size and mtime from the read: no stat per file
    # (read outside the transaction: if another process fills the index meanwhile, the plan below
    # reads every file, and each whose hash it already holds is counted unchanged)
    with index.lock:
        sizes = not index.is_empty()
    scans = [(root, *scan(root, sizes, None if temps is None else temps.setdefault(root.bank, []))) for root in roots]
    with index.transaction():
        touched: set[tuple[str, str, str]] = set()
        cold = index.is_empty()
        plans = [(root, plan(found, index.file_stamps(root.bank))) for root, found, _ in scans]
        known = {root.bank: _states(index, root.bank, p.to_read) for root, p in plans}
        reads = [(root, stat) for root, p in plans for stat in p.to_read]
        report.unchanged += sum(p.unchanged for _, p in plans)
        done = 0

        def step() -> None:
            nonlocal done
            cancel.check()  # canceled or past its deadline: the transaction rolls back, nothing half-written
            done += 1
            if progress is not None:
                progress(done, len(reads))
        for root, stat in reads:  # the journal first: membank's own, read whole, never parsed here
            if stat.section == JOURNAL:
                step()
                _apply_journal(index, root, stat, known[root.bank].get(stat.source), report)
        files = [(root, stat, k.hash if (k := known[root.bank].get(stat.source)) else None)
                 for root, stat in reads if stat.section != JOURNAL]
        touched |= _take_in(index, files, known, cold, report, step, embedder)
        at = now_iso()
        for root, p in plans:
            for source in p.removed:
                touched |= index.remove(source, at)
                report.removed += 1
                report.changed.append(source)
        # after the removals, which clear every diagnostic of a source: a file replaced by a link out
        # (or a FIFO) is removed and refused in the same sync
        index.set_link_diagnostics([d for _, _, problems in scans for d in problems])
        index.settle_clashes(touched)
        embed_pending(index, embedder)
        report.errors = index.error_count()
        index.set_meta("last_sync", now_iso())
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def _states(index: Index, bank: str, to_read: tuple[FileStat, ...]) -> dict[str, FileState]:
    """What the index holds of the files a sync reads (a no-op sync: nothing to load)."""
    if len(to_read) > BY_NAME_UP_TO:
        return index.file_states(bank)
    return index.file_states(bank, [f.source for f in to_read]) if to_read else {}


def _take_in(index: Index, files: list[intakes.Item], known: dict[str, dict[str, FileState]], cold: bool,
             report: Report, step: Callable[[], None], embedder: EmbedderSource | None) -> set[tuple[str, str, str]]:
    """The Markdown files a sync reads, taken in and written in their order; for a large sync the taking
    in is shared with a second process and the embedding runs beside the writes (intakes.py,
    embedahead.py); the index comes out the same either way."""
    touched: set[tuple[str, str, str]] = set()
    large = len(files) >= intakes.PARALLEL_FROM
    ahead = EmbedAhead(index, embedder, EMBED_BATCH) if large and embedder is not None and index.vec_error is None else None
    # the chunks coming back from the worker are tens of thousands of objects that live a moment: the
    # cycle collector would scan them again and again (~5% of this process's CPU in a cold 10,000-file
    # sync) and they make no cycles; it is back on when the sync's writes are done
    collecting = large and gc.isenabled()
    if collecting:
        gc.disable()
    try:
        for n, ((root, stat, _), outcome) in enumerate(intakes.taken(files), 1):
            step()
            touched |= _apply(index, root, stat, known[root.bank].get(stat.source), outcome, report, cold)
            if ahead is not None:
                if isinstance(outcome, Taken) and outcome.prepared is not None and outcome.prepared.embed \
                        and outcome.parsed is not None:
                    ahead.texts[stat.source] = (entry_kind(outcome.parsed.record), outcome.prepared)
                if n % HAND_OVER == 0:
                    ahead.hand_over()
        if ahead is not None:
            ahead.finish()
    finally:
        if ahead is not None:
            ahead.close()
        if collecting:
            gc.enable()
    return touched


def _counted(known: FileState | None, source: str, report: Report) -> None:
    if known is None:
        report.added += 1
    else:
        report.updated += 1
    report.changed.append(source)


def _apply_journal(index: Index, root: BankRoot, stat: FileStat, known: FileState | None, report: Report) -> None:
    got = read(root, stat, cap=None)
    if got is None:  # vanished since the scan; the next sync sees it gone
        return
    if isinstance(got, str):
        _unreadable(index, root, stat, known, got, report)
        return
    data, size, mtime_ns = got
    digest = journals.fingerprint(data, len(data))
    index.put_file(stat.source, root.bank, size, mtime_ns, digest)
    # a journal's state hashes only its end: the same size and end with another mtime may be an edit
    # further back (read whole below)
    if known is not None and known.hash == digest and (known.size, known.mtime_ns) == (size, mtime_ns):
        report.unchanged += 1
        return
    _counted(known, stat.source, report)
    journals.put(index, stat.source, data, known.hash if known is not None else None)


def _apply(index: Index, root: BankRoot, stat: FileStat, known: FileState | None, got: Outcome,
           report: Report, cold: bool = False) -> set[tuple[str, str, str]]:
    if got is None:  # vanished since the scan; the next sync sees it gone
        return set()
    if isinstance(got, str):
        return _unreadable(index, root, stat, known, got, report)
    index.put_file(stat.source, root.bank, got.size, got.mtime_ns, got.digest)
    if got.parsed is None:  # the bytes the index holds already (take() saw the known hash)
        report.unchanged += 1
        return set()
    _counted(known, stat.source, report)
    parsed = got.parsed
    return index.put(root.bank, parsed.record, stat.source, got.digest, parsed.diagnostics, parsed.id_line, new=cold,
                     prepared=got.prepared)


def _unreadable(index: Index, root: BankRoot, stat: FileStat, known: FileState | None, why: str,
                report: Report) -> set[tuple[str, str, str]]:
    """A file that is there but cannot be read (swapped for a FIFO since the scan, no permission): what
    it held leaves the index and it gets a diagnostic. Its size is stored as -1, so every sync tries
    again (a permission fixed by chmod changes no size or mtime); the same problem again is no change."""
    marker = "!" + content_hash(why.encode("utf-8"))
    index.put_file(stat.source, root.bank, -1, -1, marker)
    if known is not None and known.hash == marker:
        report.unchanged += 1
        return set()
    report.changed.append(stat.source)
    if known is None:
        report.added += 1
    else:
        report.updated += 1
    problem = Diagnostic(stat.source, 1, ERROR, f"{why}; {SKIPPED}")
    if stat.section == JOURNAL:
        journals.unreadable(index, stat.source, problem)
        return set()
    return index.put(root.bank, None, stat.source, marker, (problem,))


def sync_paths(index: Index, root: BankRoot, rels: Iterable[str], embedder: EmbedderSource | None = None) -> Report:
    """Re-read the named files of one bank now (after a write, or for the watcher); gone files are removed."""
    started = time.perf_counter()
    report = Report()
    rels = sorted(set(journals.with_traces(root, rels)))
    with index.transaction():
        known = index.file_states(root.bank, [root.source(rel) for rel in rels if readable_name(rel)])
        touched: set[tuple[str, str, str]] = set()
        for rel in rels:
            found = examine(root, rel)
            source = root.source(rel) if readable_name(rel) else None  # never in the index otherwise
            if isinstance(found, FileStat):
                index.set_link_diagnostics([], [found.source])
                was = known.get(found.source)
                if found.section == JOURNAL:
                    _apply_journal(index, root, found, was, report)
                else:
                    touched |= _apply(index, root, found, was, take(root, found, was.hash if was else None), report)
                continue
            # gone, a folder, or refused: what it held leaves the index, and a refusal is reported
            if source is not None and source in known:
                touched |= index.remove(source, now_iso())
                report.removed += 1
                report.changed.append(source)
            index.set_link_diagnostics([found] if found is not None else [], [root.source(shown(rel))])
        index.settle_clashes(touched)
        embed_pending(index, embedder)
        report.errors = index.error_count()
    report.took_ms = (time.perf_counter() - started) * 1000
    return report


def embed_pending(index: Index, embedder: EmbedderSource | None) -> None:
    """Give every live memory and card without a vector one, in batches, in the caller's transaction.

    Nothing happens without sqlite-vec or a model, or when the index holds another model's
    vectors: `membank index --rebuild` re-embeds everything then. Episodes' vectors (kept apart, for
    `memory:episode:query`) need only the model."""
    if embedder is None:
        return
    memories = index.vec_error is None and bool(index.pending_vectors(1))
    episodes = episode_store.unembedded(index)
    if not (memories or episodes):
        return
    model = embedder()
    if model is None:
        return
    if episodes:
        episode_store.embed_pending(index, model)
    if not memories:
        return
    if not vectors_accept(index, model):
        return
    while rows := index.pending_vectors(EMBED_BATCH):
        cancel.check()  # in the caller's transaction: stopping here rolls the whole sync back
        found = sidevectors.batch((rowid, kind, record, embed_text(kind, json.loads(record)))
                                  for rowid, kind, record in rows)
        sidevectors.store(index, found, model.encode(list(found.texts)))


