"""Every check of `capture:propose` (capture.md), op by op: the names resolve, the quote is in the
chapter, the change is not already true at this position, a facet value keeps its schema, a change
does not contradict what the bible holds for a later chapter. Pure over the card catalog, the story
order, the facts in force and the threads: the flow does the reading."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from ..story import facets as facet_schemas
from ..story.cards import Catalog
from ..story.graph import edges
from ..story.order import StoryOrder
from ..story.state import progressions, state_at
from ..story.scenes import state as scene_state
from ..story.threads import Thread, status as thread_status
from .decide import Target
from .evidence import Chapter

# flags: the op is kept, and the writer sees why it needs a look
UNKNOWN_ENTITY = "UNKNOWN_ENTITY"
AMBIGUOUS = "AMBIGUOUS"
EVIDENCE_NOT_FOUND = "EVIDENCE_NOT_FOUND"
CONTRADICTS_LATER = "CONTRADICTS_LATER"
UNKNOWN_FACT = "UNKNOWN_FACT"
UNKNOWN_THREAD = "UNKNOWN_THREAD"
# refusals: the op is not stored
ALREADY_KNOWN = "ALREADY_KNOWN"
INVALID_VALUE = "INVALID_VALUE"
REFUSALS = (ALREADY_KNOWN, INVALID_VALUE)


@dataclass(frozen=True)
class Bible:
    """What a proposal is checked against, for one chapter."""

    catalog: Catalog
    order: StoryOrder
    document: str
    chapter: Chapter
    schemas: dict[str, Any]  # settings.yaml story.facets
    facts: tuple[dict[str, Any], ...]  # the fact memories in force at the chapter (id, content)
    threads: tuple[Thread, ...]
    scenes: dict[str, Any] = field(default_factory=dict)  # document -> its scenes (story/scenes.py)

    @property
    def end(self) -> str:
        """The chapter's end: everything the bible dates to this chapter or one of its scenes is reached."""
        return f"{self.document}#\uffff"


@dataclass(frozen=True)
class Verdict:
    flags: tuple[str, ...]
    notes: tuple[str, ...]  # one line per flag, as the writer reads it
    line: int | None
    refused: str | None = None  # a refusal's code (ALREADY_KNOWN, INVALID_VALUE)
    message: str = ""


def _same(a: Any, b: Any) -> bool:
    def norm(v: Any) -> Any:
        if isinstance(v, list):
            return sorted(norm(x) for x in v)
        return " ".join(unicodedata.normalize("NFKC", v).split()).casefold() if isinstance(v, str) else v
    return bool(norm(a) == norm(b))


def _resolve(bible: Bible, name: str, field: str, flags: list[str], notes: list[str]) -> str | None:
    found = bible.catalog.resolve(name)
    if len(found) == 1:
        return found[0]
    if not found:
        flags.append(UNKNOWN_ENTITY)
        notes.append(f"{field} `{name}` names no card: add an `entity` op for it (or fix the name)")
    else:
        flags.append(AMBIGUOUS)
        names = ", ".join(f"{bible.catalog.cards[c]['name']} (id {c}, {bible.catalog.cards[c]['source']})"
                          for c in found)
        notes.append(f"{field} `{name}` names {len(found)} cards: {names}; use an id")
    return None


def _after(bible: Bible, at: str | None) -> bool:
    return at is not None and bible.order.knows(at) and bible.order.rank(at) > bible.order.rank(bible.end)


def _later(bible: Bible, card: dict[str, Any]) -> list[str]:
    """After a death (a true/false facet set false, `alive: false`): the card's progressions after this
    chapter, which the bible holds as if the character went on."""
    return [f"the card has a change at {at} ({card['source']}:{line})"
            for at, _, line in progressions(card) if _after(bible, at)]


def _progress(bible: Bible, op: dict[str, Any], card_id: str, flags: list[str], notes: list[str]) -> str | None:
    card = bible.catalog.cards[card_id]
    now = state_at(card, bible.order, bible.end)
    given = dict(op.get("set") or {})
    broken = broken_facet(bible, op)
    if broken:
        return broken
    same_state = "state" not in op or (now.state is not None and _same(now.state.value, op["state"]))
    same_facets = all(n in now.facets and _same(now.facets[n].value, v) for n, v in given.items())
    if same_state and same_facets:
        return f"{ALREADY_KNOWN}: {card['name']} already has this at {bible.document}"
    ended = any(v is False and (bible.schemas.get(n) or {}).get("type", "bool") == "bool" for n, v in given.items())
    later = _later(bible, card) if ended else []
    if later:
        flags.append(CONTRADICTS_LATER)
        notes.extend(later[:3])
    return None


