"""The manuscript's tables in the index: one row per document read, one per passage (with its vector),
and the passages' words (FTS5, CJK characters spaced apart as memories' are). All derived from the
manuscript, which membank never writes: `membank index --rebuild` makes them again."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Iterable

from ...index import Index
from ...kernel import errors
from ...kernel.errors import MembankError
from ...index.schema import DomainSchema, register
from ...index.store import TOKENIZER

GENERATION = "manuscript.generation"  # meta: moves whenever a passage comes, goes or gets a vector
MODEL = "manuscript.model"  # meta: the model the passages' vectors were made with

register(DomainSchema(
    "manuscript.passages", 1,
    "CREATE TABLE manuscript_documents(document TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
    " hash TEXT NOT NULL, problem TEXT);"
    " CREATE TABLE manuscript_passages(id INTEGER PRIMARY KEY, document TEXT NOT NULL, ordinal INTEGER NOT NULL,"
    " scene TEXT NOT NULL, scene_no INTEGER NOT NULL, line INTEGER NOT NULL, end_line INTEGER NOT NULL,"
    " start INTEGER NOT NULL, stop INTEGER NOT NULL, text TEXT NOT NULL, hash TEXT NOT NULL, vec BLOB);"
    " CREATE INDEX manuscript_passages_doc ON manuscript_passages(document, ordinal);"
    " CREATE INDEX manuscript_passages_unembedded ON manuscript_passages(id) WHERE vec IS NULL;"
    " CREATE VIRTUAL TABLE manuscript_fts USING fts5(body, contentless_delete=1, content='',"
    f" tokenize='{' '.join(TOKENIZER)}')",
    "DROP TABLE IF EXISTS manuscript_documents; DROP TABLE IF EXISTS manuscript_passages;"
    " DROP TABLE IF EXISTS manuscript_fts"))

# the passages' strong windows (strong.py): each passage's vectors, with the hash of the text they were made of
register(DomainSchema(
    "manuscript.strong", 1,
    "CREATE TABLE manuscript_strong(passage INTEGER NOT NULL, part INTEGER NOT NULL, hash TEXT NOT NULL,"
    " emb BLOB NOT NULL, PRIMARY KEY(passage, part))",
    "DROP TABLE IF EXISTS manuscript_strong"))


@dataclass(frozen=True)
class Stored:
    """A passage as the index holds it."""

    id: int
    document: str
    ordinal: int
    scene: str
    scene_no: int
    line: int
    end_line: int
    text: str


COLUMNS = "id, document, ordinal, scene, scene_no, line, end_line, text"


def passages(index: Index, ids: Iterable[int]) -> list[Stored]:
    """The passages with these ids."""
    rows = index.db.execute(f"SELECT {COLUMNS} FROM manuscript_passages WHERE id IN (SELECT value FROM json_each(?))",
                            (json.dumps([int(i) for i in ids]),)).fetchall()
    return [Stored(*row) for row in rows]


def generation(index: Index) -> int:
    return int(index.get_meta(GENERATION) or 0)


def moved(index: Index) -> None:
    index.set_meta(GENERATION, str(generation(index) + 1))


def unknown_position(field: str, position: str) -> MembankError:
    """A `before` whose document the story order does not hold: it would count as after every chapter."""
    return errors.invalid(field, f"`{position}` is not a position of the story: list it in project.yaml "
                          "`chapters:` (or, without that list, create the file); nothing after a position is "
                          "ever searched, and an unknown one would be after every chapter")
