"""Layer 5 (context.md): the instruction, the text before, the selection and the text after, taken
from `documentText` (unsaved edits) or the document's file in the project — never outside it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ...files.reader import Unreadable, read_regular
from ...kernel import errors
from ...kernel.errors import MembankError
from . import surrounding

MAX_MANUSCRIPT_BYTES = 8 * 1024 * 1024  # a chapter file membank reads for the surrounding text


@dataclass(frozen=True)
class Passage:
    instruction: str
    before: surrounding.Side
    selection: str
    after: surrounding.Side
    located: bool  # the selection was found in the document text (so there is text around it)


def read_document(root: Path, document: str) -> str | None:
    """The document's text, or None when there is no such file. A link leading out of the project,
    or anything but an ordinary file, is refused like any path outside it."""
    path = root / document
    try:
        real = Path(os.path.realpath(path))
        real.relative_to(Path(os.path.realpath(root)))
    except ValueError:
        raise errors.invalid("documentId", "`documentId` must be a file inside the project") from None
    try:
        data, _ = read_regular(real, MAX_MANUSCRIPT_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, Unreadable) as e:
        raise MembankError(errors.INVALID_ARGUMENT, f"the document {document} cannot be read "
                           f"({getattr(e, 'message', e.__class__.__name__)})", {"field": "documentId"}) from None
    if len(data) > MAX_MANUSCRIPT_BYTES:
        raise errors.invalid("documentId", f"the document {document} is larger than 8 MiB; send the text around "
                             "the selection as `documentText`")
    return data.decode("utf-8", "replace").lstrip("\ufeff")


def take(text: str | None, start: int | None, end: int | None, selected: str | None, instruction: str,
         n: int) -> Passage:
    """The passage: `selection.start/end` are code-point offsets into `text`; `selection.text` is found
    in it (first occurrence) for the text around it. `n` code points each side at most."""
    if start is not None or end is not None:
        if start is None or end is None:
            raise errors.invalid("selection.start" if start is None else "selection.end",
                                 "a selection by offsets needs both `start` and `end`")
        if text is None:
            raise errors.invalid("selection.start", "a selection by offsets needs the document's text "
                                 "(`documentText`, or a `documentId` whose file exists)")
        if not 0 <= start <= end <= len(text):
            raise errors.invalid("selection.end" if 0 <= start <= len(text) else "selection.start",
                                 f"the selection must lie within the document's {len(text):,} characters, "
                                 "with start ≤ end")
        head, chosen, tail = text[:start], text[start:end], text[end:]
        located = True
    else:
        chosen = selected or ""
        at = text.find(chosen) if text is not None and chosen else -1
        located = at >= 0
        head, tail = (text[:at], text[at + len(chosen):]) if located and text is not None else ("", "")
    return Passage(instruction, surrounding.before(head, n), chosen, surrounding.after(tail, n), located)
