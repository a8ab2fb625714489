"""What `capture:review` decides (capture.md, review), pure: which ops of the proposal file a call
accepts, rejects or patches, and what an accepted op writes — an item added to a card's list, a new
card, fact or thread, or an edit of what is written already (a relation's `until`, a fact's `until` or
`revealed`, a thread's end or touch, a scene) — each citing `evidence: <document>:<line>`. The flow
(review.py) reads and writes the files; edits.py makes the text edits."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ...files.write import WINDOWS_DEVICES
from ...kernel import errors
from ...kernel.errors import MembankError
from . import shapes
from .proposals import Proposed

ACTIONS = ("accept", "reject", "patch")
FOLDERS = {"character": "characters", "person": "characters"}  # every other kind: world/


@dataclass(frozen=True)
class Change:
    """One write of an accepted op: an item appended to a card's list, or a new card."""

    op_id: str
    card: str | None  # the card id an item is added to (None: a new card)
    key: str  # progressions | relations | new card: its path (characters/贾宝玉.md)
    item: dict[str, Any]  # the list item, or the new card's front matter
    body: str = ""  # a new card's text
    line: int = 0  # the evidence's line in the chapter
    latest: bool = False  # a progression with nothing after it on the card: its top-level state moves too
    edit: str = "append"  # append (an item to the card's list `key`) | new (a file at `key`) | until | keys
    #                       | touch | scene: what is changed in the file `card` names
    where: str = "card"  # what `card` names: card (an id) | memory (an id) | file (a path under .writenow/)
    at_line: int = 0  # until: the file line the relation is written on
    items: tuple[tuple[str, dict[str, Any]], ...] = ()  # a new card's progressions and relations (key, item)


@dataclass(frozen=True)
class Target:
    """Where an op that changes something already written lands, as the bible holds it now."""

    where: str  # card | memory | file
    ref: str  # the card's or the memory's id, or the file's path under .writenow/
    line: int = 0  # a relation: its line in the card file


