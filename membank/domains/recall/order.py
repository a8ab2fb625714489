"""The deterministic order of memories, written once for SQL and for Python.

scope (document > project > global), type (preference > fact > note > others by name), newest
`updatedAt` first, then `id` ascending: total, so every machine agrees. The index stores the
columns `columns_of` gives; SQL sorts by `ORDER_SQL`, Python by `key_of` over the same columns
(a property test holds the two equal). SQLite compares text as UTF-8 bytes, which is code point
order, the order Python's `str` uses."""

from __future__ import annotations

from typing import Any

from ...files.frontmatter import iso_to_micros
from ...files.records import SCOPE_RANK, TYPE_RANK

OTHER_TYPES = 3  # the type rank of every type not in TYPE_RANK: they sort by name among themselves
ORDER_SQL = "scope_rank, type_rank, type, updated_us DESC, id"
KEY_COLUMNS = "scope_rank, type_rank, type, updated_us, id"  # what `key_of` takes, in this order
# `key_of(KEY_COLUMNS)` computed by SQLite, for queries that rank many rows (a test holds them equal)
KEY_SQL = f"scope_rank, type_rank, CASE WHEN type_rank = {OTHER_TYPES} THEN type ELSE '' END, -updated_us, id"

Key = tuple[int, int, str, int, str]


def columns_of(scope: str, type_: str, updated: str, id_: str) -> tuple[int, int, str, int, str]:
    """The stored columns of the order (KEY_COLUMNS) for a memory."""
    return SCOPE_RANK[scope], TYPE_RANK.get(type_, OTHER_TYPES), type_, iso_to_micros(updated), id_


def key_of(scope_rank: int, type_rank: int, type_: str, updated_us: int, id_: str) -> Key:
    """The sort key of one memory from its stored columns; equal to ORDER_SQL's order."""
    return scope_rank, type_rank, type_ if type_rank == OTHER_TYPES else "", -updated_us, id_


def deterministic_key(memory: dict[str, Any]) -> Key:
    """The sort key of a memory as the API returns it."""
    return key_of(*columns_of(memory["scope"], memory["type"], memory["updatedAt"], memory["id"]))


def deterministic_detail(memory: dict[str, Any]) -> str:
    return f"scope {memory['scope']} > type {memory['type']} > updated {memory['updatedAt'][:10]} > id {memory['id']}"
