"""`membank serve` as the app runs it: a real subprocess spoken to over pipes, with deadlines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parent.parent
DEADLINE = 60.0  # seconds: generous for slow machines; every wait ends as soon as its answer is in


class Sidecar:
    """A running `membank serve` and the messages it has sent, read by a thread, checked as they come."""

    def __init__(self, *args: str, home: Path, cwd: Path | None = None, env: dict[str, str] | None = None):
        env = {**os.environ, "WRITENOW_HOME": str(home), "PYTHONUNBUFFERED": "1", **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-m", "membank.shells.cli", "serve", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd or REPO)
        self.messages: list[dict[str, Any]] = []
        self.bad_lines: list[bytes] = []
        self.stderr: list[str] = []
        self._cond = threading.Condition()
        self._next_id = 0
        self._threads = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self._threads:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
                assert isinstance(msg, dict) and msg.get("jsonrpc") == "2.0"
            except (ValueError, AssertionError):
                with self._cond:
                    self.bad_lines.append(line)
                continue
            with self._cond:
                self.messages.append(msg)
                self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            with self._cond:
                self.stderr.append(line.decode("utf-8", "replace"))
                self._cond.notify_all()

    # -- sending ------------------------------------------------------------------------------

    def send_raw(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method: str, params: Any = None, *, id_: Any = ..., notification: bool = False) -> Any:
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if not notification:
            if id_ is ...:
                self._next_id += 1
                id_ = self._next_id
            msg["id"] = id_
        self.send_raw(json.dumps(msg, ensure_ascii=False).encode() + b"\n")
        return id_

    def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """The envelope a channel returned."""
        reply = self.reply(self.send(method, params))
        assert "result" in reply, reply
        return reply["result"]

    def ok(self, method: str, params: Any = None) -> Any:
        envelope = self.call(method, params)
        assert envelope["ok"], envelope
        return envelope["data"]

    # -- waiting ------------------------------------------------------------------------------

    def wait_for(self, found: Callable[[], Any], what: str, timeout: float = DEADLINE) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                value = found()
                if value:
                    return value
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._threads[0].is_alive()):
                    raise AssertionError(f"no {what} within {timeout} s; stderr:\n{''.join(self.stderr[-30:])}")
                self._cond.wait(min(left, 0.5))

    def reply(self, id_: Any, timeout: float = DEADLINE) -> dict[str, Any]:
        def find() -> dict[str, Any] | None:
            return next((m for m in self.messages if "method" not in m and m.get("id") == id_
                         and type(m.get("id")) is type(id_)), None)
        return self.wait_for(find, f"reply to id {id_!r}", timeout)

    def replies(self) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.messages if "method" not in m]

    def notifications(self, method: str) -> list[dict[str, Any]]:
        with self._cond:
            return [m for m in self.messages if m.get("method") == method]

    def close(self, timeout: float = DEADLINE) -> int:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        code = self.proc.wait(timeout)
        for t in self._threads:
            t.join(timeout)
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
