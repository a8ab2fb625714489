"""The manuscript as membank reads it: one document's text, from inside the project only."""

from __future__ import annotations

import os
from pathlib import Path

from ...files.conflicts import RESOLVE, conflict_line
from ...files.reader import Unreadable, read_regular
from ...kernel import errors
from ...kernel.errors import MembankError

MAX_MANUSCRIPT_BYTES = 8 * 1024 * 1024  # a chapter file membank reads (the surrounding text, a check)
SEND_TEXT = "send its text as `text`"  # a check of a missing file: the CLI names its own way (--text, `-`)


def read_document(root: Path, document: str) -> str | None:
    """The document's text, or None when there is no such file. A link leading out of the project,
    or anything but an ordinary file, is refused like any path outside it."""
    data = read_document_bytes(root, document)
    return None if data is None else data.decode("utf-8", "replace").lstrip("\ufeff")


def read_document_bytes(root: Path, document: str, cap: int = MAX_MANUSCRIPT_BYTES) -> bytes | None:
    """The document's bytes (read_document's rules), or None when there is no such file."""
    path = root / document
    try:
        real = Path(os.path.realpath(path))
        real.relative_to(Path(os.path.realpath(root)))
    except ValueError:
        raise errors.invalid("documentId", "`documentId` must be a file inside the project") from None
    try:
        data, _ = read_regular(real, cap + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, Unreadable) as e:
        raise MembankError(errors.INVALID_ARGUMENT, f"the document {document} cannot be read "
                           f"({getattr(e, 'message', e.__class__.__name__)})", {"field": "documentId"}) from None
    if len(data) > cap:
        raise errors.invalid("documentId", f"the document {document} is larger than {cap // (1024 * 1024)} MiB; "
                             "send the text around the selection as `documentText`")
    return data


def unconflicted(document: str, text: str) -> str:
    """`text`, read from the document's file, or CONFLICT on the line of the first git conflict marker in it
    (files.md, Git): a chapter a merge left both versions in is checked or captured once it is resolved."""
    marker = conflict_line(text)
    if marker is not None:
        raise MembankError(errors.CONFLICT, f"{document}:{marker}: the chapter holds git conflict markers left by "
                           f"a merge, so both versions are in it: {RESOLVE}, then try again",
                           {"field": "documentId", "line": marker})
    return text
