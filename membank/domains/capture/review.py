"""`capture:review` (capture.md, review): the writer's decisions on a chapter's proposal file, applied
together. Accepted ops are checked again against the bible as it is now (a card edited since the
proposal is re-read, never overwritten: CONFLICT when the op no longer applies), written through the
round-trip writer (comments, key order, unknown keys kept), each value citing `evidence:
<document>:<line>`; every file of the call is written or none; the proposal file records each decision."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ...files.exchange import Changed, replace_unchanged
from ...files.frontmatter import MAX_FILE_BYTES, FrontMatterError, decode, split
from ...files.parse import parse_card
from ...files.reader import Unreadable, content_hash, read_regular
from ...files.rewrite import IsoTime, RewriteError, append_item, render
from ...files.write import atomic_write, check_inside
from ...index.failures import storage_error
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ..contract import Bank
from ..story.state import progressions
from . import bible, decide, proposals, validate
from .evidence import Chapter, chapter_hash
from .flows import _read_proposal, _rel, proposal_file

BLOCKING = (validate.UNKNOWN_ENTITY, validate.AMBIGUOUS, validate.EVIDENCE_NOT_FOUND)


@dataclass(frozen=True)
class Write:
    path: Path
    source: str
    root: Any  # the bank root to sync, None for the proposal file
    rel: str
    original: bytes | None  # None: a new file
    new: bytes


def _conflict(op_id: str, message: str) -> MembankError:
    return MembankError(errors.CONFLICT, f"{op_id}: {message}; nothing was written", {"id": op_id})


def _changes(bank: Bank, document: str, text: str, chosen: dict[str, dict[str, Any]]) -> list[decide.Change]:
    """What the accepted ops write, checked against the bible as the index holds it now."""
    cat, order = bible.story(bank, document)
    book = validate.Bible(cat, order, document, Chapter(text), bible.facet_schemas(bank),
                          tuple(bible.facts(bank, order, f"{document}#\uffff")), bible.threads(bank))
    out = []
    for op_id, op in chosen.items():
        verdict = validate.check(book, op)
        if verdict.refused:
            raise _conflict(op_id, f"no longer applies ({verdict.refused}: {verdict.message})")
        blocking = [n for f, n in zip(verdict.flags, verdict.notes) if f in BLOCKING]
        if blocking or verdict.line is None:
            raise _conflict(op_id, "; ".join(blocking) or "the quote is not in the chapter"
                            + " (patch the op, or reject it)")
        card = cat.resolve(op["entity"])[0] if "entity" in op else None
        made = decide.change(op_id, op, document, verdict.line, card)
        if card is not None and made.key == "progressions":  # nothing later on the card: its state moves here
            at = made.item["at"]
            made = replace(made, latest=all(order.rank(p) <= order.rank(at) for p, _, _ in progressions(cat.cards[card])))
        out.append(made)
    return out


def _read(path: Path, source: str) -> bytes:
    try:
        return read_regular(path, MAX_FILE_BYTES + 1)[0]
    except (OSError, Unreadable) as e:
        raise MembankError(errors.CONFLICT, f"{source} cannot be read now "
                           f"({getattr(e, 'message', None) or e.__class__.__name__}); nothing was written") from None


def _card_writes(bank: Bank, changes: list[decide.Change]) -> tuple[list[Write], list[Any]]:
    """The new bytes of every card file; and the (root, rel) of cards whose file differs from the index."""
    writes: list[Write] = []
    moved: list[Any] = []
    by_card: dict[str, list[decide.Change]] = {}
    for c in changes:
        if c.card is None:
            path = bank.project.path / c.key
            check_inside(bank.project.path, path, bank.project.source)
            if path.exists():
                raise _conflict(c.op_id, f"{bank.project.source(c.key)} exists already")
            text = render(c.item, c.body).encode("utf-8")
            writes.append(Write(path, bank.project.source(c.key), bank.project, c.key, None, text))
        else:
            by_card.setdefault(c.card, []).append(c)
    for card, mine in by_card.items():
        found = bank.index.find("card", card)
        if found is None:
            raise _conflict(mine[0].op_id, f"the card `{card}` is gone")
        which, record, digest = found
        root = bank.global_ if which == "global" else bank.project
        rel = root.rel(record["source"])
        path = root.file(rel)
        check_inside(root.path, path, root.source)
        original = _read(path, record["source"])
        if content_hash(original) != digest:
            moved.append((root, rel))
            continue
        writes.append(Write(path, record["source"], root, rel, original,
                            _rewritten(original, record, mine)))
    return writes, moved


def _rewritten(original: bytes, record: dict[str, Any], mine: list[decide.Change]) -> bytes:
    try:
        meta = split(decode(original).replace("\r\n", "\n")).meta
    except FrontMatterError as e:
        raise _conflict(mine[0].op_id, f"{record['source']} cannot be rewritten: {e.message}") from None
    revision = meta.get("revision") if isinstance(meta.get("revision"), int) else 1
    updates: dict[str, Any] = {"revision": revision + 1, "updated": IsoTime(clock.now_iso())}
    text = original.decode("utf-8")
    for c in mine:
        if c.key == "progressions" and "state" in c.item and c.latest:
            updates.update(state=c.item["state"], state_at=c.item["at"])
        try:
            text = append_item(text, c.key, c.item, updates)
        except RewriteError as e:
            raise _conflict(c.op_id, f"{record['source']} cannot be rewritten: {e.message}; change it by hand") \
                from None
    new = text.encode("utf-8")
    rel = record["source"].split(":", 1)[-1]
    section, _, under = rel.partition("/")
    if parse_card(new, record["source"], section, under, 0).record is None:
        raise _conflict(mine[0].op_id, f"{record['source']} would not read back after the change")
    return new


def _commit(bank: Bank, writes: list[Write]) -> None:
    """Every file written, or none: a failure puts back the files already written."""
    done: list[Write] = []
    failure: MembankError | None = None
    for w in writes:
        try:
            if w.original is None:
                w.path.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(w.path, w.new, exclusive=True)
            else:
                replace_unchanged(w.path, w.new, w.original)
            done.append(w)
        except (Changed, FileExistsError):
            failure = MembankError(errors.CONFLICT, f"{w.source} was changed on disk during the review; the "
                                   "writer's version stays; nothing was written")
        except OSError as e:
            failure = storage_error(e, w.source)
        if failure is not None:
            break
    if failure is not None:
        for w in reversed(done):
            try:
                if w.original is None:
                    w.path.unlink()
                else:
                    replace_unchanged(w.path, w.original, w.new)
            except (Changed, OSError):
                pass  # an editor saved meanwhile: the writer's version stays
    roots = {id(w.root): w.root for w in done if w.root is not None}
    with bank.index.transaction():  # one sync per bank, not one per card
        for key, root in roots.items():
            bank.sync_many(root, [w.rel for w in done if id(w.root) == key])
    if failure is not None:
        raise failure


def review(bank: Bank, document_id: str, decisions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Apply `decisions` (None: the ones the writer made in the file, status `accepted` / `rejected`)."""
    with bank.index.lock:  # read before the write lock: never the writer's connection alongside a sync
        document, text = bible.chapter(bank, document_id)
    now_hash = chapter_hash(text)
    path = proposal_file(bank, document)
    source = bank.project.source(_rel(bank, path))
    with bank.write_lock:
        check_inside(bank.project.path, path, bank.project.source)
        old_text = _read_proposal(path)
        if old_text is None:
            raise MembankError(errors.NOT_FOUND, f"{document} has no proposal file ({source}): propose first")
        meta, ops, problems = proposals.parse(old_text)
        if problems:
            line, message = problems[0]
            raise MembankError(errors.CONFLICT, f"{source}:{line}: {message}; fix the file, nothing was applied",
                               {"line": line})
        kept = ops
        ops = proposals.stale(ops, now_hash)
        if decisions is None:
            chosen_all = {p.id: ("accepted", p.op) for p in ops if p.status == "accepted"}
        else:
            chosen_all = decide.decisions(ops, decisions)
        chosen = {i: op for i, (s, op) in chosen_all.items() if s == "accepted"}
        for attempt in (0, 1):
            with bank.index.lock:
                changes = _changes(bank, document, text, chosen)
                writes, moved = _card_writes(bank, changes)
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
        if new_text != old_text:
            writes.append(Write(path, source, None, "", old_text.encode("utf-8"), new_text.encode("utf-8")))
        _commit(bank, writes)
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
    ops = proposals.stale(proposals.parse(found)[1], chapter_hash(text)) if found is not None else []
    return {"documentId": document, "proposal": source,
            "items": [{"id": p.id, "op": p.op["op"], "status": p.status, "fields": p.op, "evidence": p.op["evidence"],
                       "where": f"{document}:{p.line}" if p.line is not None else None, "flags": list(p.flags),
                       "notes": list(p.notes)} for p in ops if p.status in ("pending", "accepted", "stale")]}
