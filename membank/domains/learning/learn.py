"""Preference learning: feedback into the journal, signals counted, learned preference files written."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import unicodedata
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...kernel import errors
from ...kernel.errors import MembankError
from ...files import journal
from ...files.exchange import Changed, fsync_dir, replace_unchanged
from ...files.reader import Unreadable, read_regular
from ...files.write import check_inside, free_path, slug

if TYPE_CHECKING:
    from ...runtime.project import Bank

log = logging.getLogger("membank")

PREFER, AVOID = "prefer", "avoid"
POLARITY = {"accept": PREFER, "partial": PREFER, "reject": AVOID}
WEIGHT = {"accept": 1.0, "partial": 0.5, "reject": 1.0}  # a partial accept counts half
MIN_EVIDENCE = 2
EVIDENCE_TOO_SHORT = "EVIDENCE_TOO_SHORT"
LEARNING_DISABLED = "LEARNING_DISABLED"
LEARNED_FOLDER = "learned"
# Two phrases are one signal when their vectors are this close AND their words differ only by
# the neutral words below: static embeddings put opposites close ("more dialogue" ~ "less
# dialogue" is 0.90 with the bundled model), so similarity alone would merge them.
SIMILARITY = 0.85
NEUTRAL = frozenset("a an the of to in on for with and my your our their its be is are keep use using make try "
                    "always please prefer write writing".split())
NEGATION = frozenset("no not never avoid without don't dont stop less-of".split())
_WORD = re.compile(r"[\w'’-]+")


# -- decisions (pure) ---------------------------------------------------------------------------------


def normalize(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed: the signal's identity."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def evidence_hash(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:16]


def signal_key(polarity: str, normalized: str) -> str:
    """`prefer:<hash>` or `avoid:<hash>`: the same in privacy mode and out of it."""
    return f"{polarity}:{evidence_hash(normalized)}"


def learned_id(key: str) -> str:
    polarity, digest = key.split(":", 1)
    return f"m-learned-{polarity}-{digest[:12]}"


def confidence(count: float, threshold: int) -> float:
    """0.5 at the threshold, 0.75 at twice it, approaching 1."""
    return round(1.0 - 0.5 ** (count / threshold), 3)


def wording(polarity: str, evidence: str | None, tags: list[str]) -> str:
    """The learned preference's text: the evidence phrase, or (privacy) its tags, never raw text."""
    verb = "Prefer" if polarity == PREFER else "Avoid"
    if evidence:
        return f"{verb}: {' '.join(evidence.split())}"
    if tags:
        return f"{verb} what was marked {', '.join(tags)} (learned from feedback whose text is private)."
    return f"{verb} what the writer {'accepted' if polarity == PREFER else 'rejected'} in recent runs " \
           "(learned from feedback whose text is private)."


def _content_words(text: str) -> frozenset[str]:
    words = set()
    for word in _WORD.findall(text):
        if word in NEUTRAL:
            continue
        if word in NEGATION:
            words.add("<not>")
            continue
        words.add(word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word)
    return frozenset(words)


def same_meaning(a: str, b: str, similarity: float) -> bool:
    """Whether two normalized phrases are one preference said two ways."""
    return similarity >= SIMILARITY and _content_words(a) == _content_words(b)


def closest(normalized: str, vector: np.ndarray, phrases: list[tuple[str, str]], vectors: np.ndarray) -> str | None:
    """The key of the phrase that means the same as `normalized`, if any (best similarity, then key)."""
    best: tuple[float, str] | None = None
    for (key, phrase), other in zip(phrases, vectors):
        sim = float(vector @ other)
        if same_meaning(normalized, normalize(phrase), sim) and (best is None or (-sim, key) < (-best[0], best[1])):
            best = (sim, key)
    return best[1] if best else None


def worded_from_label(content: str, key: str) -> bool:
    """Whether a learned file's text is still membank's wording of its signal's label, `Prefer: <label>`
    or `Avoid: <label>`: the label is the one whose hash is the signal key (the first label heard)."""
    text = content.strip()
    polarity = key.split(":", 1)[0]
    for verb in ("Prefer:", "Avoid:"):
        if text.startswith(verb):
            return signal_key(polarity, normalize(text[len(verb):])) == key
    return False


