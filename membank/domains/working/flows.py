"""Working memory's flows: adding an entry (evicting under the cap), listing a session, and ending one
(archiving its signals that reached the learning threshold as episodes). Only the end writes, and only
those episodes; everything else stays in this process (thin shells; the decisions are in decide.py)."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from ...files.write import new_id
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ...kernel.log import log
from ...kernel.text import estimate_tokens
from ..contract import Bank
from ..episodes import flows as episodes
from ..episodes.episode import to_api
from . import decide
from .sessions import Entry, Session, Store

MEMO = "working"  # bank.memo: the project's Store
_MAKING = threading.Lock()


def store_of(bank: Bank) -> Store:
    """The project's sessions, made on first use; closing the project ends them all first (`end_all`)."""
    found = bank.memo.get(MEMO)
    if found is None:
        with _MAKING:
            found = bank.memo.get(MEMO)
            if found is None:
                found = bank.memo[MEMO] = Store()
                bank.closers.append(lambda: end_all(bank))
    return found  # type: ignore[no-any-return]


def _settings(bank: Bank) -> tuple[int, int]:
    """The token cap per session and the learning threshold, as settings say now."""
    return (int(bank.settings_files.lifecycle()["workingTokens"]),
            int(bank.settings_files.memory()["preferenceLearningThreshold"]))


def _api(bank: Bank, session_id: str, e: Entry, threshold: int) -> dict[str, Any]:
    return {"id": e.id, "projectId": bank.info.id, "sessionId": session_id, "kind": e.kind, "content": e.content,
            "tokenCount": e.tokens, "importance": e.importance, "count": e.count,
            "reached": decide.reached(e.kind, e.count, threshold), "createdAt": e.created_at, "updatedAt": e.updated_at}


def _check(session_id: str, kind: str, content: str) -> None:
    if not session_id.strip():
        raise errors.invalid("sessionId", "`sessionId` is empty")
    if not decide.kind_of(kind):
        raise errors.invalid("kind", "`kind` is empty (e.g. signal, selection, instruction, note)")
    if not content.strip():
        raise errors.invalid("content", "`content` is empty")


def _closed() -> MembankError:
    return MembankError(errors.DB_ERROR, "the project is closed; its working memory was ended (open it again)")


def add(bank: Bank, session_id: str, kind: str, content: str, importance: float,
        focus: str | None = None) -> dict[str, Any]:
    """`memory:working:add`: hold an entry in a session, evicting others if the cap needs it."""
    _check(session_id, kind, content)
    cap, threshold = _settings(bank)
    tokens = estimate_tokens(content)
    if not decide.fits(tokens, cap):
        raise errors.invalid("content", f"`content` is about {tokens:,} tokens, more than a session holds in all "
                             f"({cap:,}, lifecycle.workingTokens); add it in parts or raise the setting")
    store = store_of(bank)
    with store.lock:
        if store.closed:
            raise _closed()
        session = store.sessions.get(session_id)
        if session is None:
            if len(store.sessions) >= decide.MAX_SESSIONS:
                raise errors.invalid("sessionId", f"{decide.MAX_SESSIONS} sessions are open in this project; "
                                     "end one (`memory:session:end`) before starting another")
            session = Session(session_id)
        if focus is not None:
            session.set_focus(focus)
        same = session.keys.get(decide.key(kind, content))
        existing = session.entries.get(same) if same is not None else None
        others = [e for e in session.entries.values() if e is not existing]
        relation: dict[str, float] = {}
        measure = None
        if sum(e.tokens for e in others) + tokens > cap and session.focus is not None:
            relation, measure = _relations(bank, session, others)
        chosen = decide.victims([e.held() for e in others], tokens, cap, relation)
        gone = [session.entries[h.id] for h in chosen]
        for e in gone:
            session.remove(e)
        now = clock.now_precise()
        if existing is not None:
            if existing.content != content:
                existing.content, existing.words, existing.vector = content, None, None
            existing.tokens = tokens
            existing.importance = max(existing.importance, importance)
            existing.count += 1
            existing.updated_at, existing.touched = now, store.tick()
            entry = existing
        else:
            entry = Entry(new_id("w"), decide.kind_of(kind), content, tokens, importance, 1, now, now, store.tick())
            session.entries[entry.id] = entry
            session.keys[decide.key(kind, content)] = entry.id
        store.sessions[session_id] = session
        return {"entry": _api(bank, session_id, entry, threshold),
                "evicted": [_api(bank, session_id, e, threshold) for e in gone],
                "tokens": session.tokens, "capTokens": cap, "relation": measure if gone else None}


