"""What `doctor` says about the narrative state (story.md): a facet value that breaks its schema
(settings.yaml `story.facets`), a schema that is itself wrong, and thread and scene files that could not
be read. Light to import: the card catalog, threads and scenes are loaded only when there are some."""

from __future__ import annotations

import re
from typing import Any

from ...files.conflicts import LEFT_OUT, MERGE_CONFLICT
from ...files.records import ERROR, WARNING, Diagnostic
from ..contract import Bank
from . import facets


def _facets_line(bank: Bank) -> tuple[str, int]:
    path, source = bank.settings_files.files[1]
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return source, 1
    found = re.search(r"^\s*facets\s*:", text, re.MULTILINE)
    return source, text.count("\n", 0, found.start()) + 1 if found else 1


def problems(bank: Bank) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    schemas = bank.settings_files.story().get("facets") or {}
    if schemas:
        from .cards import catalog

        out += facets.settings_problems(schemas, *_facets_line(bank))
        with bank.index.lock:
            cards = list(catalog(bank.index).cards.values())
        out += facets.card_problems(cards, schemas)
    if bank.project.file("threads").is_dir():
        from .threadfiles import load
        out += [_diagnostic(p) for p in load(bank)[1]]
    if bank.project.file("scenes").is_dir():
        from .scenefiles import load as load_scenes
        out += [_diagnostic(p) for p in load_scenes(bank)[1]]
    return out


def _diagnostic(problem: dict[str, Any]) -> Diagnostic:
    """A file that could not be read is a warning; one a merge left markers in is an error (files.md, Git)."""
    if problem["message"] == LEFT_OUT:
        return Diagnostic(problem["source"], problem["line"], ERROR, LEFT_OUT, MERGE_CONFLICT)
    return Diagnostic(problem["source"], problem["line"], WARNING, problem["message"])
