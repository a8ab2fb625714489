"""The CLI's fast path (shells/clireads.py): which argument lists it takes without typer. Whatever it
does not take, typer parses, so click's messages and exit codes stay as they were; tests/test_cli.py
and tests/test_startup.py run the commands themselves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer
from hypothesis import given, settings, strategies as st

from membank.shells.clireads import FORMS, parse


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


@pytest.mark.parametrize("args", [
    ["status", "~\\book"], ["list", "%USERPROFILE%\\book"], ["skills", "-C", "$HOME\\book"],
    ["show", "facts/*", "-C", "C:\\book"], ["show", "m-1", "-C", "C:\\book[1]"], ["settings", "get", "-C", "D:\\b?"],
])
def test_on_windows_a_word_typer_would_expand_is_left_to_typer(args: list[str]) -> None:
    # typer's main expands `~`, variables and globs in every word on Windows (click's _expand_args)
    assert parse(args, windows=True) is None
    assert parse(args, windows=False) is not None  # elsewhere the shell expanded it: the word is the path


def test_on_windows_a_plain_drive_path_is_still_taken() -> None:
    assert parse(["status", "C:\\Users\\lin\\book", "--json"], windows=True) == (
        ("status",), ["C:\\Users\\lin\\book"], {}, {"--json"})


# -- property: whatever `parse` takes, click reads the same way -------------------------------------

WORDS = ["--json", "--all", "-C", "--project", "--type", "--scope", "--origin", "P", "Q", "m-1", "--", "-", "",
         "-CP", "--project=P", "--type=x", "-x", "林默", "a b", "--help", "-h", "status", "--json=1", "-C=P", " "]


def _click_params(words: tuple[str, ...], rest: list[str]) -> dict:
    from membank.shells.cli import app

    command: click.Command = typer.main.get_command(app)
    for word in words:
        command = command.commands[word]  # type: ignore[attr-defined]
    with command.make_context("membank", list(rest)) as ctx:
        return dict(ctx.params)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FORMS)), st.lists(st.sampled_from(WORDS), max_size=6))
def test_what_parse_takes_click_reads_alike(words: tuple[str, ...], rest: list[str]) -> None:
    parsed = parse([*words, *rest])
    if parsed is None:
        return  # typer parses it
    _, positional, options, flags = parsed
    params = _click_params(words, rest)  # raises click's UsageError if the fast path took what click refuses
    assert params.get("as_json") == ("--json" in flags)
    if words == ("show",):
        assert params["memory_id"] == positional[0]
    folder = params.get("project", params.get("path"))
    expected = options.get("project", positional[0] if positional and words != ("show",) else None)
    assert (None if folder is None else Path(folder)) == (None if expected is None else Path(expected))
    if words == ("list",):
        assert (params["type_"], params["scope"], params["origin"], params["include_deleted"]) == (
            options.get("type"), options.get("scope"), options.get("origin"), "--all" in flags)


@pytest.mark.parametrize("args", [["status"], ["list", "--json"], ["show", "m-1"], ["settings", "get"], ["skills"]])
def test_a_current_folder_removed_under_the_shell_is_not_found_by_both_paths(
        args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from typer.testing import CliRunner

    from membank.shells.cli import app
    from membank.shells.clireads import fast

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(SystemExit) as ended:
        fast(args)
    fast_out = capsys.readouterr()
    assert ended.value.code == 1 and "NOT_FOUND" in fast_out.out + fast_out.err  # not a traceback
    typed = CliRunner().invoke(app, args)
    assert typed.exit_code == 1 and isinstance(typed.exception, SystemExit)


@pytest.mark.parametrize("raised, code", [(KeyboardInterrupt(), 130), (BrokenPipeError(32, "Broken pipe"), 1)])
def test_ctrl_c_and_a_closed_pipe_end_both_paths_alike(raised: BaseException, code: int, sample: Path, home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from membank.shells import clicall
    from membank.shells.cli import app
    from membank.shells.clireads import fast

    def interrupted(*_: object) -> None:
        raise raised

    monkeypatch.setattr(clicall, "dispatch", interrupted)  # the channel call: where a command spends its time
    monkeypatch.setattr(sys, "stdout", sys.stdout)  # a closed pipe wraps both streams: put back after the test
    monkeypatch.setattr(sys, "stderr", sys.stderr)
    with pytest.raises(SystemExit) as ended:
        fast(["skills", "-C", str(sample)])
    assert ended.value.code == code
    assert CliRunner().invoke(app, ["skills", "-C", str(sample)]).exit_code == code


def test_the_mcp_server_in_a_removed_current_folder_ends_with_2_not_a_traceback(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    probe = ("import os, sys\n"
             "os.chdir(sys.argv[1]); os.rmdir(sys.argv[1])\n"
             "from membank.shells.mcpserver import run\n"
             "sys.exit(run(None, watch=False))")
    done = subprocess.run([sys.executable, "-c", probe, str(gone)], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "cannot open the project" in done.stderr


@pytest.mark.parametrize("as_json", [False, True])
def test_a_bug_outside_the_channel_ends_with_the_internal_error_line_not_a_bare_traceback(
        as_json: bool, sample: Path, home: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from membank.shells import clicall, clireads
    from membank.shells.clireads import fast

    def broken(*_: object) -> None:
        raise RuntimeError("a bug in the view")

    monkeypatch.setattr(clireads, "settings_view", broken)  # the human view: after the channel answered
    if as_json:
        monkeypatch.setattr(clicall, "dispatch", broken)  # JSON has no view: the call itself
    with pytest.raises(SystemExit) as ended:
        fast(["settings", "get", "-C", str(sample)] + (["--json"] if as_json else []))
    printed = capsys.readouterr()
    assert ended.value.code == 1
    message = "internal error in memory:settings:get; this is a bug in membank, see its log"
    if as_json:
        assert json.loads(printed.out) == {"ok": False, "error": {"code": "INTERNAL", "message": message}}
    else:
        assert printed.err.rstrip().endswith(f"error [INTERNAL]: {message}")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_answer_that_cannot_be_written_ends_with_1_and_one_traceback(tmp_path: Path) -> None:
    """stdout full (ENOSPC, not a closed pipe): the error is logged once and the process ends with 1; the
    envelope is not written again to the stdout that just failed, raising inside the handler."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "membank.shells.cli", "status", "--json"], cwd=tmp_path,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("Traceback") == 1 and "During handling" not in done.stderr, done.stderr
