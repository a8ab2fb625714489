"""The channel catalog: every domain's table of channels, collected in one place.

A new domain is added by writing its package (with a `channels.py` holding a `CHANNELS` table) and
one line in SOURCES below, then `python -m membank.runtime.catalog` (it rewrites runtime/directory.py).
The CLI, the Python API, the sidecar, the JSON Schemas and the docs' channel list all read this
catalog; tests/test_catalog.py fails when a channel lacks any of them, or the directory is stale.

A command runs one channel: `channel(name)` imports the table of that channel's domain only (the
directory, made from the tables, says which), and `describe` gives a command its name and help from
the directory, so `membank status` does not import sixteen tables' payloads and data types (~290 M
of the ~1,020 M instructions that importing the CLI took). `CATALOG`, `TABLES` and `READS` are every
table, imported at their first use (the sidecar, the Python API, the schemas, the docs)."""

from __future__ import annotations

import dataclasses
import functools
import re
import sys
from pathlib import Path
from typing import Any

from ..domains.contract import Channel, Lazy
from ..kernel.cancel import DEADLINE_FIELD
from . import directory

SOURCES: tuple[Lazy, ...] = (  # each domain's table, in the order the docs and `membank --help` list them
    Lazy("membank.runtime.registry", "CHANNELS"),
    Lazy("membank.domains.indexing.channels", "CHANNELS"),
    Lazy("membank.domains.memories.channels", "CHANNELS"),
    Lazy("membank.domains.settings.channels", "CHANNELS"),
    Lazy("membank.domains.recall.channels", "CHANNELS"),
    Lazy("membank.domains.learning.channels", "CHANNELS"),
    Lazy("membank.domains.skills.channels", "CHANNELS"),
    Lazy("membank.domains.context.channels", "CHANNELS"),
    Lazy("membank.domains.story.channels", "CHANNELS"),
    Lazy("membank.domains.episodes.channels", "CHANNELS"),
    Lazy("membank.domains.lifecycle.channels", "CHANNELS"),
    Lazy("membank.domains.working.channels", "CHANNELS"),
    Lazy("membank.domains.cards.channels", "CHANNELS"),
    Lazy("membank.domains.git.channels", "CHANNELS"),
    Lazy("membank.domains.manuscript.channels", "CHANNELS"),
    Lazy("membank.domains.capture.channels", "CHANNELS"),
)
_SOURCE = {source.module: source for source in SOURCES}
_CAMEL = re.compile(r"_([a-z])")


def _everything() -> dict[str, Any]:
    tables: tuple[tuple[Channel, ...], ...] = tuple(source.resolve() for source in SOURCES)  # type: ignore[misc]
    catalog = {c.name: c for table in tables for c in table}
    if len(catalog) != sum(len(t) for t in tables):
        raise RuntimeError("two channels share a name")
    return {"TABLES": tables, "CATALOG": catalog,
            "READS": frozenset(name for name, c in catalog.items() if c.mode == "read")}


def __getattr__(name: str) -> Any:
    """`CATALOG` (every channel by name), `TABLES` (each domain's table) and `READS` (the channels that
    only read), made once at the first use of any of them."""
    if name not in ("CATALOG", "TABLES", "READS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _made(name)


def _made(name: str) -> Any:
    """One of the three, made at most once: a second set of them would leave whoever holds the first (a
    caller that imported `CATALOG`, a test that patched it) with another catalog than the commands'."""
    if name not in globals():
        globals().update(_everything())  # later lookups find them without coming here
    return globals()[name]


_FOUND: dict[str, Channel] = {}  # the channels asked for so far (a name that is none is not kept)


def channel(name: str) -> Channel | None:
    """The channel `name`, its domain's table imported now if not yet; None when there is no such channel."""
    found = _FOUND.get(name)
    if found is None:
        known = directory.CHANNELS.get(name)
        source = _SOURCE.get(known[0]) if known is not None else None  # a table moved: not among the sources
        table = source.resolve() if source is not None else ()
        found = next((c for c in table if c.name == name), None)  # type: ignore[attr-defined]
        if found is None:  # no such channel, or a directory not rewritten after a change: slower, still right
            found = _made("CATALOG").get(name)
        if found is not None:
            _FOUND[name] = found
    return found


def describe(name: str) -> tuple[str, str]:
    """(CLI command, summary) of the channel `name`, without importing its table when the directory has it."""
    known = directory.CHANNELS.get(name)
    if known is not None:
        return known[1], known[2]
    found = _made("CATALOG")[name]
    return found.cli, found.summary


def field_name(param: str) -> str:
    """A handler's parameter as its payload field: `document_id` -> `documentId`, `type_` -> `type`."""
    if param == "memory_id":
        return "id"
    return _CAMEL.sub(lambda m: m.group(1).upper(), param.rstrip("_"))


def fields(channel: Channel) -> tuple[str, ...]:
    """The payload's fields, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(channel.payload))


@functools.lru_cache(maxsize=None)
def cancellable(channel: Channel) -> bool:
    """Whether a call can stop halfway: its payload has `deadlineMs` (kernel/payload.py `DeadlineMs`). Such a
    channel honours the deadline and `$/cancelRequest` at its checkpoints (kernel/cancel.py); any other
    channel can be canceled only while it waits to run, and once running runs to its end."""
    return DEADLINE_FIELD in fields(channel)


# -- the directory -----------------------------------------------------------------------------------


def directory_entries() -> dict[str, tuple[str, str, str]]:
    """What runtime/directory.py must hold: each channel's table (by module), CLI command and summary."""
    return {c.name: (source.module, c.cli, c.summary) for source in SOURCES for c in source.resolve()}  # type: ignore[attr-defined]


def directory_text() -> str:
    lines = ['"""Which table declares each channel, with its CLI command and summary: what a command needs before',
             "it runs one channel (runtime/catalog.py). Made from the tables by `python -m membank.runtime.catalog`;",
             'do not edit (tests/test_catalog.py fails when it is stale)."""', "",
             "from __future__ import annotations", "",
             "CHANNELS: dict[str, tuple[str, str, str]] = {  # channel: (module of its table, CLI command, summary)"]
    lines += [f"    {name!r}: ({module!r}, {cli!r},\n        {summary!r})," for name, (module, cli, summary)
              in directory_entries().items()]
    return "\n".join(lines + ["}", ""])


def main() -> int:
    path = Path(__file__).with_name("directory.py")
    text = directory_text()
    if path.read_text("utf-8") != text:
        path.write_text(text, "utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
