"""The manuscript commands' lines show the writer's text, never run it, and cut it to its column in cells."""

from __future__ import annotations

import pytest

from membank.shells import manuscriptcli

ESCAPES = "\x1b[2J cleared \x1b]0;retitled\x07 \x9b31m"


def _printed(capsys: pytest.CaptureFixture[str]) -> str:
    shown = capsys.readouterr().out
    assert not any(c in shown for c in "\x1b\x07\x9b"), repr(shown)
    return shown


def test_passages_and_summaries_print_escapes_as_control_pictures(capsys: pytest.CaptureFixture[str]) -> None:
    manuscriptcli.passages_view({"items": [{"source": "chapters/\x1b[2J.md", "line": 3, "scene": "雨夜",
                                            "text": ESCAPES}]})
    assert "\u241b[2J cleared" in _printed(capsys)
    manuscriptcli.summaries_view({"items": [{"of": "chapters/ch01.md", "level": "chapter", "stale": False,
                                             "text": ESCAPES}]})
    assert "\u241b]0;retitled\u2407" in _printed(capsys)
    manuscriptcli.heat_view({"name": "Su\x1b[2J", "total": 1, "first": "chapters/ch01.md:1", "last": "x",
                             "items": [{"source": "chapters/\x1b[2J.md", "count": 1, "firstLine": 1, "lastLine": 1}]})
    assert "chapters/\u241b[2J.md" in _printed(capsys)


def test_a_chinese_excerpt_is_cut_to_its_cells(capsys: pytest.CaptureFixture[str]) -> None:
    manuscriptcli.passages_view({"items": [{"source": "c.md", "line": 1, "scene": "s", "text": "雨" * 200}]})
    excerpt = _printed(capsys).rstrip("\n").split("  ")[-1]
    assert excerpt == "雨" * (manuscriptcli.EXCERPT // 2 - 1) + "…"  # 2 cells a character, the … one
