"""The chapter's proposal file (capture.md, propose): `.writenow/proposals/<document>.md`, front matter
and one readable section per op, a stable id, the op in YAML, its evidence with `source:line`, its flags
and its status. Pure: ops in, text out, and back; a second proposal merges without duplicates, and an
unchanged proposal renders to the same bytes (no timestamp churn)."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from ...files.conflicts import LEFT_OUT, conflict_line
from ...files.frontmatter import load_yaml
from ...kernel.errors import MembankError
from ..contract import Bank
from . import shapes

FOLDER = "proposals"


def proposal_file(bank: Bank, document: str) -> Path:
    """Where the proposal file of `document` lives (`proposals/<document>.md`)."""
    name = document if document.lower().endswith(".md") else document + ".md"
    return bank.project.path / FOLDER / name


STATUSES = ("pending", "accepted", "applied", "rejected", "stale")  # accepted: decided in the file, not applied yet
_SECTION = re.compile(r"^## (p-[0-9a-f]{12})\b.*$", re.MULTILINE)
_FENCE = re.compile(r"```yaml\n(.*?)\n```", re.DOTALL)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # and written in ~10 ms, not ~50 (the same text)
_ITEM = re.compile(r"^- (status|chapterHash|flags): ?(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Proposed:
    """One op as the file holds it."""

    id: str
    op: dict[str, Any]  # the op's fields, evidence included
    chapter_hash: str
    line: int | None  # where the evidence is in the chapter (None: not found)
    flags: tuple[str, ...] = ()
    status: str = "pending"
    notes: tuple[str, ...] = field(default=())  # what the flags found (a suggestion, the later progression)


def op_id(document: str, op: dict[str, Any]) -> str:
    """A stable id: the document and the op's fields but its evidence (the same change quoted twice is
    one change)."""
    body = {k: v for k, v in op.items() if k != "evidence"}
    text = json.dumps([document, body], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return "p-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def merge(old: list[Proposed], new: list[Proposed]) -> tuple[list[Proposed], list[str]]:
    """The file's ops then the new ones not already in it, in that order; and the ids already there. An
    op pending against another text of the chapter (stale) that is proposed again takes the new one's
    place where it stood: re-proposed, it is current again."""
    at = {p.id: i for i, p in enumerate(old)}
    out, already = list(old), []
    for p in new:
        i = at.get(p.id)
        if i is None:
            at[p.id] = len(out)
            out.append(p)
        elif out[i].status in ("pending", "stale") and out[i].chapter_hash != p.chapter_hash:
            out[i] = p
        else:
            already.append(p.id)
    return out, already


def _title(op: dict[str, Any]) -> str:
    kind = op["op"]
    main = op.get("entity") or op.get("name") or op.get("title") or op.get("content") or op.get("fact") \
        or op.get("scene") or op.get("location") or ""
    main = " ".join(str(main).split())
    return f"{kind} {main[:40]}".rstrip()


def _yaml(op: dict[str, Any]) -> str:
    body = {k: v for k, v in op.items() if k != "evidence"}
    return yaml.dump(body, Dumper=_DUMPER, allow_unicode=True, sort_keys=False, default_flow_style=False,
                     width=100).rstrip()


def render(document: str, meta: dict[str, Any], ops: list[Proposed]) -> str:
    head = yaml.dump({"document": document, **meta}, Dumper=_DUMPER, allow_unicode=True, sort_keys=False).rstrip()
    out = [f"---\n{head}\n---", f"# Proposed updates from {document}",
           f"Change `status: pending` to `accepted` or `rejected` to decide in this file, then run "
           f"`membank review {document} --apply`."]
    for p in ops:
        quote = " ".join(p.op["evidence"].split())
        where = f"{document}:{p.line}" if p.line is not None else "not found in the chapter"
        lines = [f"## {p.id} · {_title(p.op)}", "", f"```yaml\n{_yaml(p.op)}\n```", "",
                 f"> {quote}", "", f"- evidence: {where}",
                 f"- flags: {', '.join(p.flags)}" if p.flags else "- flags:"]
        lines += [f"  - {note}" for note in p.notes]
        lines += [f"- chapterHash: {p.chapter_hash}", f"- status: {p.status}"]
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def _meta(text: str) -> dict[str, Any]:
    if not text.startswith("---\n"):
        return {}
    end = text.find("\n---", 4)
    try:
        found = load_yaml(text[4:end]) if end > 0 else None  # bounded: a hand edit may nest or alias anything
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
        return {}
    return found if isinstance(found, dict) else {}


def parse(text: str) -> tuple[dict[str, Any], list[Proposed], list[tuple[int, str]]]:
    """(front matter, the ops, the problems as (line, message)). A section that cannot be read is a
    problem, never a silent loss."""
    text = text.replace("\r\n", "\n")  # saved by a Windows editor: read as written; review writes CRLF back
    if (marker := conflict_line(text)) is not None:  # both machines' decisions: none is applied (files.md, Git)
        return {}, [], [(marker, LEFT_OUT)]
    meta = _meta(text)
    starts = list(_SECTION.finditer(text))
    found: list[Proposed] = []
    problems: list[tuple[int, str]] = []
    seen: dict[str, int] = {}  # id -> the line of its section
    for n, m in enumerate(starts):
        body = text[m.end(): starts[n + 1].start() if n + 1 < len(starts) else len(text)]
        line = text.count("\n", 0, m.start()) + 1
        fence = _FENCE.search(body)
        try:
            op = load_yaml(fence.group(1)) if fence else None  # the reader's: a key twice is refused, aliases bounded
        except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError):
            op = None
        items = {k: v.strip() for k, v in _ITEM.findall(body)}
        quote = re.search(r"^> (.*)$", body, re.MULTILINE)
        evidence = re.search(r"^- evidence: .*:(\d+)$", body, re.MULTILINE)
        status = items.get("status", "")
        if not isinstance(op, dict) or "op" not in op or status not in STATUSES or quote is None:
            problems.append((line, f"{m.group(1)}: the section needs its ```yaml op, the `> quote` and "
                                   f"`- status:` one of {', '.join(STATUSES)}"))
            continue
        try:  # a hand edit that left an op of the wrong shape (no `entity`, an unknown `op`, a 1 MB quote)
            shapes.check({**op, "evidence": quote.group(1)}, 0)
        except MembankError as e:
            problems.append((line, f"{m.group(1)}: {e.message.removeprefix('op 0: ')}"))
            continue
        if m.group(1) in seen:  # a hand edit gave two ops one id: a decision could not tell them apart
            problems.append((line, f"{m.group(1)}: the op on line {seen[m.group(1)]} has this id too; give one "
                                   "of them another id (or delete one)"))
            continue
        seen[m.group(1)] = line
        flags = tuple(f.strip() for f in items.get("flags", "").split(",") if f.strip())
        notes = tuple(n.strip() for n in re.findall(r"^  - (.*)$", body, re.MULTILINE))
        found.append(Proposed(m.group(1), {**op, "evidence": quote.group(1)}, items.get("chapterHash", ""),
                              int(evidence.group(1)) if evidence else None, flags, status, notes))
    return meta, found, problems


def stale(ops: list[Proposed], hashes: frozenset[str] | None) -> list[Proposed]:
    """Pending ops proposed against another text of the chapter than the one `hashes` name
    (`evidence.chapter_hashes`; None: no chapter) are stale."""
    return [replace(p, status="stale") if p.status == "pending" and p.chapter_hash not in (hashes or ()) else p
            for p in ops]
