"""`capture:review` (capture.md, review): the writer's decisions on a chapter's proposal file, applied
together. Accepted ops are checked again against the bible as it is now (a card edited since the
proposal is re-read, never overwritten: CONFLICT when the op no longer applies), written through the
round-trip writer (comments, key order, unknown keys kept) into cards, fact memories, thread and scene
files, each value citing `evidence: <document>:<line>`; every file of the call is written or none; the
proposal file records each decision."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from ...files.frontmatter import MAX_FILE_BYTES, FrontMatterError, decode, split
from ...files.parse import parse_card
from ...files.reader import Unreadable, content_hash, read_regular
from ...files.rewrite import IsoTime, RewriteError, append_item, render, rewrite
from ..story.scenes import FOLDER as SCENES
from ..story.scenefiles import MAX_SCENE_BYTES
from ..story.threadfiles import MAX_THREAD_BYTES
from ...files.write import check_inside
from ...files.yamlmemo import remembering
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ..contract import Bank
from ..story.state import progressions
from . import bible, decide, edits, intent, proposals, validate
from .commit import Write, commit
from .evidence import Chapter, chapter_hashes
from .flows import _read_proposal, _rel
from .proposals import proposal_file

BLOCKING = (validate.UNKNOWN_ENTITY, validate.AMBIGUOUS, validate.EVIDENCE_NOT_FOUND, validate.UNKNOWN_FACT,
            validate.UNKNOWN_THREAD)


def _conflict(op_id: str, message: str) -> MembankError:
    return MembankError(errors.CONFLICT, f"{op_id}: {message}; nothing was written", {"id": op_id})


def _changes(bank: Bank, document: str, text: str, chosen: dict[str, dict[str, Any]]) -> list[decide.Change]:
    """What the accepted ops write, checked against the bible as the index holds it now."""
    cat, order = bible.story(bank, document)
    book = validate.Bible(cat, order, document, Chapter(text), bible.facet_schemas(bank),
                          tuple(bible.facts(bank, order, f"{document}#\uffff")), bible.threads(bank),
                          bible.scenes(bank))
    introduced = {validate.folded(n) for op in chosen.values() if op["op"] == "entity"
                  for n in (op["name"], *(op.get("aliases") or ()))}  # the new cards of this call
    out: list[decide.Change] = []
    onto_new: list[tuple[str, dict[str, Any], int]] = []  # progress / relate of a card this call makes
    for op_id, op in chosen.items():
        verdict = validate.check(book, op)
        if verdict.refused:
            raise _conflict(op_id, f"no longer applies ({verdict.refused}: {verdict.message})")
        blocking = [f for f in verdict.flags if f in BLOCKING]
        unknown = validate.unknown_names(book, op)
        onto = any(k == "entity" for k, _ in unknown)  # the op's own card is one this call makes
        if validate.UNKNOWN_ENTITY in blocking and unknown and {validate.folded(n) for _, n in unknown} <= introduced \
                and (not onto or op["op"] in ("progress", "relate")):
            blocking.remove(validate.UNKNOWN_ENTITY)  # it names a card an `entity` op of this call makes
        if blocking or verdict.line is None:
            raise _conflict(op_id, "; ".join(verdict.notes) or "the quote is not in the chapter"
                            + " (patch the op, or reject it)")
        if onto:
            onto_new.append((op_id, op, verdict.line))
            continue
        card = cat.resolve(op["entity"])[0] if op["op"] in ("progress", "relate") else None
        where = decide.Target("file", scene_file(bank, document)) if op["op"] == "scene" else validate.target(book, op)
        made = decide.change(op_id, op, document, verdict.line, card, where)
        if card is not None and made.key == "progressions":  # nothing later on the card: its state moves here
            at = made.item["at"]
            made = replace(made, latest=all(order.rank(p) <= order.rank(at) for p, _, _ in progressions(cat.cards[card])))
        out.append(made)
    return _onto_new(out, onto_new, document)


def _onto_new(out: list[decide.Change], ops: list[tuple[str, dict[str, Any], int]], document: str
              ) -> list[decide.Change]:
    """The changes with each progression or relation of a card the call makes written into that card."""
    for op_id, op, line in ops:
        at = next((i for i, c in enumerate(out) if c.edit == "new" and "introduced" in c.item and
                   validate.folded(op["entity"]) in {validate.folded(n) for n in
                                                    (c.item["name"], *(c.item.get("aliases") or ()))}), None)
        if at is None:  # pragma: no cover - `introduced` holds every name an `entity` op of the call gives
            raise _conflict(op_id, f"`{op['entity']}` names no card")
        made = decide.change(op_id, op, document, line, None)
        card = out[at]
        top = {"state": made.item["state"], "state_at": made.item["at"]} if "state" in made.item else {}
        out[at] = replace(card, item={**card.item, **top}, items=(*card.items, (made.key, made.item)))
    return out


def scene_file(bank: Bank, document: str) -> str:
    """The chapter's scene file under .writenow/ (story.md, Scenes): the one there, else `<document>.md`."""
    mine = f"{SCENES}/{document}.md"
    if bank.project.file(mine).is_file():
        return mine
    bare = f"{SCENES}/{document}"  # the story reads it as this document's only when no `.` is left in its name
    if document.endswith(".md") and "." not in document[:-3].rsplit("/", 1)[-1] and bank.project.file(bare).is_file():
        return bare
    return mine


