"""The passages' strong vectors (docs/manuscript.md, "Passages and scenes"): the strong tier's model (index/strong.py)
embeds each passage in windows of a few sentences, in the background, and `manuscript:search` ranks
with them once every passage has its windows (`context_rules.recall` too, when the prompt's query vector
is already made: `made_query`); until then, and wherever the tier is off, the static vectors rank.

A reader's question names a sentence or two of a passage, in other words than the novel's; one vector
for a whole passage of 400–1,000 code points blurs that sentence into the rest, so a passage scores as
its best window (`windows`). The windows' cosines are put on one scale per query (the best allowed
passage 1, the worst 0) before the fusion with the words: raw cosines of this model crowd into a narrow
band, where an equal blend lets the word side decide alone.

Filling: a long-lived process (the memories' strong filler is started: `indexing.strong` in the
project's memo) fills the passages on a worker thread of its own, kicked by a manuscript sync and by a
search that finds them incomplete. A batch reads in a snapshot, embeds with no lock held and writes
under the write lock only the windows of passages that still hold the text they were read with.
`fill` embeds everything now (the benchmark).

The filler's thread runs at the lowest priority (as the memories' filler does), and only once the
memories' filler has nothing left to do: memories matter to every prompt, passages to a search, and two
fills at once would share the cores the writer's requests need. A close (and the interpreter's exit:
kernel/background.py `stop_at_exit`) stops it after the chunk of windows inside the model and waits for
it, even when the project is gone from disk; a project gone stops a batch quietly."""

from __future__ import annotations

import threading
from typing import Any

from ...index import Index, strongload
from ...index.store import reading
from ...kernel import background
from ...kernel.background import Worker
from ...kernel.errors import MembankError
from ..contract import Bank
from ...index.strongquery import embed_query
from .passages import SENTENCE_END
from .store import GENERATION
from ...kernel.log import log

_MAKING = threading.Lock()  # one filler per project, whichever threads kick at once
MODEL = "manuscript.strong_model"  # meta: the model the windows were made with
TAG = "manuscript.strong_tag"  # meta: moves with every batch written
WINDOW = 150  # a window's weight: code points, a CJK one counting two (about a sentence or three)
BATCH = 4  # passages per batch (~30-50 windows, ~1 s of a core)
CHUNK = 16  # windows per call of the model: a close waits at most for one chunk
LOCK_WAIT = 0.5  # seconds a lock (the write lock, the memories' fill) is waited for before a stop is looked at
MEMO = "manuscript.strong"
LONG_LIVED = "indexing.strong"  # the memories' filler in the memo: `enabled` in a long-lived process
_PENDING = ("SELECT p.id, p.hash, p.text FROM manuscript_passages AS p WHERE NOT EXISTS"
            " (SELECT 1 FROM manuscript_strong AS s WHERE s.passage = p.id AND s.hash = p.hash)")


def _weight(text: str) -> int:
    return sum(2 if ord(c) >= 0x2E80 else 1 for c in text)


def _parts(piece: str) -> list[str]:
    """A sentence heavier than two windows (no sentence end in 1,000 code points: the model would read only
    its first 256 tokens) cut into parts of about WINDOW, each after a space when there is one; else whole."""
    if _weight(piece) <= 2 * WINDOW:
        return [piece]
    out, start, weight, space = [], 0, 0, -1
    for i, c in enumerate(piece):
        weight += 2 if ord(c) >= 0x2E80 else 1
        if c.isspace():
            space = i
        if weight > WINDOW and i > start:
            cut = space + 1 if start <= space < i else i  # after the last space, else before this character
            out.append(piece[start:cut])
            start, weight = cut, _weight(piece[cut:i + 1])
    out.append(piece[start:])
    return out


def windows(text: str) -> list[str]:
    """The text cut at sentence ends into windows of about WINDOW (a sentence longer than that is one
    window, one longer than two is cut: `_parts`)."""
    pieces, at = [], 0
    for m in SENTENCE_END.finditer(text):
        pieces += _parts(text[at:m.end()])
        at = m.end()
    pieces += _parts(text[at:])
    out, current, weight = [], "", 0
    for piece in pieces:
        w = _weight(piece)
        if current.strip() and weight + w > WINDOW:
            out.append(current.strip())
            current, weight = "", 0
        current, weight = current + piece, weight + w
    if current.strip():
        out.append(current.strip())
    return out or [text]