def broken_facet(bible: Bible, op: dict[str, Any]) -> str | None:
    """`INVALID_VALUE: …` for the first value of the op's `set` its facet schema refuses."""
    for name, value in (op.get("set") or {}).items():
        schema = bible.schemas.get(name)
        if isinstance(schema, dict) and facet_schemas.breaks(schema, value):
            return f"{INVALID_VALUE}: `{name}` allows {facet_schemas.allowed(schema)}, not {value!r}"
    return None


def _relation(bible: Bible, op: dict[str, Any], card_id: str, other: str | None) -> bool:
    """Whether the relation holds at the chapter's end."""
    return any(e.relation.type == op["type"] and (e.target_id == other if other else _same(e.target, op["to"]))
               for e in edges(bible.catalog, card_id, bible.order, bible.end))


def check(bible: Bible, op: dict[str, Any]) -> Verdict:
    """The op's flags and notes, or its refusal."""
    flags: list[str] = []
    notes: list[str] = []
    line = bible.chapter.line_of(op["evidence"])
    if line is None:
        flags.append(EVIDENCE_NOT_FOUND)
        notes.append("the quote is not in the chapter (after NFKC and whitespace folding)")
    kind = op["op"]
    refused: str | None = None
    if kind == "entity":
        if bible.catalog.resolve(op["name"]):
            refused = f"{ALREADY_KNOWN}: `{op['name']}` already has a card"
    elif kind in ("progress", "relate", "unrelate"):
        card_id = _resolve(bible, op["entity"], "entity", flags, notes)
        other = _resolve(bible, op["to"], "to", flags, notes) if "to" in op else None
        if card_id is not None and kind == "progress":
            refused = _progress(bible, op, card_id, flags, notes)
        elif kind == "progress":  # a person no card has yet (an `entity` op may make it): its values still count
            refused = broken_facet(bible, op)
        elif card_id is not None and kind == "relate" and _relation(bible, op, card_id, other):
            refused = f"{ALREADY_KNOWN}: `{op['entity']}` is already {op['type']} of `{op['to']}` here"
        elif card_id is not None and kind == "relate":
            for rel in bible.catalog.relations.get(card_id, ()):
                if rel.type == op["type"] and _same(rel.other, op["to"]) and _after(bible, rel.since):
                    flags.append(CONTRADICTS_LATER)
                    notes.append(f"the bible has this relation begin later, at {rel.since} ({rel.source}:{rel.line})")
        elif card_id is not None and kind == "unrelate" and not _relation(bible, op, card_id, other):
            refused = f"{ALREADY_KNOWN}: no `{op['type']}` relation to `{op['to']}` holds here"
    elif kind == "fact":
        if any(_same(f["content"], op["content"]) for f in bible.facts):
            refused = f"{ALREADY_KNOWN}: a fact in force says this already"
        for name in op.get("entities") or ():
            _resolve(bible, name, "entities", flags, notes)
    elif kind in ("invalidate", "reveal") and "fact" in op:
        found = [f for f in bible.facts if f["id"] == op["fact"]]
        if not found:
            flags.append(UNKNOWN_FACT)
            notes.append(f"no fact `{op['fact']}` is in force at {bible.document}")
        elif kind == "reveal" and _revealed(bible, found[0]):
            refused = f"{ALREADY_KNOWN}: the reader learns `{op['fact']}` already at {found[0]['revealed']}"
    elif kind == "reveal":
        same = [f for f in bible.facts if _same(f["content"], op["content"])]
        if same and _revealed(bible, same[0]):
            refused = f"{ALREADY_KNOWN}: the reader learns this already at {same[0]['revealed']} ({same[0]['id']})"
    elif kind == "thread":
        known = [t for t in bible.threads if _same(t.title, op["title"]) or _same(t.id, op["title"])]
        later = [t for t in known if op["action"] in ("resolve", "drop") and _after(bible, t.resolved or t.dropped)]
        if later:
            flags.append(CONTRADICTS_LATER)
            notes.append(f"the thread ends later, at {later[0].resolved or later[0].dropped} ({later[0].source})")
        now = thread_status(known[0], bible.order, bible.end) if known else None
        if op["action"] == "open" and known:
            refused = f"{ALREADY_KNOWN}: the thread `{op['title']}` exists ({known[0].source})"
        elif op["action"] != "open" and not known:
            flags.append(UNKNOWN_THREAD)
            notes.append(f"no thread is called `{op['title']}`: open it first")
        elif op["action"] in ("resolve", "drop") and now in ("resolved", "dropped"):
            refused = f"{ALREADY_KNOWN}: the thread `{op['title']}` is {now} already here ({known[0].source})"
        elif op["action"] == "touch" and now != "open":
            flags.append(UNKNOWN_THREAD)
            notes.append(f"the thread `{op['title']}` is not open at {bible.document} ({now or 'opened later'})")
        for name in op.get("entities") or ():
            _resolve(bible, name, "entities", flags, notes)
    elif kind == "scene":
        for where, name in [*(("present", n) for n in op.get("present") or ()),
                            *((("pov", op["pov"]),) if op.get("pov") is not None else ())]:
            _resolve(bible, name, where, flags, notes)
        if _scene_holds(bible, op):
            refused = f"{ALREADY_KNOWN}: the scene holds these values at {bible.document} already" \
                if any(op.get(k) is not None for k in ("pov", "present", "location", "date")) else \
                f"{ALREADY_KNOWN}: the scene holds none of the values the op takes away at {bible.document}"
    if refused is not None:
        code, _, message = refused.partition(": ")
        return Verdict((), (), line, code, message)
    return Verdict(tuple(dict.fromkeys(flags)), tuple(notes), line)


