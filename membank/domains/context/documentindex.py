"""The index that finds a document's own memories (context/memories.py) without walking every eligible
one. Registered from a module of its own so that `runtime/schemas.py`, which every command imports
before its project opens, does not import the recall stack behind context/memories.py with it."""

from __future__ import annotations

from ...index.schema import DomainSchema, register

register(DomainSchema("context.document", 1, "CREATE INDEX entries_document ON entries(document)"
                      " WHERE kind = 'memory' AND scope = 'document'", "DROP INDEX IF EXISTS entries_document"))
