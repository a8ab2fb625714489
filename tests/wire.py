"""An in-process sidecar for tests: a `Server` on a pipe, lines in by `handle`, messages read back by id.

Used where a test must hold a call halfway (an event inside a monkeypatched step) and see what the
server answers meanwhile; a real subprocess is `tests/sidecar.py`."""

from __future__ import annotations

import json
import os
import queue
import threading
from typing import Any, Callable

from membank.runtime.registry import Registry
from membank.shells.server import Server


class Wire:
    """An in-process Server on a pipe: lines in by `handle`, messages read back by id."""

    def __init__(self, server_for: Callable[[int], Server] = lambda fd: Server(Registry(), fd, watch=False)) -> None:
        self._read_fd, self._write_fd = os.pipe()
        self.server = server_for(self._write_fd)
        self._messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self._early: dict[Any, dict[str, Any]] = {}
        self._pump = threading.Thread(target=self._read, daemon=True)
        self._pump.start()
        self._next = 0

    def _read(self) -> None:
        buffer = b""
        while chunk := os.read(self._read_fd, 65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                self._messages.put(json.loads(line))

    def line(self, message: dict[str, Any]) -> None:
        self.server.handle(json.dumps({"jsonrpc": "2.0", **message}).encode())

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next += 1
        self.line({"id": self._next, "method": method, "params": params or {}})
        return self._next

    def message(self, id_: int) -> dict[str, Any]:
        """The reply to `id_`, whatever order replies come in; fails after 30 s (a liveness bound)."""
        while id_ not in self._early:
            message = self._messages.get(timeout=30)
            self._early[message.get("id")] = message
        return self._early.pop(id_)

    def result(self, id_: int) -> dict[str, Any]:
        return self.message(id_)["result"]  # type: ignore[no-any-return]

    def reply(self, id_: int) -> dict[str, Any]:
        """The data answering `id_`; the envelope must be ok."""
        envelope = self.result(id_)
        assert envelope["ok"], envelope
        return envelope["data"]  # type: ignore[no-any-return]

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.reply(self.send(method, params))

    def cancel(self, id_: int) -> None:
        self.line({"method": "$/cancelRequest", "params": {"id": id_}})  # a notification: no reply

    def close(self) -> None:
        self.server.shutdown()
        os.close(self._write_fd)
        self._pump.join(30)
        os.close(self._read_fd)
