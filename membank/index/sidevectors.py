"""Vectors a domain keeps beside an entry's own (the story's: each card's sentences), made by the same
model in the same step as the entry's vector and written in the same transaction: by a sync's
`embed_pending`, and by the embedding beside a large sync. They go where the entry's other derived
rows go (the schema's `clear`: the entry rewritten, removed, or the index rebuilt), so they are in step
with the entry's vector whenever it has one. The index stays generic: a domain says what to embed
(`DomainSchema.embeds`) and what to store of it (`DomainSchema.embedded`, `insert`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from .schema import SCHEMAS

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Batch:
    """Entries to embed: their own texts first (one each, in `rowids`' order), then each domain's texts."""
    rowids: tuple[int, ...]
    texts: tuple[str, ...]
    sides: tuple[tuple[int, str, int, int], ...]  # (rowid, schema name, start, end): its texts in `texts`


def batch(rows: Iterable[tuple[int, str, str, str]]) -> Batch:
    """The Batch of `rows`: (rowid, kind, record JSON, the entry's own text) each."""
    rows = list(rows)
    keepers = [s for s in SCHEMAS.values() if s.embeds is not None]
    texts = [text for _, _, _, text in rows]
    sides = []
    for rowid, kind, record, _ in rows:
        for schema in keepers:
            said = schema.embeds(kind, record)  # type: ignore[misc]
            if said is not None:
                sides.append((rowid, schema.name, len(texts), len(texts) + len(said)))
                texts.extend(said)
    return Batch(tuple(rowid for rowid, _, _, _ in rows), tuple(texts), tuple(sides))


def store(index: Any, found: Batch, vectors: np.ndarray, new: bool = False) -> None:
    """Write a Batch's vectors (`vectors`: one row per text) in the caller's transaction: the entries'
    (`put_vectors`), then each domain's rows, an entry's earlier rows replaced. `new`: as `put_vectors`
    (no entry has any yet)."""
    count = len(found.rowids)
    index.put_vectors(list(found.rowids), vectors[:count], new=new)
    for rowid, name, start, end in found.sides:
        schema = SCHEMAS[name]
        if not new and schema.clear:
            index.db.execute(schema.clear, (rowid,))
        rows = schema.embedded(list(found.texts[start:end]), vectors[start:end])  # type: ignore[misc]
        index.db.executemany(schema.insert, [(rowid, *row) for row in rows])
