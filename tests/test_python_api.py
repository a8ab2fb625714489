"""The Python API as the README shows it: `~` paths, and MembankError with a stable code as the only
exception that leaves `membank.open` or a Bank method."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import membank
import membank.domains.recall.preview
from membank.files.project import template_dir


def test_open_expands_the_home_folder(sample: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("USERPROFILE", str(tmp_path))  # what expanduser reads on Windows
    novels = tmp_path / "novels"
    novels.mkdir()
    shutil.move(str(sample), novels / "lighthouse")
    bank = membank.open("~/novels/lighthouse/chapters")
    try:
        assert bank.info.name and bank.list_memories()["items"]
    finally:
        bank.close()


def test_no_project_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(membank.MembankError) as caught:
        membank.open(tmp_path)
    assert caught.value.code == "NOT_FOUND" and caught.value.details == {"field": "path"}


def test_an_unusable_project_file_is_invalid_argument(sample: Path) -> None:
    (sample / ".writenow/project.yaml").write_text("name: no id here\n", "utf-8")
    with pytest.raises(membank.MembankError) as caught:
        membank.open(sample)
    assert caught.value.code == "INVALID_ARGUMENT"


def test_an_index_that_cannot_be_opened_is_db_error(sample: Path) -> None:
    (sample / ".writenow/.index").write_text("a file where the index folder belongs", "utf-8")
    with pytest.raises(membank.MembankError) as caught:
        membank.open(sample)
    assert caught.value.code == "DB_ERROR" and str(sample) not in caught.value.message


def test_a_bug_inside_a_method_is_internal_with_its_cause(bank: membank.Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object) -> None:
        raise KeyError("a bug")

    monkeypatch.setattr(membank.domains.recall.preview, "deterministic_items", broken)
    with pytest.raises(membank.MembankError) as caught:
        bank.preview()
    assert caught.value.code == "INTERNAL" and isinstance(caught.value.__cause__, KeyError)
    envelope = bank.call("memory:injection:preview", {})
    assert envelope["ok"] is False and envelope["error"]["code"] == "INTERNAL"


def test_every_template_text_file_ends_with_a_newline() -> None:
    texts = [p for p in template_dir().rglob("*") if p.is_file() and p.stat().st_size]  # .gitkeep files are empty
    assert any(p.name == ".gitignore" for p in texts)
    for path in texts:
        data = path.read_bytes()
        assert data.endswith(b"\n") and not data.endswith(b"\n\n\n"), path.name
