"""Preference learning's flows: feedback into the journal, signals counted, learned preference files
written (thin shells over the bank; the decisions are in decisions.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...files import journal
from ...files.exchange import Changed, fsync_dir, replace_unchanged
from ...files.reader import Unreadable, read_regular
from ...files.write import check_inside, free_path, slug
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ...kernel.log import log
from ..contract import Bank
from ..memories import read, write
from . import events
from .decisions import (LEARNED_FOLDER, MIN_EVIDENCE, POLARITY, WEIGHT, EVIDENCE_TOO_SHORT, LEARNING_DISABLED,
                        closest, confidence, evidence_hash, holds_text, learned_id, normalize, signal_key, without_labels,
                        worded_from_label, wording)



def _clean_journals(bank: Bank) -> dict[str, tuple[int, int]]:
    """Journal files seen without label text, by path and (size, mtime): privacy mode reads each once."""
    return bank.memo.setdefault("learning.clean_journals", {})


@dataclass(frozen=True)
class Feedback:
    run_id: str
    skill_id: str
    action: str
    evidence_ref: str
    tags: tuple[str, ...] = ()


def ingest(bank: Bank, fb: Feedback, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Journal one feedback (with `extra` fields on the same line: `ai:skill:feedback`'s episode) and
    learn from it."""
    normalized = normalize(fb.evidence_ref)
    polarity = POLARITY[fb.action]
    with bank.write_lock, bank.index.lock:  # the index lock too: its reads share one connection
        # settings are read under the lock: privacy mode turned on by another process just before
        # (it takes this lock to write settings.yaml) must hold for this very feedback
        settings = bank.settings_files.memory()
        privacy = settings["privacyModeEnabled"]
        threshold = settings["preferenceLearningThreshold"]
        reason = None
        if len(normalized) < MIN_EVIDENCE:
            reason = EVIDENCE_TOO_SHORT
        elif not settings["preferenceLearningEnabled"]:
            reason = LEARNING_DISABLED
        event: dict[str, Any] = {"event": "feedback", "runId": fb.run_id, "skillId": fb.skill_id,
                                 "action": fb.action, "evidenceHash": evidence_hash(normalized),
                                 "tags": list(fb.tags), "weight": WEIGHT[fb.action]}
        if not privacy:
            event["evidence"] = fb.evidence_ref.strip()
        if privacy:
            forget_labels(bank)  # whatever was journalled before privacy mode, no label text stays
        cleared = events.last_event(bank.index, "preferences-cleared")
        key = signal_key(polarity, normalized)
        if reason is None and not privacy:
            key = _same_signal(bank, key, normalized, polarity, cleared) or key
        event["signalKey"] = key
        if reason is not None:
            event["ignored"] = reason
        event.update(extra or {})
        _append(bank, event)
        count, _, _ = events.signal(bank.index, key, cleared)
        result: dict[str, Any] = {"ignored": reason is not None, "signalKey": key, "count": count,
                                  "threshold": threshold}
        if reason is not None:
            result["reason"] = reason
            return result
        learned = _learn(bank, key, polarity, threshold, cleared, privacy)
        if learned is not None:
            result["learned"] = learned
        return result


def clear(bank: Bank) -> dict[str, Any]:
    """Soft-delete every live learned preference of the project and start the counts again."""
    with bank.write_lock, bank.index.lock:  # the index lock too: its reads share one connection
        event = {"event": "preferences-cleared", "at": clock.now_precise()}
        _check_journal(bank, event["at"])  # validate first, write second: a refused journal deletes nothing
        privacy = bank.settings_files.memory()["privacyModeEnabled"]
        learned = [m for m in read.list_(bank, origin="learned")["items"] if m["scope"] != "global"]
        for memory in learned:
            if privacy:
                _reword_for_privacy(bank, memory)
            write.delete(bank, memory["id"])
        _append(bank, event)
    return {"cleared": len(learned)}


def _reword_for_privacy(bank: Bank, memory: dict[str, Any]) -> None:
    """Privacy mode: a learned file still worded from its label is reworded (and renamed) before any
    other rewrite of it, so no write in privacy mode carries the label's text."""
    key = memory.get("metadata", {}).get("signal")
    if not isinstance(key, str) or ":" not in key or not worded_from_label(memory["content"], key):
        return
    updated = write.update(bank, memory["id"], {"content": wording(key.split(":", 1)[0], None, memory["tags"])})
    _rename_for_privacy(bank, updated)




def _check_journal(bank: Bank, at: str) -> None:
    try:
        journal.check_target(bank.project.path, at, bank.project.source)
    except OSError as e:
        raise MembankError(errors.DB_ERROR, f"could not write the journal: {e.strerror or e.__class__.__name__}") from None


def forget_labels(bank: Bank) -> list[str]:
    """Privacy mode: every journal file of the project that still holds a label's text (journalled
    before privacy mode was on) is rewritten without it; the hashes stay, so every signal keeps its
    count. Files seen clean before (same size and time) are not read again. Returns the rewritten
    files' paths under the bank. Only regular files inside the bank are read or written."""
    root = bank.project
    folder = root.path / journal.FOLDER
    try:
        check_inside(root.path, folder, root.source)
        names = sorted(n for n in os.listdir(folder) if n.endswith(".jsonl"))
    except (OSError, MembankError):
        return []  # no journal, or one behind a link out of the bank: nothing of membank's to rewrite
    done = []
    for name in names:
        rel = f"{journal.FOLDER}/{name}"
        path = folder / name
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if _clean_journals(bank).get(rel) == (st.st_size, st.st_mtime_ns):
            continue  # seen without labels, unchanged since: not read again
        try:  # membank's own journal: an ordinary file, never through a link
            data, at_read = read_regular(path, None, follow_links=False)
        except (OSError, Unreadable):
            continue
        stamp = (at_read.st_size, at_read.st_mtime_ns)
        redacted = without_labels(data) if holds_text(data) else data
        if redacted != data:
            try:
                replace_unchanged(path, redacted, data)
            except Changed:  # edited by hand this instant: the next feedback in privacy mode tries again
                continue
            except OSError as e:
                raise MembankError(errors.DB_ERROR, f"could not take label text out of {root.source(rel)}: "
                                   f"{e.strerror or e.__class__.__name__}") from None
            bank.sync_one(root, rel)
            done.append(rel)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            stamp = (st.st_size, st.st_mtime_ns)
        _clean_journals(bank)[rel] = stamp
    return done


