"""The sidecar's calls in flight, by id, for `$/cancelRequest` (docs/sidecar.md, "Cancel and deadlines").

Every call the server accepts gets a `Call`: its id and a cancellation token (kernel/cancel.py) made
when the request arrived, so a `deadlineMs` counts from then, time spent queued included. A call is
queued until its worker begins it, then running, then gone. `$/cancelRequest {id}` on a queued call
takes it out at once (the server answers CANCELED and the worker skips it, so it never runs); on a
running call it cancels the token, and the call answers CANCELED at its next checkpoint (only a
cancellable channel has any: kernel/cancel.py `scope`); on an id that is finished or unknown it does
nothing. One lock guards the states, so a call is either begun or canceled-while-queued, never both.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ..kernel import cancel, errors
from ..kernel.errors import MembankError
from .requestid import valid_id

log = logging.getLogger("membank.shells.server")

METHOD = "$/cancelRequest"  # a JSON-RPC notification from the app: {"id": the request to cancel}

QUEUED, RUNNING, CANCELED = "queued", "running", "canceled"


class Call:
    """One accepted request: its id (None for a notification, which cannot be canceled) and its token."""

    __slots__ = ("id", "has_id", "token", "state")

    def __init__(self, has_id: bool, id_: Any) -> None:
        self.has_id = has_id
        self.id = id_
        self.token = cancel.Token()  # started now: a deadline counts from the request's arrival
        self.state = QUEUED


def _key(id_: Any) -> tuple[bool, Any]:
    """Ids as JSON compares them: the string "1" is not the number 1."""
    return isinstance(id_, str), id_


def canceled_before_running() -> dict[str, Any]:
    return MembankError(errors.CANCELED, "the call was canceled by its caller before it ran ($/cancelRequest); "
                        "nothing was done").envelope()


class Pending:
    """The calls accepted and not yet answered that can still be canceled: those with an id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[bool, Any], list[Call]] = {}  # a careless app may reuse an id: all of them

    def add(self, has_id: bool, id_: Any) -> Call:
        call = Call(has_id, id_)
        if has_id:
            with self._lock:
                self._calls.setdefault(_key(id_), []).append(call)
        return call

    def begin(self, call: Call) -> bool:
        """The worker starts `call`: False when it was canceled while queued (it was answered already)."""
        with self._lock:
            if call.state != QUEUED:
                return False
            call.state = RUNNING
            return True

    def end(self, call: Call) -> None:
        """The call is finished (or never started): a cancel for its id does nothing from now on."""
        if not call.has_id:
            return
        with self._lock:
            self._forget(call)

    def _forget(self, call: Call) -> None:
        key = _key(call.id)
        calls = self._calls.get(key)
        if calls is not None and call in calls:
            calls.remove(call)
            if not calls:
                del self._calls[key]

    def cancel(self, params: Any) -> list[Call]:
        """`$/cancelRequest`'s params: cancel the calls with that id. Returns those that were still queued,
        now out of the queue, for the server to answer CANCELED; running ones stop at their next checkpoint."""
        target = params.get("id") if isinstance(params, dict) else None
        if not isinstance(params, dict) or "id" not in params or not valid_id(target):
            log.debug("%s without a valid `id` in its params: ignored", METHOD)
            return []
        queued = []
        with self._lock:
            for call in list(self._calls.get(_key(target), ())):
                if call.state == QUEUED:
                    call.state = CANCELED
                    self._forget(call)
                    queued.append(call)
                elif call.state == RUNNING:
                    call.token.cancel()
        return queued
