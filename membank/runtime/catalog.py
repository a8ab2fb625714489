"""The channel catalog: every domain's table of channels, collected in one place.

A new domain is added by writing its package (with a `channels.py` holding a `CHANNELS` table) and
one line below. The CLI, the Python API, the sidecar, the JSON Schemas and the docs' channel list
all read this catalog; tests/test_catalog.py fails when a channel lacks any of them."""

from __future__ import annotations

import dataclasses
import functools
import re

from ..domains.capture import channels as capture
from ..domains.cards import channels as cards
from ..domains.context import channels as context
from ..domains.contract import Channel
from ..domains.episodes import channels as episodes
from ..domains.git import channels as git
from ..domains.indexing import channels as indexing
from ..domains.learning import channels as learning
from ..domains.lifecycle import channels as lifecycle
from ..domains.manuscript import channels as manuscript
from ..domains.memories import channels as memories
from ..domains.recall import channels as recall
from ..domains.settings import channels as settings
from ..domains.skills import channels as skills
from ..domains.story import channels as story
from ..domains.working import channels as working
from ..kernel.cancel import DEADLINE_FIELD
from . import registry

TABLES: tuple[tuple[Channel, ...], ...] = (
    registry.CHANNELS,
    indexing.CHANNELS,
    memories.CHANNELS,
    settings.CHANNELS,
    recall.CHANNELS,
    learning.CHANNELS,
    skills.CHANNELS,
    context.CHANNELS,
    story.CHANNELS,
    episodes.CHANNELS,
    lifecycle.CHANNELS,
    working.CHANNELS,
    cards.CHANNELS,
    git.CHANNELS,
    manuscript.CHANNELS,
    capture.CHANNELS,
)

CATALOG: dict[str, Channel] = {c.name: c for table in TABLES for c in table}
if len(CATALOG) != sum(len(t) for t in TABLES):
    raise RuntimeError("two channels share a name")

READS = frozenset(name for name, c in CATALOG.items() if c.mode == "read")
_CAMEL = re.compile(r"_([a-z])")


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