def pending(index: Index, limit: int) -> list[tuple[int, str, str]]:
    """(id, hash, text) of passages without windows of their current text."""
    return index.db.execute(f"{_PENDING} ORDER BY p.id LIMIT ?", (limit,)).fetchall()


def put(index: Index, model: str, rows: list[tuple[int, str, list[Any]]]) -> None:
    """Store each passage's window vectors (id, hash read, vectors), in the caller's transaction: another
    model's windows go first; a passage whose text changed since it was read, and windows of passages
    gone, are not kept."""
    db = index.db
    if index.get_meta(MODEL) != model:
        db.execute("DELETE FROM manuscript_strong")
        index.set_meta(MODEL, model)
    db.execute("DELETE FROM manuscript_strong WHERE NOT EXISTS (SELECT 1 FROM manuscript_passages AS p"
               " WHERE p.id = manuscript_strong.passage AND p.hash = manuscript_strong.hash)")
    for pid, digest, vectors in rows:
        still = db.execute("SELECT 1 FROM manuscript_passages WHERE id = ? AND hash = ?", (pid, digest)).fetchall()
        if still:
            db.execute("DELETE FROM manuscript_strong WHERE passage = ?", (pid,))
            db.executemany("INSERT INTO manuscript_strong(passage, part, hash, emb) VALUES (?, ?, ?, ?)",
                           [(pid, n, digest, v.astype("float16").tobytes()) for n, v in enumerate(vectors)])
    index.set_meta(TAG, str(int(index.get_meta(TAG) or 0) + 1))


def embed(encoder: Any, rows: list[tuple[int, str, str]], stopping: threading.Event | None = None
          ) -> list[tuple[int, str, list[Any]]] | None:
    """The windows of each passage embedded by the strong encoder (no lock held), CHUNK windows a call;
    None when `stopping` was set between two calls."""
    import numpy as np

    cut = [windows(text) for _, _, text in rows]
    flat = [w for ws in cut for w in ws]
    parts = []
    for at in range(0, len(flat), CHUNK):
        if stopping is not None and stopping.is_set():
            return None
        parts.append(encoder.passages(flat[at:at + CHUNK]))
    vectors = np.vstack(parts) if parts else np.zeros((0, encoder.dim), np.float32)
    out, at = [], 0
    for (pid, digest, _), ws in zip(rows, cut):
        out.append((pid, digest, list(vectors[at:at + len(ws)])))
        at += len(ws)
    return out


def fill(bank: Bank) -> int:
    """Embed every passage without windows now, on the caller's thread; the number embedded (0 when the
    tier is off or cannot run here)."""
    encoder = _encoder(bank)
    if encoder is None:
        return 0
    done = 0
    while rows := _pending_locked(bank):
        made = embed(encoder, rows)
        assert made is not None  # (nothing stops it)
        with bank.write_lock, bank.index.transaction():
            put(bank.index, encoder.name, made)
        done += len(rows)
    return done


def _pending_locked(bank: Bank) -> list[tuple[int, str, str]]:
    with bank.index.lock:  # the writer's connection, which the memories' filler writes with meanwhile
        return pending(bank.index, BATCH)


def _encoder(bank: Bank) -> Any:
    if not strongload.switched_on(bank.settings_files.embedding()):
        return None
    return strongload.handle(bank.memo).get()


# -- the search's side ---------------------------------------------------------------------------

def vectors(bank: Bank) -> tuple[Any, Any, Any] | None:
    """(passage ids, index of each window's passage, windows as rows) when every passage has its windows
    of the loaded strong model; None otherwise (a filler is kicked when one can run)."""
    index = bank.index
    encoder = strongload.handle(bank.memo).loaded()
    if encoder is None or index.get_meta(MODEL) != encoder.name:
        kick(bank)
        return None
    key = (index.get_meta(TAG), index.get_meta(GENERATION))
    kept = index.caches.get(MEMO)
    if kept is None or kept[0] != key:
        kept = index.caches[MEMO] = (key, _read(index))
    if kept[1] is None:
        kick(bank)
    return kept[1]  # type: ignore[no-any-return]


def _read(index: Index) -> tuple[Any, Any, Any] | None:
    if index.db.execute(f"{_PENDING} LIMIT 1").fetchall():
        return None
    import numpy as np

    rows = index.db.execute("SELECT passage, emb FROM manuscript_strong ORDER BY passage, part").fetchall()
    got = None
    if rows:
        owners = np.asarray([r[0] for r in rows], np.int64)
        ids, first = np.unique(owners, return_index=True)
        matrix = np.frombuffer(b"".join(r[1] for r in rows), np.float16).reshape(len(rows), -1).astype(np.float32)
        # a window the model made NaN (or too large for float16) scores as a zero row: never every passage's score
        matrix[~np.isfinite(matrix).all(axis=1)] = 0.0
        got = (ids, first, matrix)
    return got


