"""The strong tier filled in the background (issue 35): after the static vectors, never on a caller's path.

A long-lived process (the sidecar, `membank watch`, the Python API) `start`s the filler of a project;
every sync after that `kick`s it (index:sync, the watcher's batches, each write through a channel).
The filler runs on a worker thread of its own (kernel/background.py) one batch at a time: it reads
what lacks a strong vector in a snapshot, embeds it with no lock held, and writes the batch in one
transaction under the write lock, where a row is stored only if its entry still holds the hash it was
read with. A crash loses at most the batch in flight; nothing half-written survives. `stop` (run by
`Project.close`) makes the next checkpoint the last: the batch being embedded is dropped after the
chunk of CHUNK texts inside the model, and `stop` waits for it: the encoder is never left running on a
closed project, nor inside onnxruntime while the interpreter exits (`stop` also runs at exit:
kernel/background.py `stop_at_exit`; a C++ abort otherwise).

The project gone from disk (`.writenow/` deleted under `serve` or `watch`): a batch stops quietly (one
info line) and the next kick after the folder is back (the watcher's sync) fills again.

The filler's thread runs at the lowest scheduling priority (`background.lowest_priority`): embedding takes
a whole core for minutes, and a request that wakes up (a sidecar read, a write) gets the processor at once.

A one-shot CLI command does not start it: the next long-lived process on the project fills the tier.
After each batch the project is told `index:strong` with the progress (the sidecar sends it as a
notification)."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from typing import Any, Iterator

from ...files.intake import embed_text
from ...index.store import reading
from ...index import strongload
from ...kernel import background
from ...kernel.background import Worker
from ...kernel.errors import MembankError
from ...kernel.text import script_language
from ..contract import Bank
from ...kernel.log import log

MEMO = "indexing.strong"
BATCH = 32  # entries embedded per batch: one memory's vector lands in one
CHUNK = 8  # texts per call of the model: a close waits at most for one chunk (~1 s of a core), not a batch
LOCK_WAIT = 0.5  # seconds the filler waits for the write lock before it lets the writer be and tries again
# the code points of an entry's text its script is read from: more than the model reads of it
# (index/contextual.py MAX_CHARS), never a 20 MB memory whole (~3 s)
SCRIPT_CHARS = 16_384
NOTIFY = "index:strong"  # the notification after each batch: {done, total, model, problem}
LOWEST = background.LOWEST  # the nice value of the filler's thread


class Filler:
    """One project's strong tier: its encoder handle and its background worker."""

    def __init__(self, bank: Bank) -> None:
        self.bank = bank
        self.handle = strongload.handle(bank.memo)
        self.worker = Worker(f"membank-strong-{bank.info.id}")
        self.stopping = threading.Event()  # set by `stop`: the batch in flight drops at its next chunk
        self.gone = False  # the project was gone from disk at the last batch (said once)
        self.companions: list[Any] = []  # other fills of the project's strong model (passages): stopped with this
        self._lock = threading.Lock()
        self._busy = threading.RLock()  # held while the worker uses the index: `stop` waits for it
        self._queued = False
        self._after = (0, 0)  # where the last batch ended (strong_pending); a kick from outside starts over
        self._restarts = 0  # kicks from outside so far: a batch read before one does not move `_after`
        self.enabled = False  # started by a long-lived process
        self.stopped = False
        self.failure: str | None = None  # the last batch's failure, for `index:status`

    def kick(self, going_on: bool = False) -> None:
        """Queue a batch unless one is queued already (a kick during a batch queues the next). A kick
        from outside (a sync) starts from the first entry again: what it changed may lie behind."""
        with self._lock:
            if not going_on:
                self._after, self._restarts = (0, 0), self._restarts + 1
            if not self.enabled or self.stopped or self._queued or self.handle.why() is not None:
                return  # (a model that cannot run here is not tried again: index:status says why)
            self._queued = self.worker.submit(self._batch)

    def stop(self) -> None:
        """No more batches; the one being embedded is dropped after the chunk inside the model, before it
        writes. Waits for the worker, however long that chunk takes: a worker left inside onnxruntime
        while the process goes on closing (or exits) aborts it."""
        with self._lock:
            self.stopped = True
            self.stopping.set()
            companions = list(self.companions)
        for other in companions:  # each stops and waits for its own worker (idempotent)
            other.stop()
        with self._busy:  # the worker is not inside the index now, and will not enter it again
            pass
        self.worker.close()

    # -- the worker's side -----------------------------------------------------------------------

    def _batch(self) -> None:
        with self._lock:
            self._queued = False
        if self.stopped or self._gone() or not strongload.switched_on(self.bank.settings_files.embedding()):
            return
        encoder = self.handle.get()
        if encoder is None:
            return
        # after the load, not before: the query session's threads the model starts inherit the priority
        background.lowest_priority()  # one system call a batch, which embeds for seconds
        with self._lock:
            after, restarts = self._after, self._restarts
        try:
            rows = self._read(encoder.name, encoder.dim, after)
            if rows is None:
                return
            if rows:
                texts = [embed_text(kind, json.loads(record)) for _, kind, record, _ in rows]
                vectors = _embedded(encoder, texts, self.stopping)
                if vectors is None:  # stopped meanwhile: the batch is dropped
                    return
                zh = [script_language(t[:SCRIPT_CHARS]) == "zh" for t in texts]  # before the lock, bounded
                if not self._write(lambda index: index.put_strong([(r[0], r[3]) for r in rows], vectors, zh),
                                   encoder.name, encoder.dim):
                    return
                with self._lock:
                    if self._restarts == restarts:  # no sync kicked meanwhile (that starts over)
                        self._after = (int(rows[-1][1] != "memory"), rows[-1][0])
            self.failure = None
        except Exception as e:  # a bug or a broken model: said in `index:status`, tried again at the next kick
            if self._gone():  # the folder went during the batch (the lock, a read): not a failure
                return
            if self.failure is None and isinstance(e, MembankError):  # a refusal with its reason (`.index` a
                log.warning("the strong tier's background embedding stopped: %s", e)  # file): no traceback
            elif self.failure is None:  # logged once, not at every save while it keeps failing
                log.exception("the strong tier's background embedding failed")
            self.failure = f"embedding stopped ({e.__class__.__name__}: {e})"
            self._announce(encoder.name)
            return
        if rows:
            self._announce(encoder.name)
            self.kick(going_on=True)

    def _gone(self) -> bool:
        """Whether the project is gone from disk: said once (info), nothing read, written or announced
        until a kick finds it back."""
        if self.bank.present():
            if self.gone:
                log.info("the project %s is back; its strong tier fills again", self.bank.info.id)
            self.gone = False
            return False
        if not self.gone:
            log.info("the project %s is gone from disk; its strong tier stops filling until it is back",
                     self.bank.info.id)
        self.gone = True
        return True

    def _read(self, model: str, dim: int, after: tuple[int, int]) -> list[tuple[int, str, str, str]] | None:
        """The next batch without a strong vector, as committed: the write lock is taken and let go first,
        so a writer's transaction that kicked the filler has committed before it reads (in a snapshot,
        without the lock: writers never wait for this read). None: stopped, a writer held the lock (the
        batch is tried again after it), or the index file deleted (`_locked`)."""
        with self._busy:
            with self._locked() as index:
                if index is None:
                    return None
            with reading():
                if index.strong_model() in (None, (model, dim)):
                    return index.strong_pending(BATCH, after)  # type: ignore[no-any-return]
                # another model's vectors: the batch is everything (`_write` drops the old rows first)
                return index.db.execute(
                    "SELECT rowid, kind, record, hash FROM entries WHERE kind != 'skill' AND removed_at IS NULL"
                    " AND (tokens > 0 OR kind != 'memory') ORDER BY kind != 'memory', rowid LIMIT ?", (BATCH,)).fetchall()

    def _write(self, put: Any, model: str, dim: int) -> bool:
        """One transaction under the write lock; False when stopped, the lock was busy or the index file
        deleted (nothing written)."""
        with self._locked() as index:
            if index is None:
                return False
            with index.transaction():
                index.start_strong(model, dim)  # another model's rows dropped first
                put(index)
            return True

    @contextlib.contextmanager
    def _locked(self) -> Iterator[Any]:
        """The index under the write lock, or None when stopped, when a writer held the lock longer than
        LOCK_WAIT (it is let be: the filler is kicked again and tries after it), or when the index file was
        deleted under the process with no other there (the call that makes it again kicks the filler). A
        lock that cannot be taken at all (the bank folder gone, `.index` a link) raises: kicking again would
        spin."""
        with self._busy:
            if self.stopped:
                yield None
                return
            try:
                self.bank.write_lock.acquire(wait=LOCK_WAIT)
            except MembankError as e:
                if "lockWait" not in e.details:  # not busy: the bank folder is gone, the lock cannot be made
                    raise  # said as the batch's failure; tried again at the next kick, never spun on
                self.kick(going_on=True)
                yield None
                return
            try:
                # `.index/` deleted under the process: nothing written into the unlinked file; the next call
                # (or the watcher) makes the index again from the files and kicks the filler (refresh.py).
                # Another process's file there (`index --rebuild`): the transaction follows it
                yield self.bank.index if self.bank.index.on_disk() or os.path.lexists(self.bank.index.path) else None
            finally:
                self.bank.write_lock.release()

    def _announce(self, model: str) -> None:
        with self._busy:
            if self.stopped:
                return
            try:
                with reading():
                    done, total = self.bank.index.strong_counts()
            except Exception:
                if self._gone():  # the folder went after the batch: a reader cannot open the index
                    return
                raise
        self.bank.notify(NOTIFY, {"done": done, "total": total, "model": model, "problem": self.failure})


