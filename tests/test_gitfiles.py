"""gitfiles.check asked again and again (`index:status` on every sidecar call): what a git file lacks is
kept until the file's stat moves, so an edit between two checks is seen by the second."""

from __future__ import annotations

from pathlib import Path

from membank.files import gitfiles


def _lacking(bank: Path) -> dict[str, int]:
    return {d.source: d.message.count("`") for d in gitfiles.check(bank, lambda rel: rel)}


def test_an_edit_between_two_checks_is_seen(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    bank = tmp_path / ".writenow"
    bank.mkdir()
    assert set(_lacking(bank)) == {".gitattributes", ".gitignore"}
    (bank / ".gitignore").write_text(".index/\n", "utf-8")
    assert set(_lacking(bank)) == {".gitattributes", ".gitignore"}  # still lacks the traces' line
    (bank / ".gitignore").write_text(".index/\njournal/traces/\n", "utf-8")
    assert set(_lacking(bank)) == {".gitattributes"}
    (bank / ".gitattributes").write_text("journal/**/*.jsonl merge=union\n", "utf-8")
    assert _lacking(bank) == {}
    (bank / ".gitignore").unlink()
    assert set(_lacking(bank)) == {".gitignore"}