def made_query(bank: Bank, query: str) -> Any:
    """The query's strong vector when the loaded encoder already made it (it keeps the last 64 queries: in
    a `context:assemble` the memories' side embeds the same query first); None otherwise. Never embeds."""
    import numpy as np

    encoder = strongload.handle(bank.memo).loaded()
    found = None if encoder is None else encoder.cache.get(query)
    if found is None or not found.any() or not np.isfinite(found).all():
        return None
    return found.copy()  # (as the encoder hands out: the kept row stays as made)


GAP_SCORED = 128  # windows between two allowed passages scored anyway (cheaper than one more einsum call)


def spans(first: Any, windows: int, wanted: Any) -> Any:
    """(first position, position after) of the runs of passages at the positions `wanted` whose windows are
    scored (`first`: each passage's first window; `windows`: how many in all), two runs less than GAP_SCORED
    windows apart as one."""
    import numpy as np

    wanted = np.sort(np.asarray(wanted, np.int64))
    if not len(wanted):
        return np.zeros((0, 2), np.int64)
    ends = np.append(first[1:], windows)
    cuts = np.flatnonzero(first[wanted[1:]] - ends[wanted[:-1]] >= GAP_SCORED) + 1
    return np.stack([wanted[np.append(0, cuts)], wanted[np.append(cuts, len(wanted)) - 1] + 1], axis=1)


def best_windows(matrix: Any, first: Any, runs: Any, vector: Any) -> Any:
    """Each passage's best window score in the `runs` (`spans`; elsewhere unset): a search before chapter 3
    scores chapters 1-2's windows only, each as the whole matrix scores it (a view of the same rows, summed
    alike). einsum, one thread: `@` (BLAS) spreads ~9,000 x 384 over threads that spin on a busy machine (7.4
    ms of CPU against 1.9); int8 rows were tried: 2.3 ms, but they moved ranks on benchmarks/manuscript.py."""
    import numpy as np

    best = np.full(len(first), -np.inf, np.float32)  # (unset stays -inf: a passage left out of the runs by a
    # mistake would never rank on what an earlier call left in the memory)
    for lo, hi in runs.tolist():
        w0 = int(first[lo])
        w1 = int(first[hi]) if hi < len(first) else len(matrix)
        best[lo:hi] = np.maximum.reduceat(np.einsum("ij,j->i", matrix[w0:w1], vector), first[lo:hi] - w0)
    return best


def nearest(bank: Bank, query: str, within: list[int], k: int, embed: bool = True,
            exclude: frozenset[int] = frozenset()) -> list[tuple[int, float]] | None:
    """(id, 1 - score) of the k best passages of `within` not in `exclude` by their best window, the scores put
    on one scale (best 1, worst 0); None when the strong windows cannot rank (the static vectors do). `embed`
    False: only with a query vector already made (`made_query`), so the caller never pays for an embedding."""
    if not strongload.switched_on(bank.settings_files.embedding()):  # (the writer's switch)
        return None
    vector = None
    if not embed:  # first: without a vector made, the windows are not even read
        vector = made_query(bank, query)
        if vector is None:
            return None
    got = vectors(bank)
    if got is None:
        return None
    import numpy as np

    if vector is None:
        asked = embed_query(bank.settings_files.embedding(), bank.memo, query)  # the encoder keeps the last queries: a prompt's is embedded once
        if asked is None:
            return None
        vector = asked.vector
    ids, first, matrix = got
    from .words import kept_for, kept_positions

    rows = kept_positions(bank.index, ids, within, exclude)  # in the order of `within`
    if not len(rows):
        return []
    runs = kept_for(bank.index, "runs", ids, within,  # (the excluded few scored too: never asked for)
                    lambda: spans(first, len(matrix), kept_positions(bank.index, ids, within)))
    scores = best_windows(matrix, first, runs, np.asarray(vector, np.float32))[rows]
    lo, hi = float(scores.min()), float(scores.max())
    scaled = (scores - lo) / (hi - lo) if hi > lo else np.ones_like(scores)
    top = np.argsort(-scaled, kind="stable")[:k]
    return list(zip(ids[rows[top]].tolist(), (1.0 - scaled[top]).tolist()))  # float32, as one by one


