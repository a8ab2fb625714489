"""The derived SQLite index (apsw): schema, writes and queries. It knows nothing of file formats or channels."""

from apsw import Error as StorageError

from .store import SCHEMA_VERSION, Index, IndexError_

__all__ = ["SCHEMA_VERSION", "Index", "IndexError_", "StorageError"]
