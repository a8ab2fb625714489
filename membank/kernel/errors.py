"""Errors with stable codes: the only way a failure crosses a channel boundary."""

from __future__ import annotations

from typing import Any

INVALID_ARGUMENT = "INVALID_ARGUMENT"
NOT_FOUND = "NOT_FOUND"
CONFLICT = "CONFLICT"
DB_ERROR = "DB_ERROR"
CANCELED = "CANCELED"
TIMEOUT = "TIMEOUT"
INTERNAL = "INTERNAL"

CODES = frozenset(
    {
        INVALID_ARGUMENT,
        NOT_FOUND,
        CONFLICT,
        DB_ERROR,
        CANCELED,
        TIMEOUT,
        "MEMORY_EPISODE_WRITE_FAILED",
        "MEMORY_CAPACITY_EXCEEDED",
        INTERNAL,
    }
)


class MembankError(Exception):
    """A failure the app can map: a stable code, a readable message, details."""

    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    def envelope(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"ok": False, "error": error}


def invalid(field: str, message: str) -> MembankError:
    return MembankError(INVALID_ARGUMENT, message, {"field": field})
