"""Embedding beside a large sync's writes: the model loads in a thread while the first files are read,
and each batch of entries written is embedded there while the next batch is written (the tokenizer
runs outside the GIL). The vectors are written by the sync's own thread, in its transaction, as they
come back, with the writer's page cache raised for the sync (index/vecstore.py `page_cache`):
in the default 2 MB, vec0's 1 MB chunk blobs fall out between entry and FTS inserts and each batch
of vectors costs ~5x as much as at the end. Whatever this leaves (an entry updated in place below
the cursor, a model that did not load, another model's index) is left to `embed_pending` after it,
as a small sync does it all."""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from ...files.intake import Prepared
from ...index import Index, sidevectors
from ...index.embed import Embedder, mismatch
from ...index.sidevectors import Batch
from ...index.vecstore import ROOMY_CACHE_KIB

Result = tuple[Batch, Any]  # the vectors, or None when the batch could not be embedded


class EmbedAhead:
    """One sync's embedding thread: `hand_over` after each batch of writes, `finish` at the end of them,
    `close` always (the vectors are in the sync's transaction: a sync that fails or is canceled rolls
    them back with everything else)."""

    def __init__(self, index: Index, source: Callable[[], Embedder | None], batch: int) -> None:
        self._index, self._source, self._batch = index, source, batch
        # each file written: its entry's kind and what it is embedded as (files/intake.py `prepare`), by
        # citation: the sync fills it as it writes, so nothing is read back and decoded from the index
        self.texts: dict[str, tuple[str, Prepared]] = {}
        self._jobs: queue.Queue[Batch | None] = queue.Queue()
        self._results: queue.Queue[Result] = queue.Queue()
        self._model: Embedder | None = None
        self._cursor = 0  # entries up to this rowid are handed over
        self._out = 0  # jobs handed over whose vectors have not come back
        self._accepted: bool | None = None  # whether this index takes the model's vectors, once asked
        self._fresh = False  # whether the vector table was made by this sync (asked with `_accepted`)
        self._cache_before: int | None = index.page_cache(-ROOMY_CACHE_KIB)  # put back by `close`
        self._thread = threading.Thread(target=self._run, name="membank-embed", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._model = self._source()
        except Exception:  # the model is optional: embed_pending reports nothing either when it cannot load
            self._model = None
        while (job := self._jobs.get()) is not None:
            try:  # the entries' texts and the domains' beside them (index/sidevectors.py)
                vectors = self._model.encode(list(job.texts)) if self._model is not None else None
            except Exception:
                vectors = None  # left pending: embed_pending tries again after the sync's writes
            self._results.put((job, vectors))

    def hand_over(self) -> None:
        """Give the embedding every written entry after the cursor, in batches; keep what came back. An
        entry without a text here (none is known) stays pending for `embed_pending`."""
        while rows := self._index.unembedded(self._batch, self._cursor):
            self._cursor = rows[-1][0]
            known = [(rowid, *self.texts.pop(source)) for rowid, source in rows if source in self.texts]
            if known:
                self._jobs.put(sidevectors.batch((rowid, kind, prepared.record_json, prepared.embed)
                                                 for rowid, kind, prepared in known))
                self._out += 1
            if len(rows) < self._batch:  # the last of them: asking again would find none (a query per hand-over)
                break
        self._collect(wait=False)

    def finish(self) -> None:
        """The last entries handed over, every vector waited for and written; the thread stopped."""
        self.hand_over()
        self._collect(wait=True)
        self.close()

    def close(self) -> None:
        """Stop the thread (what it has not embedded yet stays pending for embed_pending): the jobs not
        started are dropped, so a failed or canceled sync does not keep a core busy after it. The page
        cache goes back to its size. Safe to call twice."""
        try:
            while True:
                self._jobs.get_nowait()
        except queue.Empty:
            pass
        self._jobs.put(None)
        if self._cache_before is not None:
            self._index.page_cache(self._cache_before)
            self._cache_before = None

    def _collect(self, wait: bool) -> None:
        while self._out:
            try:
                job, vectors = self._results.get(block=wait)
            except queue.Empty:
                return
            self._out -= 1
            if vectors is None or self._model is None:
                continue
            if self._accepted is None:
                # a vector table made here (none before) is empty, and each rowid is handed over once:
                # no vector to replace
                self._fresh = not self._index.has_vectors()
                self._accepted = vectors_accept(self._index, self._model)
            if self._accepted:
                sidevectors.store(self._index, job, vectors, new=self._fresh)


def vectors_accept(index: Index, model: Embedder) -> bool:
    """Whether `model`'s vectors may go into this index (the one place a sync decides it): a new index
    starts its vector table for the model; an index of another model's vectors takes none (`membank
    index --rebuild` moves it over)."""
    recorded = index.vector_model()
    if recorded is None or not index.has_vectors():
        index.start_vectors(model.name, model.dim)
        return True
    return mismatch(recorded, model) is None