def _read(path: Path, source: str) -> bytes:
    try:
        return read_regular(path, MAX_FILE_BYTES + 1)[0]
    except FileNotFoundError:
        raise MembankError(errors.CONFLICT, f"{source} is gone (moved or deleted since membank read it); nothing "
                           "was written: review again once membank has read the folder") from None
    except (OSError, Unreadable) as e:
        raise MembankError(errors.CONFLICT, f"{source} cannot be read now "
                           f"({getattr(e, 'message', None) or e.__class__.__name__}); nothing was written") from None


def _card_writes(bank: Bank, document: str, changes: list[decide.Change]) -> tuple[list[Write], list[Any]]:
    """The new bytes of every file the changes write; and the (root, rel) of indexed files (cards,
    memories) whose file differs from the index."""
    writes: list[Write] = []
    moved: list[Any] = []
    by_target: dict[tuple[str, str], list[decide.Change]] = {}
    claimed: set[str] = set()  # the new files of this call: two names may make one file name
    for c in changes:
        if c.edit == "new":
            rel = _free(bank, c.key, claimed, c.op_id, c.item.get("name") if "introduced" in c.item
                        else c.item.get("title") if "opened" in c.item else None)
            path = bank.project.path / rel
            check_inside(bank.project.path, path, bank.project.source)
            try:
                text = _with_items(render(c.item, c.body), c.items).encode("utf-8")
            except RewriteError as e:
                raise _conflict(c.op_id, f"{bank.project.source(rel)} cannot be written: {e.message}") from None
            writes.append(Write(path, bank.project.source(rel), bank.project, rel, None, text, (c.op_id,)))
        else:
            by_target.setdefault((c.where, c.card or ""), []).append(c)
    for (where, ref), mine in by_target.items():
        if where == "file":  # a thread or a scene file: not indexed, read as it is now
            path = bank.project.file(ref)
            source = bank.project.source(ref)
            check_inside(bank.project.path, path, bank.project.source)
            original = _read(path, source) if path.exists() else None
            new = _rewritten(original or b"", source, document, mine, versioned=False)
            _fits(new, source, ref, mine[0].op_id)
            writes.append(Write(path, source, bank.project, ref, original, new, tuple(c.op_id for c in mine)))
            continue
        found = bank.index.find(where, ref)
        if found is None:
            raise _conflict(mine[0].op_id, f"the {where} `{ref}` is gone")
        which, record, digest = found
        root = bank.global_ if which == "global" else bank.project
        rel = root.rel(record["source"])
        path = root.file(rel)
        check_inside(root.path, path, root.source)
        original = _read(path, record["source"])
        if content_hash(original) != digest:
            moved.append((root, rel))
            continue
        new = _rewritten(original, record["source"], document, mine, versioned=True)
        if where == "card":
            _card_reads_back(new, record["source"], mine[0].op_id)
        writes.append(Write(path, record["source"], root, rel, original, new, tuple(c.op_id for c in mine)))
    return writes, moved


