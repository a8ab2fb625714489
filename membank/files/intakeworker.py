"""A second process for a large sync: it takes in (reads, hashes, parses) the chunks of files it is sent
and sends back what each gave, so that parsing runs on another core beside the index writes and the
embedding of the first (docs/performance.md, "Two cores").

The child is `python -m membank.files.intakeworker`, started by its parent; frames are pickles with an
8-byte length over the child's stdin and stdout, read by nobody else. A process rather than a thread
because parsing is Python and holds the GIL; a fresh one rather than a fork because the parent may
have threads (the sidecar's watcher and writers) that a fork would copy mid-lock."""

from __future__ import annotations

import gc
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from .intake import Outcome, take
from .scan import BankRoot, FileStat

_HEADER = struct.Struct("<Q")
MAX_FRAME = 1 << 30  # no chunk's frame comes near this: a larger length is bytes that are no frame
Request = tuple[int, BankRoot, list[tuple[FileStat, str | None]]]  # chunk number, bank, (file, hash known)
Reply = tuple[int, list[Outcome]]


def _send(stream: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _receive(stream: IO[bytes]) -> Any | None:
    """The next frame; None at the end of the stream (or a frame cut short: the other side is gone; or
    a length no frame has: something else wrote to the stream, e.g. a print at import)."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    size = _HEADER.unpack(header)[0]
    if size > MAX_FRAME:
        return None
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


def serve(requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child's loop: each request answered in the order it came, until the parent closes the pipe."""
    while (request := _receive(requests)) is not None:
        chunk, root, items = request
        _send(replies, (chunk, [take(root, stat, known) for stat, known in items]))


PIPE_BYTES = 1 << 20  # the requests queued ahead (~30 KB a chunk) fit: see `widen`


def widen(pipe: IO[bytes] | None) -> None:
    """Let the pipe to the child hold every request queued ahead (Linux; elsewhere it stays as it is).
    In a pipe of 64 KB, the request that tops the queue up blocked the sync's thread until the child
    finished its chunk and read the next: most of a chunk's time, each chunk, not spent on the writes."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if pipe is None or setsize is None:
        return
    try:
        fcntl.fcntl(pipe.fileno(), setsize, PIPE_BYTES)
    except OSError:  # above the system's pipe-max-size: the pipe keeps its size
        pass


class IntakeWorker:
    """The parent's side: chunks sent, replies collected by a reader thread (so a full pipe never
    blocks the child), the child stopped on `close`. Any failure of the child shows as `alive`
    turning False; the parent then takes in the chunks itself."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._process = process
        self._replies: queue.Queue[Reply | None] = queue.Queue()
        self.alive = True
        threading.Thread(target=self._collect, name="membank-intake", daemon=True).start()

    @classmethod
    def start(cls) -> IntakeWorker | None:
        """A running worker, or None where no second interpreter can be started (a frozen app)."""
        if not sys.executable or getattr(sys, "frozen", False):
            return None
        # -P: the working directory is not put first on the child's path (a folder named `membank` there
        # would stand in for this package); PYTHONPATH names the folder this package is in
        package_parent = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH", "")) if p)
        try:
            process = subprocess.Popen([sys.executable, "-P", "-m", "membank.files.intakeworker"], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        except OSError:
            return None
        widen(process.stdin)
        return cls(process)

    @property
    def pid(self) -> int:
        return self._process.pid

    def _collect(self) -> None:
        try:
            assert self._process.stdout is not None
            while (reply := _receive(self._process.stdout)) is not None:
                self._replies.put(reply)
        except Exception:  # noqa: BLE001 - whatever unpickling garbage raises (it may raise almost anything)
            pass  # the child died or wrote something else: the parent takes its chunks back
        finally:
            self._replies.put(None)

    def send(self, request: Request) -> bool:
        """Hand the worker a chunk; False when it is gone (the caller keeps the chunk)."""
        if not self.alive:
            return False
        try:
            assert self._process.stdin is not None
            _send(self._process.stdin, request)
            return True
        except (OSError, ValueError):
            self.alive = False
            return False

    def replies(self, wait: float | None) -> list[Reply]:
        """The replies that have come in, waiting up to `wait` seconds for the first (None: no wait)."""
        items: list[Reply | None] = []
        try:
            items.append(self._replies.get(timeout=wait) if wait is not None else self._replies.get_nowait())
            while True:
                items.append(self._replies.get_nowait())
        except queue.Empty:
            pass
        if None in items:
            self.alive = False
        return [item for item in items if item is not None]

    def close(self) -> None:
        """Stop the child (it may be mid-chunk: a sync canceled or failed) and reap it."""
        self.alive = False
        try:
            if self._process.stdin is not None:
                self._process.stdin.close()
        except OSError:
            pass
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()


if __name__ == "__main__":
    # the child lives for one sync and what it builds has no cycles: the collector only scanned each
    # chunk's records again and again (~3% of its CPU)
    gc.disable()
    serve(sys.stdin.buffer, sys.stdout.buffer)