# -- the background -----------------------------------------------------------------------------

def _long_lived(bank: Bank) -> bool:
    found = bank.memo.get(LONG_LIVED)  # (stopped by a benchmark that keeps the background out of its rows)
    return bool(getattr(found, "enabled", False)) and not getattr(found, "stopped", False)


class Filler:
    """One project's passage filler: a worker thread, one batch at a time; stopped when the project closes."""

    def __init__(self, bank: Bank) -> None:
        self.bank = bank
        self.worker = Worker(f"membank-passages-{bank.info.id}")
        self.stopping = threading.Event()  # set by `stop`: the batch in flight drops at its next chunk
        self._lock = threading.Lock()
        self._busy = threading.Lock()
        self._queued = False
        self.stopped = False
        self.failure: str | None = None  # a batch the model failed on: no more batches in this process
        memories = bank.memo.get(LONG_LIVED)  # stopped with it (Project.close, first): even for a project gone,
        if memories is not None:  # whose closers are dropped
            memories.companions.append(self)
        bank.closers.append(self.stop)
        background.stop_at_exit(self)

    def kick(self) -> None:
        with self._lock:
            if self.stopped or self._queued or self.failure is not None:
                return
            self._queued = self.worker.submit(self._batch)

    def stop(self) -> None:
        """No more batches; the one in flight is dropped after its chunk. Waits for the worker, however
        long that chunk takes (never left inside the model while the project closes or the process exits)."""
        with self._lock:
            self.stopped = True
            self.stopping.set()
        with self._busy:
            pass
        self.worker.close()

    def _batch(self) -> None:
        with self._lock:
            self._queued = False
        if not self._memories_done():
            return
        encoder = None if self.stopped or not self.bank.present() else _encoder(self.bank)
        if encoder is None:  # (a project gone: the memories' filler says so; a kick after it is back fills)
            return
        background.lowest_priority()  # after the model's load: the threads it starts inherit the priority
        with self._busy:
            if self.stopped or not self._lock_taken():
                return
            self.bank.write_lock.release()  # taken and let go: a sync that kicked has committed
            try:
                with reading():
                    rows = pending(self.bank.index, BATCH)
            except Exception:
                if not self.bank.present() or not self.bank.index.on_disk():  # the project, or `.index/`, gone
                    return  # meanwhile: a reader cannot open it (the project's said once by the memories'
                raise  # filler); the next call makes the index again, and a kick after it fills
        if not rows:
            return
        try:
            made = embed(encoder, rows, self.stopping)
        except Exception as e:  # a model that fails on text: the static vectors keep ranking, said once
            self.failure = f"{e.__class__.__name__}: {e}"
            log.exception("the strong model failed on the manuscript's passages; the static vectors rank them")
            return
        if made is None:  # stopped meanwhile
            return
        with self._busy:
            if self.stopped or not self._lock_taken():
                return
            try:
                if not self.bank.index.on_disk():  # `.index/` deleted meanwhile: nothing into the unlinked file
                    return
                with self.bank.index.transaction():
                    put(self.bank.index, encoder.name, made)
            finally:
                self.bank.write_lock.release()
        self.kick()

    def _memories_done(self) -> bool:
        """Wait until the memories' filler has nothing queued or running (its batches queue the next while
        entries lack vectors); False when this filler was stopped meanwhile."""
        memories = self.bank.memo.get(LONG_LIVED)
        while memories is not None and not memories.worker.drain(LOCK_WAIT):
            if self.stopping.is_set():
                return False
        return not self.stopping.is_set()

    def _lock_taken(self) -> bool:
        try:
            self.bank.write_lock.acquire(wait=LOCK_WAIT)
            return True
        except MembankError as e:
            if "lockWait" in e.details:  # a writer holds it: tried again after it
                self.kick()
            return False  # (the folder gone: tried again at the next kick, never spun on)


def kick(bank: Bank) -> None:
    """Fill what lacks windows in the background, in a long-lived process where the strong tier runs."""
    if not _long_lived(bank) or strongload.handle(bank.memo).why() is not None:
        return
    with _MAKING:
        found = bank.memo.get(MEMO)
        if found is None:
            found = bank.memo[MEMO] = Filler(bank)
    found.kick()


def settle(bank: Bank, timeout: float = 60.0) -> bool:
    """Wait until the background filler has nothing queued or running (a test, a benchmark); False when
    `timeout` passed first. True at once when no filler runs."""
    found = bank.memo.get(MEMO)
    return True if found is None else bool(found.worker.drain(timeout))
