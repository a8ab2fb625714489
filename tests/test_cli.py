"""The CLI as a writer runs it: real processes, piped output, exit codes 0/1/2, --json envelopes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .helpers import membank




def test_json_prints_exactly_the_envelope(sample: Path, home: Path) -> None:
    result = membank("list", "--json", cwd=sample / "chapters", home=home)  # found by walking up
    assert result.returncode == 0
    envelope = json.loads(result.stdout)
    assert envelope["ok"] is True and len(envelope["data"]["items"]) == 13


def test_failure_exits_1_with_the_error_envelope(sample: Path, home: Path) -> None:
    result = membank("show", "m-nope", "--json", cwd=sample, home=home)
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "NOT_FOUND"
    human = membank("show", "m-nope", cwd=sample, home=home)
    assert human.returncode == 1 and "NOT_FOUND" in human.stderr and human.stdout == ""


def test_bad_usage_exits_2(sample: Path, home: Path) -> None:
    assert membank("list", "--no-such-flag", cwd=sample, home=home).returncode == 2
    assert membank("settings", "set", "injectionEnabled", cwd=sample, home=home).returncode == 2


def test_outside_a_project_says_so(tmp_path: Path, home: Path) -> None:
    result = membank("list", cwd=tmp_path, home=home)
    assert result.returncode == 1 and "membank init" in result.stderr


def test_a_folder_that_is_not_there_is_not_the_project_around_it(sample: Path, home: Path) -> None:
    result = membank("preview", "continue", "-d", "chapters/ch05.md", cwd=sample, home=home)  # a skill's name, not a folder
    assert result.returncode == 1 and "NOT_FOUND" in result.stderr and "continue: no such" in result.stderr
    assert result.stdout == ""


def test_piped_output_has_no_colour_and_reads_well(sample: Path, home: Path) -> None:
    result = membank("list", cwd=sample, home=home)
    assert result.returncode == 0 and "\x1b[" not in result.stdout
    assert "m-fact-linmo-wounded" in result.stdout


def test_add_edit_rm_restore_round_trip(sample: Path, home: Path) -> None:
    added = json.loads(membank("add", "Maren hums when she is afraid.", "--type", "fact", "--tag", "maren", "--json",
                               cwd=sample, home=home).stdout)["data"]
    assert (sample / added["source"]).is_file()
    edited = membank("edit", added["id"], "--content", "-", "--expected-revision", "1", "--json",
                     cwd=sample, home=home, stdin="Maren sings when she is afraid.")
    assert json.loads(edited.stdout)["data"]["revision"] == 2
    stale = membank("edit", added["id"], "--pin", "--expected-revision", "1", cwd=sample, home=home)
    assert stale.returncode == 1 and "CONFLICT" in stale.stderr
    assert membank("rm", added["id"], cwd=sample, home=home).returncode == 0
    listed = json.loads(membank("list", "--json", cwd=sample, home=home).stdout)["data"]["items"]
    assert added["id"] not in [m["id"] for m in listed]
    assert membank("restore", added["id"], cwd=sample, home=home).returncode == 0
    shown = json.loads(membank("show", added["id"], "--json", cwd=sample, home=home).stdout)["data"]
    assert shown["content"] == "Maren sings when she is afraid." and shown["deletedAt"] is None


def test_settings_set_and_get(sample: Path, home: Path) -> None:
    result = membank("settings", "set", "memory.injectionMaxItems=2", "--json", cwd=sample, home=home)
    assert json.loads(result.stdout)["data"]["injectionMaxItems"] == 2
    preview = json.loads(membank("preview", "--json", cwd=sample, home=home).stdout)["data"]
    assert len(preview["items"]) == 2
    bad = membank("settings", "set", "memory.injectionMaxItems=lots", "--json", cwd=sample, home=home)
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["details"]["field"] == "patch.injectionMaxItems"
    glob = membank("settings", "set", "embedding.model=models/x", "--global", cwd=sample, home=home)
    assert glob.returncode == 0 and "model: models/x" in (home / "settings.yaml").read_text("utf-8")
    assert "embedding.model = \"models/x\"" in glob.stdout and "memory.embedding" not in glob.stdout


def test_preview_query_shows_scores(sample: Path, home: Path) -> None:
    result = membank("preview", "--query", "is the hero injured?", cwd=sample, home=home)
    assert result.returncode == 0
    assert "semantic" in result.stdout and "vector #1" in result.stdout


def test_index_summary_and_status(sample: Path, home: Path) -> None:
    first = json.loads(membank("index", "--json", cwd=sample, home=home).stdout)["data"]
    assert first["added"] == 26 and first["errors"] == 0
    again = json.loads(membank("index", "--json", cwd=sample, home=home).stdout)["data"]
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 26)
    rebuilt = json.loads(membank("index", "--rebuild", "--json", cwd=sample, home=home).stdout)["data"]
    assert rebuilt["added"] == 26
    status = membank("status", cwd=sample, home=home)
    assert "memories: 13" in status.stdout and "model: use-multilingual-256-int8 (256 dimensions, 45,905 tokens)" in status.stdout


@pytest.mark.parametrize("command", [["status"], ["doctor"], ["preview"], ["settings", "get"], ["index"]])
def test_every_reading_command_takes_json(sample: Path, home: Path, command: list[str]) -> None:
    result = membank(*command, "--json", cwd=sample, home=home)
    envelope = json.loads(result.stdout)
    assert set(envelope) in ({"ok", "data"}, {"ok", "error"})


def test_init_twice_changes_nothing(tmp_path: Path, home: Path) -> None:
    project = tmp_path / "novel"
    first = json.loads(membank("init", str(project), "--name", "My Novel", "--json", cwd=tmp_path, home=home).stdout)
    assert ".writenow/project.yaml" in first["data"]["created"]
    bank = project / ".writenow"
    for part in ("settings.yaml", "README.md", ".gitignore", "characters", "world", "skills", "journal", "history"):
        assert (bank / part).exists(), part
    assert {p.parent.name for p in (bank / "memories").rglob("*.md")} >= {"preference", "fact", "note"}
    assert ".index/" in (bank / ".gitignore").read_text("utf-8")
    (bank / "settings.yaml").write_text("memory:\n  injectionMaxItems: 4\n", "utf-8")  # the writer's edit
    snapshot = {p: p.read_bytes() for p in bank.rglob("*") if p.is_file() and ".index" not in p.parts}
    second = json.loads(membank("init", str(project), "--json", cwd=tmp_path, home=home).stdout)
    assert second["data"]["created"] == [] and second["data"]["projectId"] == first["data"]["projectId"]
    assert {p: p.read_bytes() for p in bank.rglob("*") if p.is_file() and ".index" not in p.parts} == snapshot
    listed = json.loads(membank("list", "--json", cwd=project, home=home).stdout)["data"]["items"]
    assert listed == []  # the three examples are switched off (soft-deleted)
    listed = json.loads(membank("list", "--all", "--json", cwd=project, home=home).stdout)["data"]["items"]
    assert len(listed) == 3


def test_demo_runs(home: Path, tmp_path: Path) -> None:
    result = membank("demo", cwd=tmp_path, home=home)
    assert result.returncode == 0, result.stderr
    assert "m-fact-linmo-wounded" in result.stdout and "created m-" in result.stdout
    assert "wounded: true" in result.stdout and "NOT_YET_INTRODUCED" in result.stdout  # step 8, the story


def test_feedback_learns_through_the_cli(sample: Path, home: Path) -> None:
    for run in ("a", "b"):  # the sample project's threshold is 2
        result = membank("feedback", "--action", "accept", "--evidence", "name the weather", "--run", run,
                         cwd=sample, home=home)
        assert result.returncode == 0, result.stderr
    assert "learned preference m-learned-prefer-" in result.stdout
    bad = membank("feedback", "--action", "love", "--evidence", "x", "--json", cwd=sample, home=home)
    assert bad.returncode == 1 and json.loads(bad.stdout)["error"]["details"]["field"] == "action"


def test_brackets_in_sources_and_text_print_as_written(sample: Path, home: Path) -> None:
    """A writer's file names and text are never read as terminal markup ([/x] would be a closing tag)."""
    folder = sample / ".writenow" / "memories" / "note" / "["
    folder.mkdir(parents=True)
    (folder / "x].md").write_text("---\ntype: [unclosed\n---\nA [/bold] note.\n", "utf-8")
    (sample / ".writenow" / "memories" / "note" / "[red]y.md").write_text("Text with [/i] in it.\n", "utf-8")
    doctor = membank("doctor", cwd=sample, home=home)
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert "memories/note/[/x].md:2" in doctor.stdout
    listed = membank("list", cwd=sample, home=home)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert "[/i]" in listed.stdout and "note/[red]y" in listed.stdout


