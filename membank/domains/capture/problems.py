"""`doctor`'s capture check (capture.md, staleness): an op review applied whose evidence quote is gone from
its chapter (the chapter was rewritten since) is a warning on the line that cites it (in a card, a fact, a
thread or a scene file), or on the proposal file when no line cites it any more. The value stays: the
writer decides."""

from __future__ import annotations

import os
import unicodedata
from typing import Any, Iterable

from ...files.records import WARNING, Diagnostic
from ...kernel.errors import MembankError
from ..contract import Bank
from ..story import positions
from . import proposals

GONE = "CAPTURE_EVIDENCE_GONE"


def _folded(name: str) -> str:
    return unicodedata.normalize("NFC", name).casefold()


def _names(folder: str) -> set[str] | None:
    """The names in `folder`, folded (a case-insensitive disk opens `CH01.md` as `ch01.md`); empty when
    there is no such folder; None when it cannot be listed (each file is then tried as before)."""
    try:
        return {_folded(n) for n in os.listdir(folder)}
    except (FileNotFoundError, NotADirectoryError):
        return set()
    except OSError:
        return None


def with_proposal(bank: Bank, documents: Iterable[str]) -> list[str]:
    """The documents that may have a proposal file, each folder listed once rather than ~40 absent files
    opened per `index:status` (the path is `proposal_file`'s: the system resolves both alike). A name
    listed is only a candidate: reading it still decides."""
    listed: dict[str, set[str] | None] = {}
    out = []
    for document in documents:
        folder, leaf = os.path.split(os.fspath(proposals.proposal_file(bank, document)))
        if folder not in listed:
            listed[folder] = _names(folder)
        names = listed[folder]
        if names is None or _folded(leaf) in names:
            out.append(document)
    return out


def _citing_line(bank: Bank, source: str, cite: str) -> int | None:
    path = next((r.file(rel) for r in bank.roots if (rel := r.rel(source)) is not None), None)
    try:
        text = path.read_text("utf-8") if path is not None else ""
    except (OSError, UnicodeDecodeError):
        return None
    return next((n for n, line in enumerate(text.splitlines(), 1) if cite in line), None)


def _written(bank: Bank, cards: Any, document: str, op: dict[str, Any]) -> list[str]:
    """The files an applied op may have written its citation into, most likely first."""
    from ..story.scenes import FOLDER as SCENES
    from . import bible
    from .decide import file_name

    out = []
    for name in (op.get("entity"), op.get("name")):
        ids = cards.resolve(name) if isinstance(name, str) else ()
        out += [cards.cards[ids[0]]["source"]] if len(ids) == 1 else []
    if op["op"] == "unrelate":  # the relation may be written on the other card
        ids = cards.resolve(op["to"])
        out += [cards.cards[ids[0]]["source"]] if len(ids) == 1 else []
    if op["op"] == "thread":
        out += [t.source for t in bible.threads(bank) if t.title == op["title"].strip()]
    if op["op"] == "scene":
        out += [bank.project.source(f"{SCENES}/{document}.md"), bank.project.source(f"{SCENES}/{document}")]
    if op["op"] in ("invalidate", "reveal") and "fact" in op:
        with bank.index.lock:
            found = bank.index.find("memory", op["fact"])
        out += [found[1]["source"]] if found else []
    if op["op"] in ("fact", "reveal") and "content" in op:
        out.append(bank.project.source(f"memories/facts/{file_name(op['content'][:24])}.md"))
    return out


def problems(bank: Bank) -> list[Diagnostic]:
    if not os.path.isdir(os.path.join(bank.project.path, proposals.FOLDER)):
        return []  # no proposal anywhere: the story order is not even worked out
    from ..story.cards import catalog
    from . import bible
    from .evidence import Chapter
    from .flows import _read_proposal, _rel
    from .proposals import proposal_file

    found: list[Diagnostic] = []
    cards = None
    for document in with_proposal(bank, positions.story_order(bank).positions):
        path = proposal_file(bank, document)
        text = _read_proposal(path)
        if text is None or "- status: applied" not in text:
            continue
        try:
            chapter = Chapter(bible.chapter(bank, document)[1])
        except MembankError:
            chapter = Chapter("")
        for p in proposals.parse(text)[1]:
            if p.status != "applied" or chapter.line_of(p.op["evidence"]) is not None:
                continue
            cite = f"{document}:{p.line}"
            message = (f"the quote `{p.op['evidence'][:60]}` that {p.id} was accepted on is gone from {document}; "
                       "check the value it wrote")
            if cards is None:
                with bank.index.lock:
                    cards = catalog(bank.index)
            line, source = None, None
            for source in _written(bank, cards, document, p.op):
                line = _citing_line(bank, source, cite)
                if line:
                    break
            if source and line:
                found.append(Diagnostic(source, line, WARNING, message, GONE))
            else:
                found.append(Diagnostic(bank.project.source(_rel(bank, path)), 1, WARNING, message, GONE))
    return found
