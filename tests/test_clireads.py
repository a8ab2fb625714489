"""The CLI's fast path (shells/clireads.py): which argument lists it takes without typer. Whatever it
does not take, typer parses, so click's messages and exit codes stay as they were; tests/test_cli.py
and tests/test_startup.py run the commands themselves."""

from __future__ import annotations

import pytest

from membank.shells.clireads import parse


@pytest.mark.parametrize("args, parsed", [
    (["status", "P"], (("status",), ["P"], {}, set())),
    (["status"], (("status",), [], {}, set())),
    (["doctor", "P", "--json"], (("doctor",), ["P"], {}, {"--json"})),
    (["show", "facts/x", "-C", "P"], (("show",), ["facts/x"], {"project": "P"}, set())),
    (["show", "--project", "P", "m-1", "--json"], (("show",), ["m-1"], {"project": "P"}, {"--json"})),
    (["list", "P", "--type", "preference"], (("list",), ["P"], {"type": "preference"}, set())),
    (["list", "--all", "--scope", "global", "--origin", "learned"],
     (("list",), [], {"scope": "global", "origin": "learned"}, {"--all"})),
    (["settings", "get", "-C", "P"], (("settings", "get"), [], {"project": "P"}, set())),
    (["skills", "-C", "林默的书"], (("skills",), [], {"project": "林默的书"}, set())),
])
def test_the_bench_commands_are_taken(args: list[str], parsed: tuple) -> None:
    assert parse(args) == parsed


@pytest.mark.parametrize("args", [
    [], ["--help"], ["status", "--help"], ["serve"], ["settings"], ["settings", "set", "a=b"], ["index", "P"],
    ["status", "P", "Q"],  # one folder at most
    ["show"], ["show", "a", "b"],  # one ID
    ["show", "m", "-CP"], ["show", "m", "--project=P"], ["list", "--type=fact"],  # joined spellings: click's
    ["show", "m", "-C"], ["list", "--type"],  # a value missing
    ["show", "m", "-C", "P", "-C", "Q"], ["status", "--json", "--json"],  # given twice
    ["list", "--type", "-x"], ["show", "-m", "-C", "P"],  # a word starting with a dash
    ["status", "-C", "P"], ["list", "-C", "P"], ["settings", "get", "P"],  # options a command has not
    ["status", ""], ["show", "m", "-C", ""], ["status", "a\x1bb"],  # empty, or a control character
    ["status", "--"], ["status", "-"],
])
def test_anything_else_is_left_to_typer(args: list[str]) -> None:
    assert parse(args) is None