def without_labels(data: bytes) -> bytes:
    """A journal file's bytes with every label's text (`evidence`) taken out. Lines without one keep
    their bytes; a damaged line that may hold one is dropped (it never counted anyway)."""
    out = []
    for raw in data.split(b"\n"):
        if b'"evidence"' not in raw:
            out.append(raw)
            continue
        try:
            value = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            value.pop("evidence", None)
            out.append(json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        # anything else holding the word is not an event: dropped too
    return b"\n".join(out)


# -- the flows (thin shells over the bank) ------------------------------------------------------------


@dataclass(frozen=True)
class Feedback:
    run_id: str
    skill_id: str
    action: str
    evidence_ref: str
    tags: tuple[str, ...] = ()


def ingest(bank: "Bank", fb: Feedback) -> dict[str, Any]:
    normalized = normalize(fb.evidence_ref)
    polarity = POLARITY[fb.action]
    with bank.write_lock, bank.index.lock:  # the index lock too: its reads share one connection
        # settings are read under the lock: privacy mode turned on by another process just before
        # (it takes this lock to write settings.yaml) must hold for this very feedback
        settings = bank.settings()
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
        cleared = bank.index.last_event("preferences-cleared")
        key = signal_key(polarity, normalized)
        if reason is None and not privacy:
            key = _same_signal(bank, key, normalized, polarity, cleared) or key
        event["signalKey"] = key
        if reason is not None:
            event["ignored"] = reason
        _append(bank, event)
        count, _, _ = bank.index.signal(key, cleared)
        result: dict[str, Any] = {"ignored": reason is not None, "signalKey": key, "count": count,
                                  "threshold": threshold}
        if reason is not None:
            result["reason"] = reason
            return result
        learned = _learn(bank, key, polarity, threshold, cleared, privacy)
        if learned is not None:
            result["learned"] = learned
        return result


def clear(bank: "Bank") -> dict[str, Any]:
    """Soft-delete every live learned preference of the project and start the counts again."""
    with bank.write_lock, bank.index.lock:  # the index lock too: its reads share one connection
        event = {"event": "preferences-cleared", "at": journal.now_precise()}
        _check_journal(bank, event["at"])  # validate first, write second: a refused journal deletes nothing
        privacy = bank.settings()["privacyModeEnabled"]
        learned = [m for m in bank.list_memories(origin="learned")["items"] if m["scope"] != "global"]
        for memory in learned:
            if privacy:
                _reword_for_privacy(bank, memory)
            bank.delete_memory(memory["id"])
        _append(bank, event)
    return {"cleared": len(learned)}


def _reword_for_privacy(bank: "Bank", memory: dict[str, Any]) -> None:
    """Privacy mode: a learned file still worded from its label is reworded (and renamed) before any
    other rewrite of it, so no write in privacy mode carries the label's text."""
    key = memory.get("metadata", {}).get("signal")
    if not isinstance(key, str) or ":" not in key or not worded_from_label(memory["content"], key):
        return
    updated = bank.update_memory(memory["id"], {"content": wording(key.split(":", 1)[0], None, memory["tags"])})
    _rename_for_privacy(bank, updated)


def _check_journal(bank: "Bank", at: str) -> None:
    try:
        journal.check_target(bank.project.path, at, bank.project.source)
    except OSError as e:
        raise MembankError(errors.DB_ERROR, f"could not write the journal: {e.strerror or e.__class__.__name__}") from None


def forget_labels(bank: "Bank") -> list[str]:
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
        if bank.journals_without_labels.get(rel) == (st.st_size, st.st_mtime_ns):
            continue  # seen without labels, unchanged since: not read again
        try:  # membank's own journal: an ordinary file, never through a link
            data, at_read = read_regular(path, None, follow_links=False)
        except (OSError, Unreadable):
            continue
        stamp = (at_read.st_size, at_read.st_mtime_ns)
        redacted = without_labels(data) if b'"evidence"' in data else data
        if redacted != data:
            try:
                replace_unchanged(path, redacted, data)
            except Changed:  # edited by hand this instant: the next feedback in privacy mode tries again
                continue
            except OSError as e:
                raise MembankError(errors.DB_ERROR, f"could not take label text out of {root.source(rel)}: "
                                   f"{e.strerror or e.__class__.__name__}") from None
            bank._sync_one(root, rel)
            done.append(rel)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            stamp = (st.st_size, st.st_mtime_ns)
        bank.journals_without_labels[rel] = stamp
    return done


def _append(bank: "Bank", event: dict[str, Any]) -> None:
    try:
        rel = journal.append(bank.project.path, event)
    except OSError as e:
        raise MembankError(errors.DB_ERROR, f"could not write the journal: {e.strerror or e.__class__.__name__}") from None
    bank._sync_one(bank.project, rel)


def _same_signal(bank: "Bank", key: str, normalized: str, polarity: str, since: str | None) -> str | None:
    """An existing signal that says the same thing in other words (needs the embedding model)."""
    phrases = bank.index.signal_phrases(polarity, since)
    if not phrases or any(k == key for k, _ in phrases):
        return None  # heard before in these very words, or nothing to compare with
    model = bank.embedder()
    if model is None:
        return None
    vectors = model.encode([normalized] + [normalize(p) for _, p in phrases])
    if not vectors[0].any():
        return None
    return closest(normalized, vectors[0], phrases, vectors[1:])


def _learn(bank: "Bank", key: str, polarity: str, threshold: int, cleared: str | None,
           privacy: bool) -> dict[str, Any] | None:
    """Write or update the learned preference once the signal reaches the threshold.

    A learned file the writer deleted (or soft-deleted) comes back only through signals newer
    than membank's last write of it: the old ones were already heard and turned down.

    In privacy mode the text is worded from the tags, whatever the journal heard before, and a
    learned file still worded from a label (`Prefer: <label>`, written before privacy mode) is
    reworded when it is updated; a text the writer wrote there is theirs and stays."""
    memory_id = learned_id(key)
    found = bank.index.find("memory", memory_id)
    live = found is not None and found[1]["deletedAt"] is None
    since = cleared if live else max(filter(None, (cleared, bank.index.last_event("learned", key))), default=None)
    count, runs, tags = bank.index.signal(key, since)
    if count < threshold:
        return None
    label = None if privacy else dict(bank.index.signal_phrases(polarity, cleared)).get(key)
    fields: dict[str, Any] = {"confidence": confidence(count, threshold), "evidence": [f"run:{r}" for r in runs[-20:]],
                              "tags": tags}
    if privacy and found is not None and worded_from_label(found[1]["content"], key):
        fields["content"] = wording(polarity, None, tags)
    try:
        if found is None:
            memory = bank.create_memory("preference", "project", wording(polarity, label, tags),
                                        tags=tags, confidence=fields["confidence"], evidence=fields["evidence"],
                                        metadata={"signal": key}, origin="learned", folder=LEARNED_FOLDER,
                                        memory_id=memory_id)
        else:
            memory = bank.update_memory(memory_id, fields)  # before the restore: no write holds the old text
            if not live:
                memory = bank.restore_memory(memory_id)
            if "content" in fields:
                memory = _rename_for_privacy(bank, memory)
    except MembankError as e:  # the writer is editing that file right now: the signal still counted
        log.warning("learned preference %s not written: %s", memory_id, e.message)
        return None
    if not live:
        _append(bank, {"event": "learned", "signalKey": key, "memoryId": memory_id})
    return memory


def _rename_for_privacy(bank: "Bank", memory: dict[str, Any]) -> dict[str, Any]:
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
        bank._sync_one(root, rel)
        bank._sync_one(root, new_rel)
        bank.index.drop_moved_tombstones([root.source(rel), root.source(new_rel)])  # moved, not removed
    return bank.get_memory(memory["id"])
