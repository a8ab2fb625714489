"""`membank serve`: every channel over JSON-RPC 2.0 on stdio, one JSON object per line.

The method is the channel name, `params` its payload, and the channel's envelope is the
`result`. JSON-RPC `error` is kept for protocol faults (a line that is not JSON, not a request,
an unknown method, a request too large); everything else, wrong params included, is an envelope.
docs/sidecar.md is the protocol for app developers.

Concurrency: reads run on a small pool, each in a read-only snapshot of the index on a connection
of their own (`index.store.reading`), so they never queue behind a long sync. Writes run on one
lane per project (a single thread each), so writes to one project keep their order and a slow
write to one project never holds up another. Replies go out as each call finishes, stdout lines
written whole under a lock; the id ties a reply to its request. `$/cancelRequest {id}` cancels a call
queued or running (cancels.py), and a payload's `deadlineMs` counts from the request's arrival.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable

from ..kernel import cancel, env, errors, heap
from ..runtime.catalog import CATALOG, READS
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from ..kernel.errors import MembankError
from ..index.store import reading
from . import cancels, chapterwatch
from .requestid import ID_SCAN, no_constants, request_id, valid_id
from .daily import Daily
from .settler import Settler
from .watchreport import Report, listed

log = logging.getLogger("membank.shells.server")

# JSON-RPC 2.0 error codes for protocol faults
PARSE_ERROR = -32700  # the line is not JSON (or not UTF-8)
INVALID_REQUEST = -32600  # not a request object, a batch, a bad id or jsonrpc, no method, too large
METHOD_NOT_FOUND = -32601  # no channel of that name
INTERNAL_ERROR = -32603  # the server failed before a channel ran (a bug); channel bugs are INTERNAL envelopes
SHUTTING_DOWN = -32000  # the server is stopping and takes no new calls

MAX_LINE = 4 * 1024 * 1024  # bytes in one request line; a longer line is refused and skipped
# After SIGTERM/SIGINT, calls in flight get this long to finish before the process exits regardless (a
# second signal exits at once); after stdin closes, EOF_WAIT (the app is gone, its last writes finish).
SIGNAL_WAIT = 10.0
EOF_WAIT = 60.0
STOP_WAIT_ENV = "MEMBANK_STOP_WAIT"  # seconds, overriding SIGNAL_WAIT (tests make it short)


def _signal_wait() -> float:
    return env.seconds(STOP_WAIT_ENV, SIGNAL_WAIT)


READ_WORKERS = 4
# Channels that only read (the catalog's mode) run concurrently, in a snapshot, and are refused any
# write (query_only). Every other channel is a write and runs on its project's lane.

_OPEN_LANE = "\x00open"  # the channels about projects (project:open, project:init), one at a time
_OTHER_LANE = "\x00other"  # writes naming no open project: they fail fast with an envelope


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


class Server:
    """One sidecar: a registry of open projects, their watchers, and the protocol on two file descriptors."""

    def __init__(self, registry: Registry, out_fd: int, *, watch: bool = True, debounce: float = 0.1,
                 read_workers: int = READ_WORKERS, max_line: int = MAX_LINE):
        self.registry = registry
        self.watch = watch
        self.debounce = debounce
        self.max_line = max_line
        self._out_fd = out_fd
        self._out_lock = threading.Lock()
        self._out_closed = False
        self._read_workers = read_workers
        self._reads = ThreadPoolExecutor(read_workers, thread_name_prefix="membank-read")
        self._lanes: dict[str, ThreadPoolExecutor] = {}
        self._lanes_lock = threading.Lock()
        self._watchers: dict[str, Any] = {}
        self._opened: set[str] = set()
        self._watch_lock = threading.Lock()
        self._inflight = 0
        self._pending = cancels.Pending()  # the calls in flight by id, for $/cancelRequest
        self._idle = threading.Condition()
        self._closing = False
        self._eof = threading.Event()
        self._stop_reason: str | None = None  # set from a signal handler: a plain assignment, nothing that locks
        self.settler = Settler(self._idle, lambda: self._inflight > 0)
        self.daily = Daily(registry, lambda pid: self.submit("memory:lifecycle:run",
                                                               {"projectId": pid, "trigger": "daily"}, False, None))

    # -- output ---------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        """Write one message as one line; a client that has gone away stops the server."""
        try:
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            log.exception("a reply could not be encoded as JSON")
            if "id" not in message:
                return
            message = {"jsonrpc": "2.0", "id": message["id"], "result": MembankError(
                errors.INTERNAL, "internal error: the reply could not be encoded as JSON; this is a bug in membank, "
                "see its log").envelope()}
            text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: \u-escapes keep the line valid UTF-8
            data = json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii")
        data += b"\n"
        with self._out_lock:
            if self._out_closed:
                return
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self._out_fd, view):]
            except OSError as e:
                self._out_closed = True
                self._stop_reason = self._stop_reason or "stdout closed"
                log.warning("cannot write to stdout (%s); stopping", e.strerror or e.__class__.__name__)

    def respond(self, id_: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": id_, "result": result})

    def error(self, id_: Any, code: int, message: str, data: dict[str, Any] | None = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data:
            err["data"] = data
        self.send({"jsonrpc": "2.0", "id": id_, "error": err})

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- input ----------------------------------------------------------------------------------

    def read_lines(self, fd: int) -> None:
        """Split what arrives on `fd` into lines and handle each; a line over `max_line` is skipped whole
        (its first ID_SCAN bytes are kept, to answer with the request's own id)."""
        buf = bytearray()
        skipping: bytes | None = None  # the head of a line being skipped
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError as e:
                log.warning("cannot read stdin (%s); stopping", e.strerror or e.__class__.__name__)
                chunk = b""
            if not chunk:
                if skipping is not None:
                    self._too_large(skipping)
                elif buf.strip():
                    self._handle_safely(bytes(buf))
                break
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                if end < 0:
                    if skipping is None:
                        buf += chunk[start:]
                        if len(buf) > self.max_line:
                            skipping = bytes(buf[:ID_SCAN])
                            buf.clear()
                    break
                if skipping is not None:
                    self._too_large(skipping)
                    skipping = None
                else:
                    buf += chunk[start:end]
                    if len(buf) > self.max_line:
                        self._too_large(bytes(buf[:ID_SCAN]))
                    else:
                        self._handle_safely(bytes(buf))
                    buf.clear()
                start = end + 1
        self._eof.set()

    def _handle_safely(self, line: bytes) -> None:
        try:
            self.handle(line)
        except Exception:  # a bug here must not stop the reading of stdin
            log.exception("internal error handling a request line")
            self.error(request_id(line[:ID_SCAN]), INTERNAL_ERROR,
                       "internal error handling the request; this is a bug in membank, see its log")

    def _too_large(self, head: bytes) -> None:
        """The reply to a line over the limit: with the request's own id when its head shows it."""
        self.error(request_id(head), INVALID_REQUEST, f"the request is larger than {self.max_line // (1024 * 1024)} "
                   "MiB and was skipped", {"limit": self.max_line})

    def handle(self, line: bytes) -> None:
        """One line: a protocol error reply, or a call sent to its lane. Never raises."""
        if not line.strip():
            return
        try:
            msg = json.loads(line, parse_constant=no_constants)
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            # the id when the line's head shows one (NaN in the params, say), so the app's call ends
            self.error(request_id(line[:ID_SCAN]), PARSE_ERROR, "parse error: the line is not valid JSON in UTF-8")
            return
        if isinstance(msg, list):
            self.error(None, INVALID_REQUEST, "batch requests are not supported: send one request per line")
            return
        if not isinstance(msg, dict):
            self.error(None, INVALID_REQUEST, "a request must be a JSON object")
            return
        has_id = "id" in msg
        id_ = msg.get("id")
        if not valid_id(id_):
            self.error(None, INVALID_REQUEST, "`id` must be a string, a number or null")
            return
        if msg.get("jsonrpc") != "2.0":
            self.error(id_, INVALID_REQUEST, 'the request must have "jsonrpc": "2.0"')
            return
        method = msg.get("method")
        if not isinstance(method, str):
            self.error(id_, INVALID_REQUEST, "the request has no `method` (a string)")
            return
        if method == cancels.METHOD:
            self.cancel(has_id, id_, msg.get("params"))
            return
        if method not in CATALOG:
            if has_id:  # a notification gets no reply, not even an error
                self.error(id_, METHOD_NOT_FOUND, f"no method named `{_short(method)}`", {"method": _short(method)})
            return
        self.submit(method, msg.get("params"), has_id, id_)

    # -- calls ----------------------------------------------------------------------------------

    def submit(self, method: str, params: Any, has_id: bool, id_: Any) -> None:
        read = method in READS
        with self._idle:
            closing = self._closing
            if not closing:
                self._inflight += 1
        if closing:
            if has_id:
                self.error(id_, SHUTTING_DOWN, "the server is shutting down")
            return
        call = self._pending.add(has_id, id_)
        try:
            executor = self._reads if read else self._lane(method, params)
            executor.submit(self._call, method, params, call, read)
        except Exception:  # an executor already shut down: the call never started
            self._pending.end(call)
            self._done()
            if has_id:
                self.error(id_, SHUTTING_DOWN, "the server is shutting down")

    def cancel(self, has_id: bool, id_: Any, params: Any) -> None:
        """`$/cancelRequest` (cancels.py): a call still queued is answered CANCELED now and never runs."""
        if has_id:
            self.error(id_, INVALID_REQUEST, f"`{cancels.METHOD}` is a notification: send it without an `id`")
            return
        for call in self._pending.cancel(params):
            self.respond(call.id, cancels.canceled_before_running())
            self._done()  # its worker skips it (Pending.begin): counted done here

    def _lane(self, method: str, params: Any) -> ThreadPoolExecutor:
        """The single-thread lane a write runs on: one per open project (the catalog's target says which
        channels are about projects instead: they share one lane)."""
        if CATALOG[method].target == "registry":
            key = _OPEN_LANE
        else:
            project_id = params.get("projectId") if isinstance(params, dict) else None
            open_ids = list(self.registry.banks)
            if isinstance(project_id, str) and project_id in open_ids:
                key = project_id
            elif project_id is None and len(open_ids) == 1:
                key = open_ids[0]
            else:
                key = _OTHER_LANE
        with self._lanes_lock:
            lane = self._lanes.get(key)
            if lane is None:
                lane = self._lanes[key] = ThreadPoolExecutor(1, thread_name_prefix="membank-write")
            return lane

    def _call(self, method: str, params: Any, call: cancels.Call, read: bool) -> None:
        if not self._pending.begin(call):
            return  # canceled while queued: answered already, and counted done, by `cancel`
        has_id, id_ = call.has_id, call.id
        started = time.perf_counter()
        log.debug("start %s (id %r)", method, id_)
        try:
            if read:
                with reading(), cancel.installed(call.token):
                    envelope = dispatch(self.registry, method, params)
            else:
                with cancel.installed(call.token):
                    envelope = dispatch(self.registry, method, params)
                if method == "project:open" and envelope.get("ok"):
                    self.opened(envelope["data"]["projectId"])
                elif envelope.get("ok"):
                    self.settler.changed()
        except BaseException:  # dispatch returns envelopes; this is a bug in the server itself
            log.exception("internal error serving %s", method)
            envelope = MembankError(errors.INTERNAL, f"internal error in {method}; this is a bug in membank, "
                                    "see its log").envelope()
        self._pending.end(call)  # answered from here on: a cancel for its id does nothing
        try:
            if has_id:
                self.respond(id_, envelope)
            if log.isEnabledFor(logging.DEBUG):
                outcome = "ok" if envelope.get("ok") else envelope["error"]["code"]
                log.debug("%s %s in %.2f ms", method, outcome, (time.perf_counter() - started) * 1000)
        finally:
            self._done()

    def _done(self) -> None:
        with self._idle:
            self._inflight -= 1
            self._idle.notify_all()

    # -- projects: read connections and watchers --------------------------------------------------

    def opened(self, project_id: str) -> None:
        """A project is open: warm the read threads on it and watch its files."""
        with self._watch_lock:
            if project_id in self._opened or self._closing:
                return
            self._opened.add(project_id)
            bank = self.registry.banks.get(project_id)
            if bank is None:
                return
            self._warm_readers(bank)
            bank.listeners.append(self.notify)  # `episode:failed` and the like, as notifications
            from ..domains.indexing import strongfill

            strongfill.start(bank)  # the strong tier fills in the background while the sidecar runs
            self.daily.nudge()  # its daily lifecycle run, when a day has passed since the last
            self.settler.changed()
            if self.watch:
                self._start_watcher(project_id, bank)

    def _warm_readers(self, bank: Any) -> None:
        """Every read thread opens its connection to this index now, so none connects first during a
        rebuild (a reader that already has one keeps reading the old index until the rebuild commits)."""
        gate = threading.Barrier(self._read_workers)

        def warm() -> None:
            try:
                gate.wait(timeout=5)  # holds each thread until all exist: one connection per thread
            except threading.BrokenBarrierError:
                pass
            try:
                bank.index.prepare_reader()
            except Exception:
                log.warning("a read connection could not be opened in advance", exc_info=True)

        for _ in range(self._read_workers):
            self._reads.submit(warm)

    def _start_watcher(self, project_id: str, bank: Any) -> None:
        """Watch an open project's files; `index:changed` goes out after each re-index."""
        from .watch import Watcher

        watcher = Watcher(bank, on_report=lambda report: self._changed(project_id, report, bank), debounce=self.debounce)
        try:
            watcher.start()
        except Exception:
            log.exception("cannot watch the project %s; call index:sync after changes", project_id)
            return
        self._watchers[project_id] = watcher  # a polling fallback is logged once, by the watcher itself

    def _changed(self, project_id: str, report: Report, bank: Any = None) -> None:
        sources, chapters = chapterwatch.split(sorted(report.sources))  # a manuscript document: `chapter:changed`
        for document in chapters:
            self.notify("chapter:changed", {"projectId": project_id, "documentId": document,
                                            "capture": chapterwatch.capture_state(bank, document)})
        if sources:
            self.settler.changed()
            self.notify("index:changed", {"projectId": project_id, "sources": sources, **listed(report)})

    # -- running --------------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """Ask the server to stop (safe from a signal handler: one assignment)."""
        self._stop_reason = self._stop_reason or reason

    def serve(self, in_fd: int = 0) -> int:
        """Serve until stdin closes or stop() is called; then let accepted calls finish and return 0.

        The wait is bounded (SIGNAL_WAIT, or $MEMBANK_STOP_WAIT, after a signal; EOF_WAIT after stdin
        closes): a call still running then is abandoned and 1 is returned, and the caller exits the
        process at once (`run`). Abandoning is safe: file writes are atomic, the index a transaction."""
        reader = threading.Thread(target=self.read_lines, args=(in_fd,), name="membank-stdin", daemon=True)
        reader.start()
        self.settler.start()
        self.daily.start()
        while not self._eof.wait(0.05):
            if self._stop_reason is not None:
                break
        log.info("stopping: %s", self._stop_reason or "stdin closed")
        wait = EOF_WAIT if self._stop_reason is None else _signal_wait()
        finished = threading.Event()

        def stop_all() -> None:
            try:
                self.shutdown()
            except Exception:
                log.exception("the server did not shut down cleanly")
            finally:
                finished.set()

        threading.Thread(target=stop_all, name="membank-shutdown", daemon=True).start()
        if finished.wait(wait):
            return 0
        log.warning("stopping without waiting further: %d call(s) still running after %g s", self._inflight, wait)
        return 1

    def shutdown(self) -> None:
        """Refuse new calls, let accepted ones finish (writes included) and reply, then stop watchers and close."""
        with self._idle:
            self._closing = True
            while self._inflight:
                self._idle.wait()
        self.settler.stop()
        self.daily.stop()
        with self._watch_lock:
            watchers, self._watchers = list(self._watchers.values()), {}
        for watcher in watchers:
            try:
                watcher.stop()
            except Exception:
                log.exception("a watcher did not stop cleanly")
        self._reads.shutdown(wait=True)
        with self._lanes_lock:
            lanes = list(self._lanes.values())
        for lane in lanes:
            lane.shutdown(wait=True)
        self.registry.close()


def run(projects: Iterable[Path | str] = (), *, watch: bool = True, log_level: str = "info",
        debounce: float = 0.1) -> int:
    """`membank serve`: open the projects, watch them, and serve stdin/stdout until stdin closes or SIGTERM."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s membank %(levelname)s %(name)s: %(message)s")
    logging.getLogger("membank").setLevel(getattr(logging, log_level.upper(), logging.INFO))
    # stdout belongs to the protocol: keep a private handle on it and send anything else printed to stderr
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    heap.tune()  # glibc's malloc for a long-lived process of many threads, before they start
    registry = Registry()
    server = Server(registry, out_fd, watch=watch, debounce=debounce)
    serving = False

    def on_signal(signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        if server._stop_reason is not None:  # asked twice: stop now
            log.warning("%s again: exiting at once", name)
            os._exit(1)
        server.stop(name)
        if not serving:
            raise _Stopped(name)  # a project still opening (a long first sync) is abandoned

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, on_signal)
    try:
        for path in projects:
            envelope = dispatch(registry, "project:open", {"path": str(path)})
            if not envelope["ok"]:
                log.error("cannot open the project %s: %s", path, envelope["error"]["message"])
                registry.close()
                return 2
            server.opened(envelope["data"]["projectId"])
        serving = True
    except _Stopped as e:
        log.info("stopping: %s while opening the projects", e)
        os._exit(0)  # an open interrupted mid-sync holds the index: nothing to wait for (its transaction rolls back)
    log.info("serving JSON-RPC on stdio; %d project(s) open", len(registry.banks))
    code = server.serve(0)
    if code != 0:
        os._exit(code)  # threads still running a call would keep the interpreter from exiting
    return code


class _Stopped(BaseException):
    """Raised by the signal handler into a project open at start (BaseException: `dispatch` lets it through)."""