def write_journal(bank: Bank, event: dict[str, Any], durable: bool = True, folder: str = journal.FOLDER) -> str:
    """Append one event to the project's journal (the month's file under the bank, returned; `folder`
    `journal.TRACES` for bookkeeping git does not track); a failure of the disk is the stable DB_ERROR,
    never a path."""
    try:
        return journal.append(bank.project.path, event, bank.project.source, durable=durable, folder=folder)
    except OSError as e:
        raise MembankError(errors.DB_ERROR, f"could not write the journal: {e.strerror or e.__class__.__name__}") from None


def _append(bank: Bank, event: dict[str, Any]) -> None:
    bank.sync_one(bank.project, write_journal(bank, event))


def _same_signal(bank: Bank, key: str, normalized: str, polarity: str, since: str | None) -> str | None:
    """An existing signal that says the same thing in other words (needs the embedding model)."""
    phrases = events.signal_phrases(bank.index, polarity, since)
    if not phrases or any(k == key for k, _ in phrases):
        return None  # heard before in these very words, or nothing to compare with
    model = bank.embedder()
    if model is None:
        return None
    vectors = model.encode([normalized] + [normalize(p) for _, p in phrases])
    if not vectors[0].any():
        return None
    return closest(normalized, vectors[0], phrases, vectors[1:])


def _learn(bank: Bank, key: str, polarity: str, threshold: int, cleared: str | None,
           privacy: bool) -> dict[str, Any] | None:
    """Write the learned preference when the signal reaches the threshold; later signals count in the
    journal only (files.md, Git): a file rewritten at every feedback conflicted at every merge of two
    machines that both gave some. It is written again only when it comes back or must be reworded.

    A learned file the writer deleted (or soft-deleted) comes back only through signals newer
    than membank's last write of it: the old ones were already heard and turned down.

    In privacy mode the text is worded from the tags, whatever the journal heard before, and a
    learned file still worded from a label (`Prefer: <label>`, written before privacy mode) is
    reworded when it is updated; a text the writer wrote there is theirs and stays."""
    memory_id = learned_id(key)
    found = bank.index.find("memory", memory_id)
    live = found is not None and found[1]["deletedAt"] is None
    since = cleared if live else max(filter(None, (cleared, events.last_event(bank.index, "learned", key))), default=None)
    count, runs, tags = events.signal(bank.index, key, since)
    if count < threshold:
        return None
    reword = privacy and found is not None and worded_from_label(found[1]["content"], key)
    if live and not reword:
        return None  # learned already: its confidence and evidence stay as they were when it was learned
    label = None if privacy else dict(events.signal_phrases(bank.index, polarity, cleared)).get(key)
    fields: dict[str, Any] = {"confidence": confidence(count, threshold), "evidence": [f"run:{r}" for r in runs[-20:]],
                              "tags": tags}
    if reword:
        fields["content"] = wording(polarity, None, tags)
    try:
        if found is None:
            memory = write.write_new(bank, "preference", "project", wording(polarity, label, tags),
                                        tags=tags, confidence=fields["confidence"], evidence=fields["evidence"],
                                        metadata={"signal": key}, origin="learned", folder=LEARNED_FOLDER,
                                        memory_id=memory_id)
        else:
            memory = write.update(bank, memory_id, fields)  # before the restore: no write holds the old text
            if not live:
                memory = write.restore(bank, memory_id)
            if "content" in fields:
                memory = _rename_for_privacy(bank, memory)
    except MembankError as e:  # the writer is editing that file right now: the signal still counted
        log.warning("learned preference %s not written: %s", memory_id, e.message)
        return None
    if not live:
        _append(bank, {"event": "learned", "signalKey": key, "memoryId": memory_id})
    return memory


def _rename_for_privacy(bank: Bank, memory: dict[str, Any]) -> dict[str, Any]:
    """A learned file reworded for privacy mode is renamed too: its name was made from the label's
    words. The new name comes from the new text, in the same folder; a taken name is never replaced."""
    root = bank.project
    rel = root.rel(memory["source"])
    if rel is None or memory["scope"] == "global":
        return memory
    path = root.file(rel)
    target = free_path(path.parent, slug(memory["content"]))
    check_inside(root.path, target, root.source)
    try:
        try:
            os.link(path, target)  # fails if the name was taken meanwhile
            os.unlink(path)
        except (AttributeError, NotImplementedError, PermissionError):  # no hard links on this file system
            if target.exists():
                raise FileExistsError(target.name) from None
            os.rename(path, target)
    except OSError as e:
        log.warning("learned preference %s keeps its file name: %s", memory["id"], e.strerror or e.__class__.__name__)
        return memory
    fsync_dir(path.parent)
    new_rel = target.relative_to(root.path).as_posix()
    with bank.index.transaction():
        bank.sync_one(root, rel)
        bank.sync_one(root, new_rel)
        bank.index.drop_moved_tombstones([root.source(rel), root.source(new_rel)])  # moved, not removed
    return read.get(bank, memory["id"])
