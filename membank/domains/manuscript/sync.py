"""Keeping the manuscript's passages level with the documents of the story order (docs/manuscript.md).

Stat decides what to read (size and mtime, as the bank's own files); a read document whose bytes hash
the same is no change; a changed one is cut again and only its passages whose text changed are written
(and embedded): a passage whose text is unchanged keeps its row and its vector, its lines and offsets
updated, even when lines above it moved. A document that cannot be read (too large, not UTF-8, a link
out of the project, a FIFO, gone mid-sync) is a diagnostic, never a stop. Nothing here writes a
manuscript file."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Callable

from ...files.conflicts import LEFT_OUT, MERGE_CONFLICT, conflict_line
from ...files.records import ERROR, WARNING
from ...index import Index
from ...kernel import cancel
from ...kernel.errors import MembankError
from ...kernel.text import fts_text
from ..contract import Bank
from ..story.manuscript import read_document_bytes
from ..story.positions import put_scenes, story_order, walk_manuscript
from . import store, strong, summaries
from .passages import Passage, cut

MAX_CHAPTER_BYTES = 8 * 1024 * 1024  # a chapter larger than this is a diagnostic (about 2.7 million CJK characters)
EMBED_BATCH = 256
ORIGIN = "manuscript"  # the diagnostics' origin


@dataclass
class Report:
    changed: list[str] = field(default_factory=list)  # documents whose passages changed (or that went)
    added: int = 0  # passages written
    kept: int = 0  # passages whose text (and vector) stayed
    removed: int = 0
    problems: dict[str, str] = field(default_factory=dict)  # document -> why it is not indexed


def documents(bank: Bank) -> list[str]:
    """The manuscript's documents in story order: the order's positions that are manuscript files."""
    order = story_order(bank)
    walk = bank.memo.get("story.order", {}).get("walk") if not order.explicit else None
    files = None if order.explicit else set((walk or walk_manuscript(bank.root)).files)
    out = []
    for position in order.positions:
        if files is not None and position not in files:
            continue  # a position a card names, not a document
        out.append(position)
    return out


def sync(bank: Bank) -> Report:
    """Bring the passages level with the documents, in the caller's transaction or one of its own: stat
    decides which to read, so a sync where nothing moved reads no chapter."""
    report = Report()
    index = bank.index
    with index.lock:  # the story order reads the writer's connection, which a watcher's sync may be using
        wanted = documents(bank)
    with index.transaction():
        known = {doc: (size, mtime, digest, problem) for doc, size, mtime, digest, problem in index.db.execute(
            "SELECT document, size, mtime_ns, hash, problem FROM manuscript_documents")}
        for doc in wanted:
            cancel.check()
            _document(bank, doc, known.get(doc), report)
        keep = set(wanted)
        for doc in known:
            if doc not in keep:
                _forget(index, doc, report)
        if report.changed:
            store.moved(index)
        summaries.check(bank, bool(report.changed))
        embed_pending(index, bank.embedder)
    if report.changed:
        strong.kick(bank)  # the changed passages' strong windows, in the background
    return report


def _document(bank: Bank, doc: str, known: tuple[int, int, str, str | None] | None, report: Report) -> None:
    index = bank.index
    try:
        st = os.stat(bank.root / doc)
        stamp = (st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None
    if stamp is not None and known is not None and (known[0], known[1]) == stamp:
        return  # unchanged since it was read (or refused: a 20 MB chapter is not read again until it moves)
    if any(part.startswith(".") and part != ".." for part in doc.replace("\\", "/").split("/")):
        # `chapters:` naming .writenow/… or .git/…: the bank's own files (memories dated to a later chapter)
        # would be searchable as manuscript, outside their story time
        _problem(index, doc, stamp, "a file in a hidden folder (.writenow, .git) is not manuscript", known, report)
        return
    try:
        data = read_document_bytes(bank.root, doc, MAX_CHAPTER_BYTES)
        text = None if data is None else _decode(data)
    except MembankError as e:
        _problem(index, doc, stamp, e.message, known, report)
        return
    except ValueError as e:
        _problem(index, doc, stamp, str(e), known, report)
        return
    if data is None or text is None:  # gone (deleted mid-sync, or never there): no passages
        if known is not None:
            _forget(index, doc, report)
        return
    if (marker := conflict_line(text)) is not None:  # a merge left both versions in it (files.md, Git)
        _problem(index, doc, stamp, f"git conflict markers at line {marker}", known, report, marker)
        return
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    size, mtime = stamp if stamp is not None else (len(data), 0)
    index.db.execute("INSERT OR REPLACE INTO manuscript_documents(document, size, mtime_ns, hash, problem)"
                     " VALUES (?, ?, ?, ?, NULL)", (doc, size, mtime, digest))
    if known is not None and known[2] == digest and known[3] is None:
        return  # the same bytes (touched): its passages, and the warnings on them, stay
    index.db.execute("DELETE FROM diagnostics WHERE origin = ? AND source = ?", (ORIGIN, doc))
    passages = cut(doc, text, markdown=doc.lower().endswith(".md"))
    _write(index, doc, passages, report)
    labels = {p.scene_no: p.scene for p in passages}
    put_scenes(index, doc, [labels.get(n, f"#{n}") for n in range(1, max(labels, default=0) + 1)])
    _repeated_headings(index, doc, passages)
    report.changed.append(doc)


def _repeated_headings(index: Index, doc: str, passages: list[Passage]) -> None:
    """A warning on each scene whose heading an earlier scene of the document bears: `doc#name` names the
    first."""
    opening: dict[int, Passage] = {}
    for p in passages:
        opening.setdefault(p.scene_no, p)
    named: set[str] = set()
    rows = []
    for number, p in sorted(opening.items()):
        if p.scene.startswith("#"):
            continue
        if p.scene in named:
            rows.append((doc, ORIGIN, p.line, WARNING, f"a second scene headed `{p.scene}`: `{doc}#{p.scene}` "
                         f"names the first; name this one `{doc}#{number}` or give it another heading"))
        named.add(p.scene)
    index.db.executemany("INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, ?, ?, ?, ?)",
                         rows)


def _decode(data: bytes) -> str:
    if b"\x00" in data[:65536]:
        raise ValueError("the document is not text (it holds NUL bytes)")
    try:
        return data.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError as e:
        raise ValueError(f"the document is not UTF-8 (byte {e.start})") from None


def _problem(index: Index, doc: str, stamp: tuple[int, int] | None, why: str,
             known: tuple[int, int, str, str | None] | None, report: Report, marker: int | None = None) -> None:
    """A document that cannot be indexed: its passages leave the index, and it gets a diagnostic (with a
    `marker` line: an error `MERGE_CONFLICT` there, as every other file a merge left markers in)."""
    report.problems[doc] = why
    size, mtime = stamp if stamp is not None else (-1, -1)
    if known is not None and known[3] == why and (known[0], known[1]) == (size, mtime):
        return
    if known is not None:
        _drop_passages(index, doc, report)
    index.db.execute("INSERT OR REPLACE INTO manuscript_documents(document, size, mtime_ns, hash, problem)"
                     " VALUES (?, ?, ?, '', ?)", (doc, size, mtime, why))
    index.db.execute("DELETE FROM diagnostics WHERE origin = ? AND source = ?", (ORIGIN, doc))
    if marker is None:
        index.db.execute("INSERT INTO diagnostics(source, origin, line, severity, message) VALUES (?, ?, 1, ?, ?)",
                         (doc, ORIGIN, WARNING, f"{why}; the chapter is not in the manuscript's index"))
    else:
        index.db.execute("INSERT INTO diagnostics(source, origin, line, severity, message, code) VALUES "
                         "(?, ?, ?, ?, ?, ?)", (doc, ORIGIN, marker, ERROR, f"{LEFT_OUT}: its passages are not "
                                                "searched, recalled or counted as appearances", MERGE_CONFLICT))
    report.changed.append(doc)


def _forget(index: Index, doc: str, report: Report) -> None:
    _drop_passages(index, doc, report)
    index.db.execute("DELETE FROM manuscript_documents WHERE document = ?", (doc,))
    index.db.execute("DELETE FROM diagnostics WHERE origin = ? AND source = ?", (ORIGIN, doc))
    report.changed.append(doc)


def _drop_passages(index: Index, doc: str, report: Report) -> None:
    put_scenes(index, doc, [])
    ids = [i for (i,) in index.db.execute("SELECT id FROM manuscript_passages WHERE document = ?", (doc,))]
    index.db.executemany("DELETE FROM manuscript_fts WHERE rowid = ?", [(i,) for i in ids])
    index.db.execute("DELETE FROM manuscript_passages WHERE document = ?", (doc,))
    report.removed += len(ids)


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


def _write(index: Index, doc: str, cut_: list[Passage], report: Report) -> None:
    """The document's passages as `cut_`: a row whose text is unchanged is moved into place (its vector
    kept), the rest deleted and inserted."""
    db = index.db
    old: dict[str, list[int]] = {}
    for pid, digest in db.execute("SELECT id, hash FROM manuscript_passages WHERE document = ? ORDER BY ordinal",
                                  (doc,)):
        old.setdefault(digest, []).append(pid)
    moves, inserts = [], []
    for p in cut_:
        digest = text_hash(p.text)
        same = old.get(digest)
        if same:
            moves.append((p.ordinal, p.scene, p.scene_no, p.line, p.end_line, p.start, p.end, same.pop(0)))
        else:
            inserts.append((p, digest))
    gone = [pid for ids in old.values() for pid in ids]
    db.executemany("DELETE FROM manuscript_fts WHERE rowid = ?", [(i,) for i in gone])
    db.executemany("DELETE FROM manuscript_passages WHERE id = ?", [(i,) for i in gone])
    db.executemany("UPDATE manuscript_passages SET ordinal = ?, scene = ?, scene_no = ?, line = ?, end_line = ?,"
                   " start = ?, stop = ? WHERE id = ?", moves)
    for p, digest in inserts:
        db.execute("INSERT INTO manuscript_passages(document, ordinal, scene, scene_no, line, end_line, start, stop,"
                   " text, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (doc, p.ordinal, p.scene, p.scene_no, p.line, p.end_line, p.start, p.end, p.text, digest))
        db.execute("INSERT INTO manuscript_fts(rowid, body) VALUES (?, ?)", (db.last_insert_rowid(), fts_text(p.text)))
    report.added += len(inserts)
    report.kept += len(moves)
    report.removed += len(gone)


def embed_pending(index: Index, embedder: Callable[[], object]) -> int:
    """Give every passage without a vector one (in the caller's transaction); with another model than the
    one the vectors were made with, every passage is embedded again. The number embedded."""
    if not index.db.execute("SELECT 1 FROM manuscript_passages WHERE vec IS NULL LIMIT 1").fetchall():
        return 0
    import numpy as np  # here, not above: every CLI command syncs, and numpy costs ~0.1 s to import

    model = embedder()
    if model is None:
        return 0
    name = getattr(model, "name")
    if index.get_meta(store.MODEL) != name:
        index.db.execute("UPDATE manuscript_passages SET vec = NULL WHERE vec IS NOT NULL")
        index.set_meta(store.MODEL, name)
    done = 0
    while rows := index.db.execute("SELECT id, text FROM manuscript_passages WHERE vec IS NULL LIMIT ?",
                                   (EMBED_BATCH,)).fetchall():
        cancel.check()
        vectors = np.asarray(getattr(model, "encode")([text for _, text in rows]), dtype=np.float32)
        index.db.executemany("UPDATE manuscript_passages SET vec = ? WHERE id = ?",
                             [(v.tobytes(), pid) for (pid, _), v in zip(rows, vectors)])
        done += len(rows)
    if done:
        store.moved(index)
    return done