def decisions(ops: list[Proposed], given: list[dict[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """{op id: (accepted | rejected, the op as patched)}, checked whole: an unknown id, an op decided
    already or stale, a wrong action or a patch of the wrong shape is an error and nothing is decided."""
    by_id = {p.id: p for p in ops}
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    for n, d in enumerate(given):
        if not isinstance(d, dict) or not isinstance(d.get("id"), str):
            raise errors.invalid(f"decisions[{n}].id", f"decision {n}: give the op's `id` (p-…)")
        action = d.get("decision") or d.get("action")
        if action not in ACTIONS:
            raise errors.invalid(f"decisions[{n}].decision", f"decision {n}: `decision` is one of {', '.join(ACTIONS)}")
        found = by_id.get(d["id"])
        if found is None:
            raise MembankError(errors.NOT_FOUND, f"decision {n}: the proposal file has no op `{d['id']}`",
                               {"field": f"decisions[{n}].id"})
        if d["id"] in out:
            raise errors.invalid(f"decisions[{n}].id", f"decision {n}: `{d['id']}` is decided twice in this call")
        if found.status == "stale" and action != "reject":  # a stale op may be rejected, not applied
            raise MembankError(errors.CONFLICT, f"{d['id']} is stale: the chapter changed since it was proposed; "
                               "prepare and propose again", {"id": d["id"]})
        if found.status not in ("pending", "accepted", "stale"):
            raise MembankError(errors.CONFLICT, f"{d['id']} is {found.status} already", {"id": d["id"]})
        op = dict(found.op)
        patch = d.get("patch")
        if patch is not None or action == "patch":
            if not isinstance(patch, dict) or "op" in patch:
                raise errors.invalid(f"decisions[{n}].patch", f"decision {n}: `patch` is an object of the op's "
                                     "fields to change (not `op`)")
            op = shapes.check({**op, **patch}, n)
        out[d["id"]] = ("rejected" if action == "reject" else "accepted", op)
    return out


def change(op_id: str, op: dict[str, Any], document: str, line: int, card: str | None,
           target: Target | None = None) -> Change:
    """What an accepted op writes; `card` is the id its `entity` resolves to (None for a new file);
    `target` where an op that changes what is written already lands (unrelate, invalidate, reveal of a
    fact, thread touch / resolve / drop, scene)."""
    return replace(_change(op_id, op, document, line, card, target), line=line)


def _changed(op_id: str, op: dict[str, Any], document: str, evidence: str, target: Target | None) -> Change | None:
    """The change of an op that edits a file already there; None for the others."""
    kind = op["op"]
    action = op.get("action")
    if kind not in ("unrelate", "invalidate", "scene") and not (kind == "reveal" and ("fact" in op or target)) \
            and not (kind == "thread" and action != "open"):
        return None
    if target is None:
        raise errors.invalid("decisions", f"{op_id}: what the `{kind}` op changes was not found")
    base = Change(op_id, target.ref, "", {}, where=target.where)
    if kind == "unrelate":
        return replace(base, key="relations", item={"until": document, "evidence": evidence}, edit="until",
                       at_line=target.line)
    if kind in ("invalidate", "reveal"):
        return replace(base, item={"until" if kind == "invalidate" else "revealed": document}, edit="keys")
    if kind == "thread":
        if action == "touch":
            return replace(base, item={"at": document, "evidence": evidence}, edit="touch")
        return replace(base, item={"resolved" if action == "resolve" else "dropped": document}, edit="keys")
    values = {k: op[k] for k in ("pov", "present", "location", "date") if k in op}
    title = op["scene"].strip() if op.get("scene") else ""
    return replace(base, key=title, item=values, edit="scene")


def _change(op_id: str, op: dict[str, Any], document: str, line: int, card: str | None,
            target: Target | None) -> Change:
    evidence = f"{document}:{line}"
    kind = op["op"]
    edited = _changed(op_id, op, document, evidence, target)
    if edited is not None:
        return edited
    if kind == "reveal":  # told by its words: a new fact the reader learns here
        meta = {"type": "fact", "revealed": document, "evidence": [evidence]}
        return Change(op_id, None, f"memories/facts/{file_name(op['content'][:24])}.md", meta, op["content"],
                      edit="new")
    if kind == "progress":
        at = f"{document}#{op['scene']}" if op.get("scene") else document
        item: dict[str, Any] = {"at": at}
        if "state" in op:
            item["state"] = op["state"].strip()
        if op.get("set"):
            item["set"] = dict(op["set"])
        return Change(op_id, card, "progressions", {**item, "evidence": evidence})
    if kind == "relate":
        item = {"to": op["to"], "type": op["type"], "since": document}
        if op.get("note"):
            item["note"] = op["note"]
        return Change(op_id, card, "relations", {**item, "evidence": evidence})
    if kind == "fact":
        meta: dict[str, Any] = {"type": "fact", "since": document}
        if op.get("until"):
            meta["until"] = op["until"]
        meta["evidence"] = [evidence]
        return Change(op_id, None, f"memories/facts/{file_name(op['content'][:24])}.md", meta, op["content"],
                      edit="new")
    if kind == "thread":
        meta = {"title": op["title"].strip(), "opened": document}
        if op.get("entities"):
            meta["entities"] = list(op["entities"])
        meta["evidence"] = evidence
        return Change(op_id, None, f"threads/{file_name(op['title'])}.md", meta, edit="new")
    folder = FOLDERS.get(op["kind"].strip().lower(), "world")
    name = op["name"].strip()
    meta = {"name": name, "kind": op["kind"].strip()}
    if op.get("aliases"):
        meta["aliases"] = list(op["aliases"])
    meta.update(introduced=document, evidence=evidence)
    return Change(op_id, None, f"{folder}/{file_name(name)}.md", meta, op.get("summary") or "", edit="new")


MAX_NAME_BYTES = 120  # a file name's UTF-8 bytes, before `.md`: far below the 255 file systems take, with
# room for the writer's temporary name beside it and a `-2` when it is taken


def file_name(name: str) -> str:
    """A card's file name from its name: letters and digits of any script kept, the rest `-`; at most
    MAX_NAME_BYTES (40 Chinese characters), never a Windows device (`con`, `nul`: `con-1`)."""
    out = "".join(c if c.isalnum() else "-" for c in name.strip().lower())
    out = "-".join(p for p in out.split("-") if p)[:80]
    while len(out.encode("utf-8")) > MAX_NAME_BYTES:
        out = out[:-1]
    out = out.strip("-") or "card"
    return f"{out}-1" if WINDOWS_DEVICES.fullmatch(out) else out


def recorded(ops: list[Proposed], statuses: dict[str, str]) -> list[Proposed]:
    """The file's ops with the call's decisions recorded (`applied` for an accepted op review wrote)."""
    return [replace(p, status=statuses[p.id]) if p.id in statuses else p for p in ops]
