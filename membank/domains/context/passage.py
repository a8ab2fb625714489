"""Layer 5 (context.md): the instruction, the text before, the selection and the text after, taken
from `documentText` (unsaved edits) or the document's file in the project — never outside it."""

from __future__ import annotations

from dataclasses import dataclass

from ...kernel import errors
from . import surrounding
from .layers import clean

@dataclass(frozen=True)
class Passage:
    instruction: str
    before: surrounding.Side
    selection: str
    after: surrounding.Side
    located: bool  # the selection was found in the document text (so there is text around it)


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
        if at < 0 and text is not None and chosen:  # the app's line ends or normal form differ from the file's
            text, chosen = clean(text), clean(chosen)
            at = text.find(chosen)
        located = at >= 0
        head, tail = (text[:at], text[at + len(chosen):]) if located and text is not None else ("", "")
    return Passage(instruction, surrounding.before(head, n), chosen, surrounding.after(tail, n), located)