def _embedded(encoder: Any, texts: list[str], stopping: threading.Event) -> Any:
    """The batch's vectors, CHUNK texts a call (None: `stopping` was set between two). A chunk the model
    fails on is embedded one text at a time: a text it cannot take gets a zero row (stored: it never
    competes, and the fill goes past it instead of failing on its batch at every kick); when every text
    of a chunk fails, the batch's failure stands (a model gone wrong)."""
    import numpy as np

    parts = []
    for at in range(0, len(texts), CHUNK):
        if stopping.is_set():
            return None
        parts.append(_chunk(encoder, texts[at:at + CHUNK]))
    return np.vstack(parts) if parts else np.zeros((0, encoder.dim), np.float32)


def _chunk(encoder: Any, texts: list[str]) -> Any:
    try:
        return encoder.passages(texts)
    except Exception:
        if len(texts) == 1:
            raise
        import numpy as np

        out = np.zeros((len(texts), encoder.dim), np.float32)
        failed = 0
        for i, text in enumerate(texts):
            try:
                out[i] = encoder.passages([text])[0]
            except Exception:
                failed += 1
        if failed == len(texts):
            raise
        log.warning("the strong model could not embed %d of %d texts; they are stored without a direction",
                    failed, len(texts))
        return out


def filler(bank: Bank) -> Filler:
    found = bank.memo.get(MEMO)
    if found is None:
        found = bank.memo[MEMO] = Filler(bank)
        background.stop_at_exit(found)
    return found  # type: ignore[no-any-return]


def start(bank: Bank) -> None:
    """A long-lived process fills this project's strong tier from now on (and starts on what is missing)."""
    f = filler(bank)
    f.enabled = True
    f.kick()


def kick(bank: Bank) -> None:
    """After a sync committed: embed what it left without a strong vector (nothing unless `start`ed)."""
    found = bank.memo.get(MEMO)
    if found is not None:
        found.kick()


def stop(bank: Bank) -> None:
    """The project closes: the filler stops at its next checkpoint (Project.close)."""
    found = bank.memo.get(MEMO)
    if found is not None:
        found.stop()
