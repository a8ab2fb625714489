"""The preview's search reaches the manuscript (issue 35): with a query and a document it lists the passages
before that document the query finds, cited source:line, never one of the document itself or of a later
chapter; without a document (or with one outside the story order) none, as no memory tied to the story is
taken there."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from membank import Bank
from membank.domains.recall.passages import before_of

QUERY = "a man lying face down in the surf with a sword strapped to his back"


def test_the_passages_before_the_document_are_listed_with_their_source_and_line(bank: Bank) -> None:
    found = bank.preview(query_text=QUERY, document_id="chapters/ch05.md")["passages"]
    assert found and found[0]["source"] == "chapters/ch01.md" and found[0]["line"] >= 1
    assert all(p["source"] == "chapters/ch01.md" for p in found)  # never ch05 itself
    assert "sword strapped to his back" in found[0]["text"]


def test_no_passage_at_the_first_chapter_without_a_document_or_outside_the_story(bank: Bank) -> None:
    assert bank.preview(query_text=QUERY, document_id="chapters/ch01.md")["passages"] == []  # nothing before it
    assert bank.preview(query_text=QUERY)["passages"] == []
    assert bank.preview(query_text=QUERY, document_id="chapters/ch99.md")["passages"] == []  # not in the story
    assert bank.preview(document_id="chapters/ch05.md")["passages"] == []  # no query, no search


def test_a_position_is_only_a_known_document() -> None:
    assert before_of("chapters/ch05.md", True) == "chapters/ch05.md"
    assert before_of("chapters/ch05.md", False) is None and before_of(None, True) is None


def test_the_cli_prints_the_passages_with_source_and_line(bank: Bank, sample: Path) -> None:
    from membank.shells.cli import app

    shown = CliRunner().invoke(app, ["preview", str(sample), "--query", QUERY, "--document", "chapters/ch05.md"])
    assert shown.exit_code == 0, shown.output
    assert "manuscript passages found" in shown.output and "chapters/ch01.md:" in shown.output
