"""The working memory of one open project: its sessions and their entries, in this process's memory
only. Nothing here is ever written to disk; it is gone when the process ends (closing the project
first archives what `decide.reached` says, flows.py)."""

from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Any

from . import decide


@dataclass
class Entry:
    """One entry of a session (seed 003: id, projectId, sessionId, kind, tokenCount, importance,
    createdAt, updatedAt; and how many times it was added)."""

    id: str
    kind: str
    content: str
    tokens: int
    importance: float
    count: int  # times added in this session: the same kind and text again refreshes the entry
    created_at: str
    updated_at: str
    touched: int  # the store's tick when last added: the eviction's last tie-break
    words: frozenset[str] | None = None  # its words, kept once measured (the relation without a model)
    vector: tuple[str, Any] | None = None  # (model name, unit vector), kept once embedded

    def held(self) -> decide.Held:
        return decide.Held(self.id, self.tokens, self.importance, self.touched)


@dataclass
class Session:
    id: str
    entries: dict[str, Entry] = field(default_factory=dict)  # by id, in the order they were created
    keys: dict[tuple[str, str], str] = field(default_factory=dict)  # decide.key -> entry id
    focus: str | None = None  # the current focus: the last `focus` an add gave
    focus_words: frozenset[str] | None = None
    focus_vector: tuple[str, Any] | None = None

    @property
    def tokens(self) -> int:
        return sum(e.tokens for e in self.entries.values())

    def set_focus(self, focus: str) -> None:
        """A new focus ("" clears it); its measures are made again when next needed."""
        text = focus.strip() or None
        if text != self.focus:
            self.focus, self.focus_words, self.focus_vector = text, None, None

    def remove(self, entry: Entry) -> None:
        del self.entries[entry.id]
        self.keys.pop(decide.key(entry.kind, entry.content), None)


class Store:
    """Every session of one project. One re-entrant lock guards all of it: the sidecar runs these
    channels on the project's write lane, but the Python API may call from any thread, and closing the
    project ends every session from yet another."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.sessions: dict[str, Session] = {}
        self.closed = False  # the project closed: every session was ended, no new entry is taken
        self._ticks = itertools.count(1)

    def tick(self) -> int:
        return next(self._ticks)
