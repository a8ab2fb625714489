"""What the story's problems are made of (problems.py), kept in the index as each card is indexed: the
names a card answers to, the names its relations and `[[links]]` point at, and the story positions
it writes, each with its line. Whether a name leads to one card depends on every card, so what is
kept is what each card writes, never a verdict: the verdict is a join over the live cards at read
time (their liveness, clashes and a project card hiding a global one live in `entries`), and no
`membank status` builds the card catalog to give it (docs/decisions.md, "Story problems from kept
rows").

Every sync path writes these rows where it writes the card's entry (index/schema.py `rows`, `clear`):
a full sync, `sync_paths`, the watcher and every write alike."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ...files.records import Card
from ...files.scan import GLOBAL_PREFIX, PROJECT_PREFIX
from ...index import Index
from ...index.schema import DomainSchema, register
from .names import normalize
from .state import links, outgoing, progressions

NAME, TO, AT = "name", "to", "at"  # a name the card answers to; a name it points at; a position it writes
SPAN = "span"  # a relation with both `since` and `until`: `[since, until]` (doctor warns when it ends first)


def card_positions(card: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(position, line, key) for every position a card names."""
    lines = card.get("lines") or {}
    out = [(card["introduced"], lines.get("introduced", 1), "introduced")] if card.get("introduced") else []
    out += [(at, line, "at") for at, _, line in progressions(card)]
    for rel in outgoing(card):
        out += [(p, rel.line, key) for p, key in ((rel.since, "since"), (rel.until, "until")) if p]
    return out


def derive(card: dict[str, Any]) -> list[tuple[str, str, str | None, str | None, int | None]]:
    """(role, value, written, type, line) for one card's API record: its names (normalized as the
    catalog resolves them), each relation and link (the name normalized, as written, its type and
    line) and each position it writes (with its line)."""
    names = {normalize(str(n).strip()) for n in {card["name"], card["id"], *(card.get("aliases") or ())}}
    rows: list[tuple[str, str, str | None, str | None, int | None]] = [(NAME, n, None, None, None)
                                                                        for n in sorted(names)]
    rows += [(TO, normalize(r.other.strip()), r.other, r.type, r.line) for r in (*outgoing(card), *links(card))]
    rows += [(AT, position, None, None, line) for position, line, _ in card_positions(card)]
    rows += [(SPAN, json.dumps([r.since, r.until], ensure_ascii=False), r.other, r.type, r.line)
             for r in outgoing(card) if r.since and r.until]
    return rows


# where cards come from, in either bank: what a table derived from cards names as its `derived_from`
CARD_SOURCES = tuple(f"{prefix}{section}/" for prefix in (PROJECT_PREFIX, GLOBAL_PREFIX)
                     for section in ("characters", "world"))


def _rows(record: Any) -> list[tuple[str, str, str | None, str | None, int | None]]:
    return derive(record.to_api()) if isinstance(record, Card) else []


register(DomainSchema(
    "story.refs", 2,
    "CREATE TABLE story_refs(entry INTEGER NOT NULL, role TEXT NOT NULL, value TEXT NOT NULL, written TEXT,"
    " type TEXT, line INTEGER); CREATE INDEX story_refs_entry ON story_refs(entry)",
    "DROP TABLE IF EXISTS story_refs",
    derived_from=CARD_SOURCES,
    rows=_rows,
    insert="INSERT INTO story_refs(entry, role, value, written, type, line) VALUES (?, ?, ?, ?, ?, ?)",
    clear="DELETE FROM story_refs WHERE entry = ?"))

# the cards the story sees (the catalog's too, cards.py): live, not shadowed by a clash, not deleted, and
# a project card hides a global card with its id
LIVE = """live AS MATERIALIZED (
    SELECT e.rowid AS entry, e.id AS id, e.source AS source FROM entries AS e
    WHERE e.grp = 'card' AND e.removed_at IS NULL AND e.shadowed = 0 AND e.deleted = 0
      AND (e.bank = 'project' OR NOT EXISTS (
        SELECT 1 FROM entries AS p WHERE p.grp = 'card' AND p.bank = 'project' AND p.id = e.id
          AND p.removed_at IS NULL AND p.shadowed = 0 AND p.deleted = 0)))"""


@dataclass(frozen=True)
class Written:
    """What the live cards write, as the problems need it."""

    pointing: tuple[tuple[str, int, str, str, str], ...]  # (source, line, name as written, type, normalized)
    names: dict[str, frozenset[str]]  # a normalized name the cards point at -> the ids of the cards it names
    positions: tuple[tuple[str, int, str], ...]  # (source, line, position); only when asked for
    spans: tuple[tuple[str, int, str, str, str, str], ...] = ()  # (source, line, other, type, since, until)


def written(index: Index, positions: bool) -> Written:
    """Read from the kept rows; a live card without any (an index opened without a sync since this
    table came, `open(sync=False)`) is derived from its record here, so the answer never depends on
    whether a sync has run since."""
    db = index.db
    roles = (TO, SPAN, AT) if positions else (TO, SPAN)
    pointing: list[tuple[str, int, str, str, str]] = []
    at: list[tuple[str, int, str]] = []
    spans: list[tuple[str, int, str, str, str, str]] = []
    by_name: dict[str, set[str]] = {}
    for source, role, value, text, type_, line in db.execute(
            f"WITH {LIVE} SELECT live.source, r.role, r.value, r.written, r.type, r.line"
            " FROM live JOIN story_refs AS r ON r.entry = live.entry"
            f" WHERE r.role IN ({','.join('?' * len(roles))})", roles):
        if role == TO:
            pointing.append((source, line, text, type_, value))
        elif role == SPAN:
            spans.append((source, line, text, type_, *json.loads(value)))
        else:
            at.append((source, line, value))
    missing = db.execute(
        f"WITH {LIVE} SELECT live.id, e.record FROM live JOIN entries AS e ON e.rowid = live.entry"
        " WHERE NOT EXISTS (SELECT 1 FROM story_refs AS r WHERE r.entry = live.entry)").fetchall()
    for card_id, record in missing:
        card = json.loads(record)
        for role, value, text, type_, line in derive(card):
            if role == NAME:
                by_name.setdefault(value, set()).add(card_id)
            elif role == TO:
                pointing.append((card["source"], int(line or 1), str(text), str(type_), value))
            elif role == SPAN:
                spans.append((card["source"], int(line or 1), str(text), str(type_), *json.loads(value)))
            elif positions:
                at.append((card["source"], int(line or 1), value))
    wanted = sorted({p[4] for p in pointing})
    for value, card_id in db.execute(
            f"WITH {LIVE} SELECT r.value, live.id FROM live JOIN story_refs AS r ON r.entry = live.entry"
            " WHERE r.role = ? AND r.value IN (SELECT value FROM json_each(?))", (NAME, json.dumps(wanted))):
        by_name.setdefault(value, set()).add(card_id)
    return Written(tuple(pointing), {k: frozenset(v) for k, v in by_name.items()}, tuple(at), tuple(spans))


def unresolved(found: Written) -> list[tuple[str, int, str]]:
    """(source, line, message) for every relation or link whose name leads to no card, or to several."""
    out = []
    for source, line, other, type_, key in found.pointing:
        ids = sorted(found.names.get(key, ()))
        if not ids:
            out.append((source, line, f"`{other}` names no character or world entry; the relation ({type_}) is kept "
                        "but leads nowhere"))
        elif len(ids) > 1:
            out.append((source, line, f"`{other}` names {len(ids)} entries ({', '.join(ids)}); write the id to say "
                        "which"))
    return out
