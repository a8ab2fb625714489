"""The capture channels' handlers (capture.md): prepare (what a model needs to read a chapter against the
bible, as it stood just before the chapter), propose (every op checked, the valid ones kept in the
chapter's proposal file) and status (every document's capture state, in story order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...files.reader import Unreadable, read_regular
from ...files.write import atomic_write, check_inside
from ...index.failures import storage_error
from ...kernel import clock, errors
from ...kernel.errors import MembankError
from ..contract import Bank
from ..story import graph, positions
from ..story.threads import at_position
from . import bible, parts, prompt, proposals, shapes, validate
from .proposals import proposal_file
from .evidence import Chapter, chapter_hash, chapter_hashes

MAX_PROPOSAL_BYTES = 4 * 1024 * 1024


def prepare(bank: Bank, document_id: str, document_text: str | None = None) -> dict[str, Any]:
    document, text = bible.chapter(bank, document_id, document_text)
    cat, order = bible.story(bank, document)
    earlier, mark = parts.before(order, document)
    ids = bible.mentioned(cat, text)
    entities = [graph.entity(cat.cards[i], cat, earlier, mark, relations=True) for i in ids]
    for e in entities:
        for r in e.get("relations") or []:
            r.pop("depth", None)
    open_threads = at_position(bible.threads(bank), earlier, mark, "open")
    wanted = set(ids)
    in_force = [f for f in bible.facts(bank, earlier, mark) if wanted.intersection(bible.mentioned(cat, f["content"]))]
    schema = shapes.proposal_schema()
    skill, budget, source = prompt.skill(bank)
    common = {
        "entities": "\n".join(prompt.entity_text(e) for e in entities) or "（无）",
        "threads": "\n".join(f"- {t['title']}（{t['source']}）" for t in open_threads) or "（无）",
        "facts": "\n".join(f"- [{f['id']}] {f['content']}" for f in in_force) or "（无）",
        "schema": shapes.schema_text(),
    }
    cut = parts.parts(document, text, max(1000, budget // 2))
    made = [{"scene": p.scene, "line": p.line, "endLine": p.end_line,
             "prompt": prompt.build(bank, order, document, p.text, skill if source.startswith("membank:") else None,
                                    {**common, "document": f"{document}:{p.line}-{p.end_line}"})}
            for p in cut]
    return {"documentId": document, "chapterHash": chapter_hash(text), "at": f"before {document}",
            "prompt": made[0]["prompt"] if len(made) == 1 else None, "parts": made if len(made) > 1 else [],
            "schema": schema, "skill": source, "entities": entities, "threads": open_threads, "facts": in_force}


def _read_proposal(path: Path) -> str | None:
    try:
        data, _ = read_regular(path, MAX_PROPOSAL_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, Unreadable) as e:
        raise MembankError(errors.DB_ERROR, f"the proposal file {path.name} cannot be read "
                           f"({getattr(e, 'message', None) or e.__class__.__name__})") from None
    return data.decode("utf-8", "replace")


def propose(bank: Bank, document_id: str, chapter_hash_: str, ops: list[dict[str, Any]],
            by: str | None = None) -> dict[str, Any]:
    checked = shapes.check_all(ops)
    # a write runs on the sidecar's write lane, not in a read snapshot: its reads of the index hold the
    # index lock, so they never share the writer's connection with a watcher's sync (never the write
    # lock inside it: the watcher takes the write lock first)
    with bank.index.lock:
        document, text = bible.chapter(bank, document_id)
        now_hash = chapter_hash(text)
        if chapter_hash_ not in chapter_hashes(text):
            raise MembankError(errors.CONFLICT, f"{document} changed since it was prepared (its hash is now "
                               f"{now_hash}); prepare it again", {"field": "chapterHash", "chapterHash": now_hash})
        cat, order = bible.story(bank, document)
        book = validate.Bible(cat, order, document, Chapter(text), bible.facet_schemas(bank),
                              tuple(bible.facts(bank, order, f"{document}#\uffff")), bible.threads(bank),
                              bible.scenes(bank))
    results: list[dict[str, Any]] = []
    kept: list[proposals.Proposed] = []
    for index, op in enumerate(checked):
        verdict = validate.check(book, op)
        pid = proposals.op_id(document, op)
        result = {"index": index, "id": pid, "op": op["op"], "line": verdict.line,
                  "flags": list(verdict.flags), "notes": list(verdict.notes)}
        if verdict.refused:
            results.append({**result, "status": "refused", "reason": verdict.refused, "message": verdict.message})
            continue
        kept.append(proposals.Proposed(pid, op, now_hash, verdict.line, verdict.flags, "pending", verdict.notes))
        results.append({**result, "status": "pending", "reason": verdict.flags[0] if verdict.flags else None,
                        "message": "; ".join(verdict.notes)})
    path = proposal_file(bank, document)
    with bank.write_lock:
        check_inside(bank.project.path, path, bank.project.source)
        old_text = _read_proposal(path)
        meta, old, problems = proposals.parse(old_text) if old_text is not None else ({}, [], [])
        if problems:
            line, message = problems[0]
            raise MembankError(errors.CONFLICT, f"{bank.project.source(_rel(bank, path))}:{line}: {message}; "
                               "fix the file before proposing again", {"line": line})
        merged, already = proposals.merge(old, kept)
        for r in results:
            if r["status"] == "pending" and r["id"] in already:
                r["status"], r["reason"] = "duplicate", "ALREADY_PROPOSED"
                r["message"] = "the proposal file holds this op already"
        written = False
        if merged != old or old_text is None:
            was = meta.get("by")  # a word; anything else a hand edit left there is not carried on
            head = {"chapterHash": now_hash, "by": by or (was if isinstance(was, str) else None) or "unknown",
                    "proposed": clock.now_iso()}
            try:
                rendered = proposals.render(document, head, merged)
                if old_text is not None and "\r\n" in old_text:  # the writer's editor saves CRLF: it stays so
                    rendered = rendered.replace("\n", "\r\n")
                atomic_write(path, rendered.encode("utf-8"))
            except OSError as e:
                raise storage_error(e, bank.project.source(_rel(bank, path))) from None
            written = True
    return {"documentId": document, "chapterHash": now_hash, "proposal": bank.project.source(_rel(bank, path)),
            "written": written, "ops": results,
            "counts": {s: sum(1 for r in results if r["status"] == s) for s in ("pending", "duplicate", "refused")}}


def _rel(bank: Bank, path: Path) -> str:
    return path.relative_to(bank.project.path).as_posix()


def document_state(bank: Bank, document: str) -> dict[str, Any]:
    """One document's capture state (capture:status's item); `chapter:changed` carries it too."""
    text = _read_proposal(proposal_file(bank, document))
    ops: list[proposals.Proposed] = []
    problems: list[tuple[int, str]] = []
    if text is not None:
        _, ops, problems = proposals.parse(text)
        try:
            _, chapter_text = bible.chapter(bank, document)
            ops = proposals.stale(ops, chapter_hashes(chapter_text))
        except MembankError:
            ops = proposals.stale(ops, None)
    counts = {s: sum(1 for p in ops if p.status == s) for s in proposals.STATUSES}
    state = ("none" if not ops else "stale" if counts["stale"] else "pending" if counts["pending"] or counts["accepted"]
             else "reviewed")
    return {"documentId": document, "state": state, **counts,
            "problems": [{"line": n, "message": m} for n, m in problems]}


def status(bank: Bank) -> dict[str, Any]:
    """Every document of the story in story order, with its capture state."""
    return {"items": [document_state(bank, d) for d in positions.story_order(bank).positions]}