def _free(bank: Bank, rel: str, claimed: set[str], op_id: str, name: str | None) -> str:
    """`rel`, or `…-2.md`, `…-3.md` when another file (on disk, or new in this call) has that name; any
    case counts as taken (a case-blind disk holds one of `Con.md` and `con.md`). A card of the same `name`
    or thread title there (saved by hand, not read yet), or a file there membank cannot read, is CONFLICT:
    never a second card of one person, nor a second thread."""
    base = rel.removesuffix(".md")
    candidate, n = rel, 2
    while candidate.casefold() in claimed or os.path.lexists(bank.project.path / candidate):
        if name is not None and candidate.casefold() not in claimed and _names(bank.project.path / candidate, name):
            raise _conflict(op_id, f"{bank.project.source(candidate)} is `{name}` already, or cannot be read; "
                            "fix or rename it")
        candidate, n = f"{base}-{n}.md", n + 1
    claimed.add(candidate.casefold())
    return candidate


def _names(path: Path, name: str) -> bool:
    """Whether the card or thread at `path` is called `name` (its `name`, an alias, its `title`), or cannot
    be read (it may be: never guess a second one beside it)."""
    try:
        meta = split(decode(read_regular(path, MAX_FILE_BYTES + 1)[0])).meta
    except (OSError, Unreadable, FrontMatterError):
        return True
    aliases = meta.get("aliases") if isinstance(meta.get("aliases"), list) else []
    return validate.folded(name) in {validate.folded(str(n)) for n in (meta.get("name"), meta.get("title"), *aliases)
                                     if n is not None}


def _fits(new: bytes, source: str, ref: str, op_id: str) -> None:
    """A thread or scene file the story reader still reads whole after the change (it reads so much, no
    more: a longer file would lose its closing `---` and the thread or scenes with it)."""
    most = MAX_SCENE_BYTES if ref.startswith(f"{SCENES}/") else MAX_THREAD_BYTES
    if len(new) > most:
        raise _conflict(op_id, f"{source} would grow past {most // 1024} KiB, the most the story reads of it; "
                        "shorten it by hand (old `touched:` items, say)")


def _with_items(text: str, items: tuple[tuple[str, dict[str, Any]], ...]) -> str:
    """A new card with its progressions and relations, one `- {…}` line each, as review writes them on a
    card that exists."""
    for key, item in items:
        if key not in edits.meta_of(text):
            text = rewrite(text, {key: []})
        text = append_item(text, key, item, {})
    return text


def _card_reads_back(new: bytes, source: str, op_id: str) -> None:
    rel = source.split(":", 1)[-1]
    section, _, under = rel.partition("/")
    if parse_card(new, source, section, under, 0).record is None:
        raise _conflict(op_id, f"{source} would not read back after the change")


def _edit(text: str, c: decide.Change, cite: str, updates: dict[str, Any], meta: dict[Any, Any] | None) -> str:
    """`text` with the change made; `meta`: what `text` means when the caller read it already, else None."""
    if c.edit == "append":
        return append_item(text, c.key, c.item, updates, meta)
    if c.edit == "until":
        return edits.until(text, c.at_line, c.item["until"], cite, updates)
    if c.edit == "keys":
        return edits.keys(text, c.item, cite, updates, listed=c.where == "memory")
    if c.edit == "touch":
        return edits.touch(text, c.item["at"], cite)
    return edits.scene(text, c.key or None, c.item, cite)