def test_emoji_codes_in_text_print_as_written(sample: Path, home: Path) -> None:
    """`:smile:` in a memory is the writer's text, never turned into an emoji."""
    added = json.loads(membank("add", "Maren says :smile: and :red_heart: aloud.", "--type", "note", "--json",
                               cwd=sample, home=home).stdout)["data"]
    shown = membank("show", added["id"], cwd=sample, home=home)
    assert shown.returncode == 0 and ":smile: and :red_heart:" in shown.stdout
    assert "\U0001f604" not in shown.stdout and "\u2764" not in shown.stdout


def test_a_long_or_piped_list_is_plain_columns(sample: Path) -> None:
    from typer.testing import CliRunner

    from membank.shells.cli import app

    listed = CliRunner().invoke(app, ["list", str(sample)])  # a pipe, not a terminal
    lines = listed.output.splitlines()
    assert listed.exit_code == 0 and lines[0].split() == ["id", "type", "scope", "updated", "content", "source"]
    ids = [line.split()[0] for line in lines[1:]]
    assert ids and all(line.split()[-1].startswith((".writenow/", "global:")) for line in lines[1:])


def test_piped_skills_are_plain_columns_one_line_each(sample: Path, home: Path) -> None:
    listed = membank("skills", "-C", str(sample), cwd=sample, home=home)
    lines = listed.stdout.splitlines()
    assert listed.returncode == 0 and lines[:2] == ["skills", lines[1]] and lines[1].split() == ["id", "name", "rules",
                                                                                                 "in", "effect", "source"]
    rows = {line.split()[0]: line for line in lines[2:]}
    assert "continue" in rows and rows["continue"].endswith(".writenow/skills/continue.md")
    assert "max_tokens=" in rows["continue"] and "│" not in listed.stdout  # the rules on the skill's line, no box
