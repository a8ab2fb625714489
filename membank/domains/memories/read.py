"""Reading memories from the index: one by id, or a filtered list in deterministic order."""

from __future__ import annotations

import json
from typing import Any

from ...files.records import Memory
from ...files.scan import BankRoot
from ...index import Index
from ...index.schema import DomainSchema, register, register_row
from ...kernel import errors
from ...kernel.errors import MembankError
from ..contract import Bank
from ..recall.order import ORDER_SQL, columns_of


def _columns(memory: Memory) -> dict[str, Any]:
    """A memory's own columns in `entries`: what lists filter on and what the deterministic order sorts by."""
    scope_rank, type_rank, _, updated_us, _ = columns_of(memory.scope, memory.type, memory.updated, memory.id)
    return {"type": memory.type, "scope": memory.scope, "document": memory.document, "origin": memory.origin,
            "scope_rank": scope_rank, "type_rank": type_rank, "updated_us": updated_us,
            "deleted": int(memory.deleted_at is not None)}


register_row(Memory, _columns)
# lists in deterministic order read this index, not a sort
register(DomainSchema("memories.order", 1, f"CREATE INDEX entries_order ON entries(kind, {ORDER_SQL})",
                      "DROP INDEX IF EXISTS entries_order"))


def find(bank: Bank, memory_id: str) -> tuple[BankRoot, dict[str, Any], str]:
    """(the bank folder it lives in, the memory, its file's content hash); NOT_FOUND if none is live."""
    with bank.index.lock:
        found = bank.index.find("memory", memory_id)
    if found is None:
        raise MembankError(errors.NOT_FOUND, f"no memory with id `{memory_id}`", {"id": memory_id})
    which, record, digest = found
    return (bank.global_ if which == "global" else bank.project), record, digest


def get(bank: Bank, memory_id: str) -> dict[str, Any]:
    return find(bank, memory_id)[1]


def list_(bank: Bank, scope: str | None = None, type_: str | None = None, origin: str | None = None,
          include_deleted: bool = False) -> dict[str, Any]:
    return {"items": query(bank.index, scope=scope, type_=type_, origin=origin, include_deleted=include_deleted)}


def query(index: Index, *, scope: str | None = None, type_: str | None = None, origin: str | None = None,
             include_deleted: bool = False) -> list[dict[str, Any]]:
    where = ["kind = 'memory'", "removed_at IS NULL", "shadowed = 0"]
    args: list[Any] = []
    if not include_deleted:
        where.append("deleted = 0")
    for column, value in (("scope", scope), ("type", type_), ("origin", origin)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    sql = f"SELECT record FROM entries WHERE {' AND '.join(where)} ORDER BY {ORDER_SQL}"
    return [json.loads(r) for (r,) in index.db.execute(sql, args)]
