"""The documentation holds for someone who has only the repository: the README's quick start from a
clone, every command it lists exists, docs/ points nowhere outside the repository, every section a
docstring or page names by title is there, and docs/decisions.md keeps its index and every
dependency's reason."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
SETUP = (
    "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/membank demo",
    "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' && .venv/bin/python -m pytest -q",
)


def pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def section(text: str, heading: str) -> str:
    """The body of a `## heading` section, up to the next `## `."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start: end if end >= 0 else len(text)]


def test_quick_start_begins_with_a_clone_then_the_two_commands_word_for_word():
    text = README.read_text("utf-8")
    block = text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert block[0].startswith("git clone ") and "&& cd " in block[0]
    assert block[1:3] == list(SETUP)  # .ci/run runs the second one as it is


def test_every_command_the_readme_lists_exists():
    typer = pytest.importorskip("typer")
    from membank.shells import cli

    commands = set(typer.main.get_command(cli.app).commands)
    text = README.read_text("utf-8")
    using = section(text, "Using it")
    listed = re.findall(r"^membank ([a-z][a-z-]*)", using, flags=re.MULTILINE)
    assert "context" in listed and "skills" in listed
    assert set(listed) <= commands, sorted(set(listed) - commands)


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.name)
def test_no_page_points_outside_the_repository(page: Path):
    text = page.read_text("utf-8")
    for outside in ("../shared", "shared/spec", "seed 003", "MS1-R", "in the spec", "of the spec"):
        assert outside not in text, f"{page.name} points at {outside!r}, which a user of the repository lacks"
    for spec_file in ("api.md", "quality.md", "ecosystem.md", "files.md", "manuscript.md", "capture.md"):
        assert not re.search(rf"(?<![\w/-]){re.escape(spec_file)}", text), f"{page.name} names the spec's {spec_file}"


def test_every_docs_path_named_in_the_pages_exists():
    missing = []
    for page in pages():
        for name in re.findall(r"`(docs/[\w./-]+)`", page.read_text("utf-8")):
            if not (ROOT / name.rstrip("/")).exists():
                missing.append(f"{page.name}: {name}")
    assert not missing, missing


def test_every_code_path_the_readme_names_exists():
    text = README.read_text("utf-8")
    named = re.findall(r"`((?:membank|scripts|benchmarks|\.writenow-template)/[\w./-]*)`", text)
    assert len(named) >= 20
    missing = [name for name in named if not (ROOT / name.rstrip("/")).exists()]
    assert not missing, missing


def named_sections() -> list[tuple[str, str, str]]:
    """(where, doc, title) for every `docs/X.md, "Title"` or `docs/X.md` ("Title") in code, tests and docs."""
    pattern = re.compile(r'docs/([\w-]+\.md)`?\)?,?\s+\(?"([^"]+)"', re.MULTILINE)
    found = []
    sources = [*ROOT.joinpath("membank").rglob("*.py"), *ROOT.joinpath("tests").glob("*.py"), *pages()]
    for path in sources:
        if path.name == "test_docs.py":
            continue
        text = path.read_text("utf-8")
        for doc, title in pattern.findall(text):
            found.append((str(path.relative_to(ROOT)), doc, " ".join(title.split())))
    return found


def test_every_section_named_by_title_is_there():
    refs = named_sections()
    assert len(refs) >= 5  # the pattern still finds them
    missing = []
    for where, doc, title in refs:
        text = " ".join((DOCS / doc).read_text("utf-8").split()).lower()
        if title.lower() not in text:
            missing.append(f"{where}: docs/{doc}, {title!r}")
    assert not missing, missing


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation out, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def test_decisions_index_lists_every_topic_and_only_those():
    text = (DOCS / "decisions.md").read_text("utf-8")
    topics = [h for h in re.findall(r"^## (.+)$", text, flags=re.MULTILINE) if h != "Index"]
    listed = re.findall(r"^\| \[([^\]]+)\]\(#([^)]+)\)", section(text, "Index"), flags=re.MULTILINE)
    assert [name for name, _ in listed] == topics
    assert all(anchor == slug(name) for name, anchor in listed), listed


def test_decisions_say_why_each_dependency_is_there():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += extra
    names = {re.split(r"[\[<>=!~ ;]", spec, maxsplit=1)[0].lower() for spec in wanted}
    table = section((DOCS / "decisions.md").read_text("utf-8"), "Dependencies").lower()
    missing = sorted(name for name in names if name not in table)
    assert not missing, f"docs/decisions.md, Dependencies, has no reason for {missing}"
