"""The channels of working memory (episodes.md "Working memory", docs/working-memory.md). Every one is a
write: each changes the process's state (even a list reads it under the same lock as the changes, on
the project's write lane, so it sees the adds sent before it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal, TypedDict

from ...kernel.payload import Content, Id, Most, Within
from ..contract import Channel, Lazy
from ..episodes.channels import Episode

Kind = Annotated[str, Most(chars=64)]  # a free lower-case word: signal, selection, instruction, note, …
Focus = Annotated[str, Most(chars=20_000)]  # what the writer is working on now: a passage, a scene, a name


@dataclass(frozen=True)
class WorkingAdd:
    sessionId: Id
    kind: Kind
    content: Content
    importance: Annotated[float, Within(0, 1)]
    focus: Focus | None = None
    projectId: Id | None = None


@dataclass(frozen=True)
class WorkingSession:
    sessionId: Id
    projectId: Id | None = None


class WorkingEntry(TypedDict):
    id: str
    projectId: str
    sessionId: str
    kind: str
    content: str
    tokenCount: int
    importance: float  # the highest given to it
    count: int  # times added in this session
    reached: bool  # a signal that reached the learning threshold: the session's end archives it
    createdAt: str
    updatedAt: str


class WorkingAdded(TypedDict):
    entry: WorkingEntry
    evicted: list[WorkingEntry]  # in the order they went
    tokens: int  # the session's tokens now
    capTokens: int  # lifecycle.workingTokens
    relation: Literal["semantic", "words"] | None  # how ties were ranked by the focus (null: no eviction or no focus)


class WorkingList(TypedDict):
    sessionId: str
    items: list[WorkingEntry]  # oldest first
    tokens: int
    capTokens: int
    focus: str | None
    threshold: int  # memory.preferenceLearningThreshold: a signal added this many times is archived


class SessionEnded(TypedDict):
    sessionId: str
    ended: bool  # false when no such session was open (nothing to end)
    archived: list[Episode]  # one episode per signal that reached the threshold, each citing its journal line
    dropped: int  # entries forgotten


CHANNELS = (
    Channel("memory:working:add", WorkingAdd, WorkingAdded, Lazy("membank.domains.working.flows", "add"), "write",
            "working-add", "Hold an entry in a session's working memory (in this process only, never on disk); "
            "over the token cap the lowest importance goes first, then what is least related to the focus. A CLI "
            "session lasts one command.", "add_working"),
    Channel("memory:working:list", WorkingSession, WorkingList, Lazy("membank.domains.working.flows", "listing"),
            "write", "working", "A session's working memory, oldest first (held in this process only: a CLI "
            "session lasts one command, so it is empty there).", "list_working"),
    Channel("memory:session:end", WorkingSession, SessionEnded, Lazy("membank.domains.working.flows", "end"), "write",
            "session-end", "End a session: its signals that reached the learning threshold become episodes "
            "(journaled), the rest is dropped. Closing the project ends every session the same way.", "end_session",
            embeds=True),
)