def _relations(bank: Bank, session: Session, entries: list[Entry]) -> tuple[dict[str, float], str]:
    """How related each entry is to the session's focus: the cosine of their vectors when the model is
    loaded and knows the focus's words ("semantic"), else the overlap of their words ("words")."""
    focus = session.focus or ""
    model = bank.embedder()
    if model is not None:
        if session.focus_vector is None or session.focus_vector[0] != model.name:
            session.focus_vector = (model.name, model.encode([focus])[0])
        target = session.focus_vector[1]
        if target.any():
            missing = [e for e in entries if e.vector is None or e.vector[0] != model.name]
            for e, vector in zip(missing, model.encode([e.content for e in missing])):
                e.vector = (model.name, vector)
            return {e.id: round(float(np.dot(e.vector[1], target)), 6) for e in entries if e.vector}, "semantic"
    if session.focus_words is None:
        session.focus_words = decide.words(focus)
    for e in entries:
        if e.words is None:
            e.words = decide.words(e.content)
    return {e.id: decide.overlap(e.words or frozenset(), session.focus_words) for e in entries}, "words"


def listing(bank: Bank, session_id: str) -> dict[str, Any]:
    """`memory:working:list`: a session's entries, oldest first (an unknown session is empty)."""
    cap, threshold = _settings(bank)
    store = store_of(bank)
    with store.lock:
        session = store.sessions.get(session_id) or Session(session_id)
        return {"sessionId": session_id, "items": [_api(bank, session_id, e, threshold) for e in session.entries.values()],
                "tokens": session.tokens, "capTokens": cap, "focus": session.focus, "threshold": threshold}


def immediate(bank: Bank, session_id: str, budget: int
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """A prompt's "this session" block (context.md, Working memory): the session's entries, most
    important first, within `budget` tokens, as `memory:working:list` shows them, and those left out (in
    the order they were added); None for a session this process does not hold. Reads only: no store or
    session is made for it."""
    store = bank.memo.get(MEMO)
    if store is None:
        return None
    _, threshold = _settings(bank)
    with store.lock:
        session = store.sessions.get(session_id)
        if session is None:
            return None
        shown = decide.immediate([e.held() for e in session.entries.values()], budget)
        taken = {s.id for s in shown}
        return ([_api(bank, session_id, session.entries[s.id], threshold) for s in shown],
                [_api(bank, session_id, e, threshold) for i, e in session.entries.items() if i not in taken])


def _archive(bank: Bank, entry: Entry) -> dict[str, Any]:
    """One signal as an episode: its text as the summary (left out in privacy mode), its kind and
    `working-memory` as tags, its importance; an accept, so membank derives DIRECT_ACCEPT (+1.00)."""
    fields = episodes.Fields(action="accept", importance=entry.importance,
                             summary=entry.content.strip()[:decide.SUMMARY_CHARS],
                             tags=(entry.kind, decide.ARCHIVE_TAG))
    return to_api(episodes.persist(bank, new_id("e"), fields))


def end(bank: Bank, session_id: str) -> dict[str, Any]:
    """`memory:session:end`: archive the session's signals that reached the learning threshold as
    episodes, drop every other entry, forget the session. An unknown session ends empty (`ended`:
    false). If an episode cannot be written the error comes back and the session keeps what was not
    archived yet, so ending it again retries."""
    _, threshold = _settings(bank)
    store = store_of(bank)
    with store.lock:
        session = store.sessions.get(session_id)
        if session is None:
            return {"sessionId": session_id, "ended": False, "archived": [], "dropped": 0}
        archived = []
        signals = [e for e in session.entries.values() if decide.reached(e.kind, e.count, threshold)]
        if signals:
            bank.embedder()  # the episodes are embedded as they are indexed: load the model before the write lock
        for e in signals:
            archived.append(_archive(bank, e))
            session.remove(e)
        dropped = len(session.entries)
        del store.sessions[session_id]
        return {"sessionId": session_id, "ended": True, "archived": archived, "dropped": dropped}


def end_all(bank: Bank) -> None:
    """Closing the project: every session ends as `memory:session:end` would, before the project's
    writer closes; a session whose episodes cannot be written is logged and dropped (nowhere is left
    to keep it). No entry is taken after this."""
    store = store_of(bank)
    with store.lock:
        store.closed = True
        for session_id in list(store.sessions):
            try:
                end(bank, session_id)
            except Exception as e:  # the project is closing either way: say what was lost
                message = e.message if isinstance(e, MembankError) else e.__class__.__name__
                log.error("working memory session %r could not be archived on close: %s", session_id[:80], message,
                          exc_info=not isinstance(e, MembankError))
            store.sessions.pop(session_id, None)