def _rewritten(original: bytes, source: str, document: str, mine: list[decide.Change], versioned: bool) -> bytes:
    """The file with every change of the call made, in one pass: relation ends first, from the last line
    up (an edit above moves the lines below it), then the rest in the order decided."""
    text = original.decode("utf-8")
    updates: dict[str, Any] = {}
    meta: dict[Any, Any] | None = None  # what `text` means, while it is the original
    if versioned:
        try:
            meta = split(decode(original).replace("\r\n", "\n")).meta
        except FrontMatterError as e:
            raise _conflict(mine[0].op_id, f"{source} cannot be rewritten: {e.message}") from None
        revision = meta.get("revision") if isinstance(meta.get("revision"), int) else 1
        updates = {"revision": revision + 1, "updated": IsoTime(clock.now_iso())}
    ordered = sorted((c for c in mine if c.edit == "until"), key=lambda c: -c.at_line) + \
        [c for c in mine if c.edit != "until"]
    for c in ordered:
        step = dict(updates)
        if c.key == "progressions" and "state" in c.item and c.latest:
            updates.update(state=c.item["state"], state_at=c.item["at"])
            step = dict(updates)
        try:
            text = _edit(text, c, f"{document}:{c.line}", step, meta)
            meta = None
        except RewriteError as e:
            raise _conflict(c.op_id, f"{source} cannot be rewritten: {e.message}; change it by hand") from None
    if not versioned:  # a thread or scene file: read back whole (a card is parsed as a card by the caller)
        try:
            edits.meta_of(text)
        except RewriteError as e:
            raise _conflict(mine[0].op_id, f"{source} would not read back after the change ({e.message})") from None
    return text.encode("utf-8")