def _revealed(bible: Bible, fact: dict[str, Any]) -> bool:
    """Whether the reader knows the fact by the chapter's end already (it says where it is revealed)."""
    at = fact.get("revealed")
    return isinstance(at, str) and bible.order.knows(at) and bible.order.rank(at) <= bible.order.rank(bible.end)


def target(bible: Bible, op: dict[str, Any]) -> Target | None:
    """Where an op that changes something written already lands (None: nothing found, or an op that
    writes a new item or file): the card a relation is written on and its line, the fact's memory, the
    thread's file. A scene's file is the flow's to find."""
    kind = op["op"]
    if kind == "unrelate":
        ids, others = bible.catalog.resolve(op["entity"]), bible.catalog.resolve(op["to"])
        if len(ids) != 1:
            return None
        other = others[0] if len(others) == 1 else None
        for e in edges(bible.catalog, ids[0], bible.order, bible.end):
            if e.relation.type == op["type"] and (e.target_id == other if other else _same(e.target, op["to"])):
                writer = bible.catalog.by_source.get(e.relation.source)
                return Target("card", writer, e.relation.line) if writer else None
        return None
    if kind in ("invalidate", "reveal"):
        found = [f for f in bible.facts if (f["id"] == op["fact"] if "fact" in op else _same(f["content"], op["content"]))]
        return Target("memory", found[0]["id"]) if found else None
    if kind == "thread" and op["action"] != "open":
        known = [t for t in bible.threads if _same(t.title, op["title"]) or _same(t.id, op["title"])]
        return Target("file", f"{known[0].id}.md") if known else None
    return None


def _scene_holds(bible: Bible, op: dict[str, Any]) -> bool:
    """Whether the scene the op names is written already, holds every value the op gives and none of the
    ones it takes away (null) (without `scene`: a scene file of front matter only); an op that only takes
    values away holds already when the scene has none of them (nothing to take)."""
    title = op["scene"].strip() if op.get("scene") else None
    mine = bible.scenes.get(bible.document) or []
    values = {k: op[k] for k in ("pov", "present", "location", "date") if k in op}
    gone = {k for k, v in values.items() if v is None}
    if gone & _own_keys(mine, title):
        return False
    if all(v is None for v in values.values()):
        return True
    if title is None and (len(mine) != 1 or mine[0].title):  # front matter values only in a file of sections
        return False
    if title is not None and not any(s.title == title for s in mine):
        return False
    at = f"{bible.document}#{title}" if title is not None else bible.document
    held, _ = scene_state(lambda d: bible.scenes.get(d, []), bible.order, at)
    return all(k in held and _same(held[k]["value"], v) for k, v in values.items() if v is not None)


def _own_keys(mine: list[Any], title: str | None) -> set[str]:
    """The keys written in the scene's own lines: its section's (not the front matter's it starts from),
    or the front matter's (`title` None)."""
    if title is not None:
        return {k for s in mine if s.title == title for k, (_, line) in s.values.items() if line > s.line}
    if len(mine) == 1 and not mine[0].title:
        return set(mine[0].values)
    return {k for k, (_, line) in mine[0].values.items() if line < mine[0].line} if mine else set()


def folded(name: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", name).split()).casefold()


def unknown_names(bible: Bible, op: dict[str, Any]) -> list[tuple[str, str]]:
    """(field, name) for each of the op's names that no card has (`entity`, `to`, `entities`, `pov`,
    `present`)."""
    named = [(k, op[k]) for k in ("entity", "to", "pov") if isinstance(op.get(k), str) and op["op"] != "entity"]
    named += [(k, n) for k in ("entities", "present") for n in op.get(k) or ()]
    return [(k, n) for k, n in named if not bible.catalog.resolve(n)]
