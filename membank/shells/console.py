"""The two consoles every command prints through, `out` (stdout, never wrapped) and `err` (stderr).

Each is rich's console (`Shown`: the writer's text shown, never run by the terminal), made at its first
use. rich's import is ~100 M instructions of a command's process (7 % of `membank status`), so `out`
writes a line of plain text itself when rich would write exactly that line: stdout is no terminal
(piped, redirected), nothing in the environment makes rich style or size it (FORCE_COLOR,
TTY_COMPATIBLE, COLUMNS), and the line has nothing rich lays out (a tab it expands, trailing spaces
past the width it trims, a control character in a styled part it strips). Anything else goes to rich.
`styled(...)` is `Text.assemble(...)`'s parts, made into a rich Text only when rich prints them."""

from __future__ import annotations

import os
import sys
from typing import Any, Iterable

from .cells import visible

PIPED_WIDTH = 120  # without a terminal (piped, redirected, CI) rich would lay tables out in 80 columns


class Styled:
    """A line's parts, each a str or (str, style), as `rich.text.Text.assemble` takes them."""

    __slots__ = ("parts",)

    def __init__(self, parts: tuple[Any, ...]):
        self.parts = parts

    def text(self) -> Any:
        from rich.text import Text

        return Text.assemble(*self.parts)


def styled(*parts: Any) -> Styled:
    return Styled(parts)


def shown_console(**options: Any) -> Any:
    """A rich console that shows the writer's text and never runs it: control characters (an escape
    sequence in a card's name, a memory's body) are printed as their control pictures (`cells.visible`);
    piped, PIPED_WIDTH columns wide unless $COLUMNS says otherwise."""
    from rich.console import Console
    from rich.segment import Segment

    class Shown(Console):
        def render_str(self, text: str, *args: Any, **kwargs: Any) -> Any:
            return super().render_str(visible(text), *args, **kwargs)

        def render(self, renderable: Any, options: Any = None) -> Iterable[Segment]:
            for segment in super().render(renderable, options):  # a Text made elsewhere: its text too
                yield segment if segment.control or segment.text.isprintable() else \
                    Segment(visible(segment.text), segment.style, segment.control)

    made = Shown(**options)
    if not made.is_terminal and not os.environ.get("COLUMNS"):
        made.width = PIPED_WIDTH
    return made


def piped() -> bool:
    """Whether stdout is no terminal to rich, at its default width, by the same tests rich makes."""
    env = os.environ
    if env.get("FORCE_COLOR") is not None or env.get("TTY_COMPATIBLE") or env.get("COLUMNS") \
            or "IPython" in sys.modules or getattr(sys.stdin, "__module__", "").startswith("idlelib"):
        return False
    isatty = getattr(sys.stdout, "isatty", None)
    try:
        return isatty is not None and not isatty()
    except ValueError:  # closed: rich's error, not ours
        return False


def plain(objects: tuple[Any, ...]) -> str | None:
    """What rich would write for `print(*objects)` on no terminal, when that is plain text; else None."""
    pieces = []
    for o in objects:
        if isinstance(o, str):
            if "\t" in o:
                return None
            pieces.append(visible(o))
        elif isinstance(o, Styled):
            text = "".join(p if isinstance(p, str) else p[0] for p in o.parts)
            if not text.isprintable():
                return None
            pieces.append(text)
        else:
            return None
    line = " ".join(pieces)
    if any(len(row) > PIPED_WIDTH and row[-1:].isspace() for row in line.split("\n")):
        return None
    return line + "\n"


class Lazy:
    """`out` or `err`: the rich console made at its first use; `out` writes plain lines itself (above)."""

    def __init__(self, **options: Any):
        self._options = options
        self._made: Any = None

    def console(self) -> Any:
        if self._made is None:
            self._made = shown_console(**self._options)
        return self._made

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console(), name)

    @property
    def _plain_out(self) -> bool:
        return not self._options.get("stderr") and piped()

    @property
    def is_terminal(self) -> bool:
        return False if self._plain_out else bool(self.console().is_terminal)

    @property
    def file(self) -> Any:
        return sys.stdout if self._plain_out else self.console().file

    def print(self, *objects: Any, **kwargs: Any) -> None:
        if not kwargs and self._plain_out:
            line = plain(objects)
            if line is not None:
                sys.stdout.write(line)
                sys.stdout.flush()
                return
        self.console().print(*(o.text() if isinstance(o, Styled) else o for o in objects), **kwargs)


# markup off: sources, ids and memory text are the writer's own and may hold [brackets]; styles are given as Text
# emoji off: `:smile:` in a memory is its text, not 😄
out = Lazy(highlight=False, soft_wrap=True, markup=False, emoji=False)
err = Lazy(stderr=True, highlight=False, markup=False, emoji=False)
