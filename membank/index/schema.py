"""The schema registry: the tables and indexes a domain keeps in the index, and the row columns it adds.

The index owns the generic tables (files, entries, diagnostics, fts, vec) and versions them with
`PRAGMA user_version`: a change there rebuilds everything. A domain registers its own objects here
with a version of their own. When that version moves, only that domain's objects are dropped and
created again, and the files they are derived from are forgotten, so the next sync re-reads exactly
those files (the files are the truth; nothing else is rebuilt)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..files.records import Record


@dataclass(frozen=True)
class DomainSchema:
    name: str  # `learning.events`; its version is kept in meta as `schema:<name>`
    version: int
    create: str  # the DDL (one or more statements)
    drop: str  # undoes `create` (IF EXISTS: it also runs on an index that never had it)
    derived_from: tuple[str, ...] = ()  # citation prefixes of the files its rows come from
    # deletes its rows of one file when the file is gone: SQL (`?` is the file's citation), or a
    # function of (index, citation) when what is left must be worked out again
    forget: str | Callable[[Any, str], None] = ""
    # rows a domain derives from each record as it is stored (a relation, a story position ...):
    # `rows(record)` gives them, `insert` stores one (the entry's rowid first, then the row), and
    # `clear` deletes an entry's rows (`?` is its rowid) before the entry is rewritten or removed
    rows: Callable[[Any], list[tuple[Any, ...]]] | None = None
    insert: str = ""
    clear: str = ""
    # vectors a domain keeps beside an entry's own (a card's sentences), made by the same model in the same
    # step (index/sidevectors.py): `embeds(kind, record JSON)` lists the texts (None: none kept for this
    # entry), `embedded(texts, vectors)` the rows `insert` stores after the entry's rowid; `clear` deletes them
    embeds: Callable[[str, str], list[str] | None] | None = None
    embedded: Callable[[list[str], Any], list[tuple[Any, ...]]] | None = None


SCHEMAS: dict[str, DomainSchema] = {}
# extra `entries` columns for a kind of record (type, scope, the order's ranks ...), by record class
ROW_COLUMNS: dict[type, Callable[[Any], dict[str, Any]]] = {}


def register(schema: DomainSchema) -> None:
    SCHEMAS[schema.name] = schema


def register_row(record_class: type, columns: Callable[[Any], dict[str, Any]]) -> None:
    ROW_COLUMNS[record_class] = columns


def row_columns(record: Record) -> dict[str, Any]:
    fn = ROW_COLUMNS.get(type(record))
    return fn(record) if fn is not None else {}