def review(bank: Bank, document_id: str, decisions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Apply `decisions` (None: the ones the writer made in the file, status `accepted` / `rejected`)."""
    with remembering():  # each card written is read back, then indexed: its front matter parsed once for both
        return _review(bank, document_id, decisions)


def _review(bank: Bank, document_id: str, decisions: list[dict[str, Any]] | None) -> dict[str, Any]:
    with bank.index.lock:  # read before the write lock: never the writer's connection alongside a sync
        document, text = bible.chapter(bank, document_id)
    now_hashes = chapter_hashes(text)
    path = proposal_file(bank, document)
    source = bank.project.source(_rel(bank, path))
    with bank.write_lock:
        check_inside(bank.project.path, path, bank.project.source)
        resumed = intent.resume(bank, path)  # a review killed midway is finished (or reported) first
        try:
            answer = _apply(bank, document, text, now_hashes, path, source, decisions)
        except MembankError as e:
            if resumed is None:
                raise
            raise MembankError(e.code, f"{e.message} (an interrupted review was finished first: "
                               f"{_said(resumed)})", {**(e.details or {}), "resumed": resumed}) from None
    return answer if resumed is None else {**answer, "resumed": resumed}


def _said(resumed: dict[str, list[str]]) -> str:
    applied, missed = resumed["applied"], resumed["notApplied"]
    return (f"applied {', '.join(applied) or 'nothing'}" +
            (f"; not applied, as a file was changed since: {', '.join(missed)}" if missed else ""))


def _apply(bank: Bank, document: str, text: str, now_hashes: Any, path: Path, source: str,
           decisions: list[dict[str, Any]] | None) -> dict[str, Any]:
    old_text = _read_proposal(path)
    if old_text is None:
        raise MembankError(errors.NOT_FOUND, f"{document} has no proposal file ({source}): propose first")
    meta, ops, problems = proposals.parse(old_text)
    if problems:
        line, message = problems[0]
        raise MembankError(errors.CONFLICT, f"{source}:{line}: {message}; fix the file, nothing was applied",
                           {"line": line})
    kept = ops
    ops = proposals.stale(ops, now_hashes)
    if decisions is None:
        chosen_all = {p.id: ("accepted", p.op) for p in ops if p.status == "accepted"}
    else:
        chosen_all = decide.decisions(ops, decisions)
    chosen = {i: op for i, (s, op) in chosen_all.items() if s == "accepted"}
    for attempt in (0, 1):
        with bank.index.lock:
            changes = _changes(bank, document, text, chosen)
            writes, moved = _card_writes(bank, document, changes)
        if not moved:
            break
        if attempt:
            raise MembankError(errors.CONFLICT, "a card changes while it is reviewed; nothing was written")
        with bank.index.transaction():  # a card edited since the index read it: read again, check again
            for root, rel in moved:
                bank.sync_one(root, rel)
    statuses = {i: ("applied" if s == "accepted" else "rejected") for i, (s, _) in chosen_all.items()}
    patched = {i: op for i, (_, op) in chosen_all.items()}
    lines = {c.op_id: c.line for c in changes}  # where it is now
    after = [p if p.id not in patched else proposals.Proposed(p.id, patched[p.id], p.chapter_hash,
                                                                lines.get(p.id, p.line), p.flags, p.status, p.notes)
             for p in kept]
    after = decide.recorded(after, statuses)
    new_text = proposals.render(document, {k: v for k, v in meta.items() if k != "document"}, after)
    if "\r\n" in old_text:  # saved with CRLF by the writer's editor: it stays so
        new_text = new_text.replace("\n", "\r\n")
    if new_text != old_text:
        writes.append(Write(path, source, None, "", old_text.encode("utf-8"), new_text.encode("utf-8")))
    # a progress or relate of a card this call makes is written into that new card: named by the new files
    orphans = tuple(sorted(set(chosen) - {op for w in writes for op in w.ops}))
    writes = [replace(w, ops=w.ops + orphans) if orphans and w.original is None else w for w in writes]
    kept_at = intent.record(bank, path, writes) if len(writes) > 1 else None  # one file is whole or not
    try:
        commit(bank, writes)
    except MembankError as e:
        if kept_at is not None and "unknownState" in e.details:  # half-written, as a crash leaves it: the
            kept_at = None  # record stays, so the next review finishes the call
            raise MembankError(e.code, f"{e.message}; the next review of {document} finishes the call",
                               e.details) from None
        raise
    finally:
        if kept_at is not None:
            intent.drop(kept_at)
    return {"documentId": document, "proposal": source,
            "ops": [{"id": p.id, "op": p.op["op"], "status": p.status} for p in after if p.id in statuses],
            "written": [w.source for w in writes],
            "counts": {s: sum(1 for v in statuses.values() if v == s) for s in ("applied", "rejected")}}


def pending(bank: Bank, document_id: str) -> dict[str, Any]:
    """The ops of the chapter's proposal file still to decide or apply (pending, accepted, stale)."""
    document, text = bible.chapter(bank, document_id)
    path = proposal_file(bank, document)
    source = bank.project.source(_rel(bank, path))
    found = _read_proposal(path)
    _, ops, problems = proposals.parse(found) if found is not None else ({}, [], [])
    if problems:  # git conflict markers, a section edited into nonsense: never a silently shorter list
        line, message = problems[0]
        raise MembankError(errors.CONFLICT, f"{source}:{line}: {message}; fix the file to see its ops", {"line": line})
    ops = proposals.stale(ops, chapter_hashes(text))
    answer = {"documentId": document, "proposal": source,
              "items": [{"id": p.id, "op": p.op["op"], "status": p.status, "fields": p.op, "evidence": p.op["evidence"],
                         "where": f"{document}:{p.line}" if p.line is not None else None, "flags": list(p.flags),
                         "notes": list(p.notes)} for p in ops if p.status in ("pending", "accepted", "stale")]}
    left = intent.waiting(bank, path)
    return answer if left is None else {**answer, "interrupted": left}
