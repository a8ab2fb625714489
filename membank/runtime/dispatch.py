"""Running a channel: payload checked, project found, handler called, envelope returned.

The CLI, the sidecar and `Bank.call` come through `dispatch`; the Python methods through `run`
after checking their arguments against the same payload type, so a channel behaves the same way
whichever way it is called. Either way a call runs in a cancellation scope (kernel/cancel.py): a
payload's `deadlineMs` bounds it, and a call canceled or late before it starts never runs."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from ..domains.contract import Channel
from ..index import IndexError_, StorageError
from ..index.failures import storage_error
from ..index.store import reading
from ..kernel import cancel, errors
from ..kernel.errors import MembankError
from ..kernel.log import log
from ..kernel.payload import build
from .catalog import cancellable, channel as find, field_name, fields
from .project import Project
from .registry import Registry


@functools.lru_cache(maxsize=None)
def _params(channel: Channel) -> tuple[tuple[str, str], ...]:
    """(payload field, handler parameter) for every field the handler takes."""
    by_field = {field_name(p): p for p in list(inspect.signature(channel.function).parameters)[1:]}
    return tuple((f, by_field[f]) for f in fields(channel) if f in by_field)


def arguments(channel: Channel, checked: Any) -> dict[str, Any]:
    """The handler's keyword arguments from a checked payload (its `projectId` chose the project)."""
    return {param: getattr(checked, f) for f, param in _params(channel)}


def scope(channel: Channel, checked: Any) -> Any:
    """The cancellation scope a channel runs in: bounded by the payload's `deadlineMs`, with checkpoints
    that fire only when the channel is `cancellable` (catalog.py); refuses at once a call already
    canceled (the sidecar's `$/cancelRequest`) or past its deadline."""
    return cancel.scope(getattr(checked, cancel.DEADLINE_FIELD, None), cancellable(channel))


def run(channel: Channel, bank: Project, checked: Any, extras: dict[str, Any] | None = None) -> Any:
    """Call a bank channel's handler. A read runs under the index lock: one apsw connection must not
    serve two threads at once (a watcher may be writing); inside `index.store.reading()` (the
    sidecar) the lock is a no-op and the read has a connection and snapshot of its own. A `snapshot`
    channel (a long read) gets its snapshot so wherever it is called."""
    kwargs = {**arguments(channel, checked), **(extras or {})}
    bank.check_present()  # a project deleted under the process: NOT_FOUND, nothing read or written
    # `.index/` deleted under the process: a new index from the files first, so nothing is written into the
    # unlinked file. Not from a sidecar's read thread (its snapshot: the watcher remakes it), nor for
    # `index:sync`, which makes it itself.
    if not bank.index.in_snapshot() and channel.name != "index:sync":
        bank.renew_index()
    if channel.mode == "read":
        with reading() if channel.snapshot else bank.index.lock:
            return channel.function(bank, **kwargs)
    return channel.function(bank, **kwargs)


def dispatch(registry: Registry, name: str, payload: Any, **extras: Any) -> dict[str, Any]:
    """Run one channel; always an envelope, never an exception. `extras` are handler arguments that
    are no payload field (the CLI's progress callback for `index:sync`)."""
    channel = find(name)  # its domain's table imported now, not every domain's
    if channel is None:
        return MembankError(errors.NOT_FOUND, f"no channel named `{name}`", {"channel": name}).envelope()
    try:
        checked = build(channel.payload, payload)
        with scope(channel, checked):
            if channel.target == "registry":
                return {"ok": True, "data": channel.function(registry, **arguments(channel, checked))}
            bank = registry.get(getattr(checked, "projectId", None))
            if channel.embeds:
                # loaded outside the write lock: loading takes ~0.4 s, the write ~10 ms, and writers
                # from other processes queue for the lock (lock.py); a loaded model costs nothing here
                bank.embedder()
            return {"ok": True, "data": run(channel, bank, checked, extras)}
    except MembankError as e:
        return e.envelope()
    except (StorageError, IndexError_, OSError) as e:  # SQLite or the disk failed (disk full, damaged file)
        log.warning("storage error in %s: %s", name, e.__class__.__name__)
        return storage_error(e).envelope()
    except Exception:  # a bug: say so, keep serving
        log.exception("internal error in %s", name)
        return MembankError(errors.INTERNAL, f"internal error in {name}; this is a bug in membank, see its log").envelope()
