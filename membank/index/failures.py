"""Failures of the index or the disk, as the stable DB_ERROR the app maps."""

from __future__ import annotations

from ..kernel import errors
from ..kernel.errors import MembankError
from .store import IndexError_


def storage_error(e: BaseException, what: str | None = None) -> MembankError:
    """DB_ERROR for a failure of the index or the disk; the message carries no absolute path (an
    OSError's strerror only: str(e) would carry it). `what` names, under the bank, what was written."""
    if isinstance(e, IndexError_):
        return MembankError(errors.DB_ERROR, str(e))
    if isinstance(e, OSError) and what is not None:
        return MembankError(errors.DB_ERROR, f"could not write {what}: {e.strerror or e.__class__.__name__}")
    if isinstance(e, OSError):
        return MembankError(errors.DB_ERROR, f"a bank file could not be read or written: "
                            f"{e.strerror or e.__class__.__name__}")
    return MembankError(errors.DB_ERROR, f"the index could not be read or written ({e.__class__.__name__}); "
                        "try again, and run `membank index --rebuild` if it persists")
