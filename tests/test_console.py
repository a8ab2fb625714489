"""The CLI's plain output path (shells/console.py): a line `out` writes itself, without importing rich,
is byte for byte the line rich would write to a pipe; whatever rich would lay out goes to rich."""

from __future__ import annotations

import io

import pytest

from membank.shells import console
from membank.shells.console import Styled, plain, styled

CASES = [
    ("plain text",),
    ("name", "and more", "words"),
    ("中文的名字 · 記憶",),
    ("two\nlines",),
    ("escape \x1b[31mred\x07 bell\rcr",),  # shown as control pictures, never run
    ("[bold]not markup[/bold] :smile:",),
    ("x" * 130 + "y",),
    ("x" * 100 + "   ",),  # trailing spaces inside the width are kept
    (styled(("bold name", "bold"), " (p-123)"),),
    (styled("project ", ("名字", "bold"), ": 3 files created"),),
    (),
]


def _rich(objects: tuple[object, ...]) -> str:
    buffer = io.StringIO()
    made = console.shown_console(file=buffer, highlight=False, soft_wrap=True, markup=False, emoji=False)
    made.print(*(o.text() if isinstance(o, Styled) else o for o in objects))
    return buffer.getvalue()


@pytest.fixture(autouse=True)
def _no_terminal_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("objects", CASES)
def test_a_plain_line_is_the_line_rich_writes_to_a_pipe(objects: tuple[object, ...]) -> None:
    assert plain(objects) == _rich(objects)


@pytest.mark.parametrize("objects", [
    ("a\ttab",),  # rich expands it
    ("x" * 130 + "   ",),  # rich trims trailing spaces past the width
    (styled(("a\x07bell", "bold")),),  # rich strips some control characters from a Text
    (object(),),  # a renderable
])
def test_what_rich_lays_out_is_left_to_rich(objects: tuple[object, ...]) -> None:
    assert plain(objects) is None


def test_nothing_in_the_environment_makes_rich_style_or_size_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdout", io.StringIO())
    assert console.piped()
    for name, value in (("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1"), ("COLUMNS", "200")):
        monkeypatch.setenv(name, value)
        assert not console.piped(), name
        monkeypatch.delenv(name)


def test_out_writes_a_plain_line_to_a_pipe_without_rich(monkeypatch: pytest.MonkeyPatch) -> None:
    written = io.StringIO()
    monkeypatch.setattr("sys.stdout", written)
    lazy = console.Lazy(highlight=False, soft_wrap=True, markup=False, emoji=False)
    lazy.print(styled(("name", "bold"), " (p-1)"))
    lazy.print("  memories: 3")
    assert written.getvalue() == "name (p-1)\n  memories: 3\n"
    assert not lazy.is_terminal and lazy.file is written
