"""What `doctor` says about the narrative state (story.md): a facet value that breaks its schema
(settings.yaml `story.facets`), a schema that is itself wrong, and thread and scene files that could not
be read. Light to import: the card catalog, threads and scenes are loaded only when there are some."""

from __future__ import annotations

import copy
import os
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
        with bank.index.lock:  # every card checked again only when the index or the schemas moved
            memo = bank.index.view_memo("story.facet_problems")
            kept = memo.get("checked") if memo is not None else None
            if kept is None or kept[0] != schemas:
                kept = (copy.deepcopy(schemas), facets.card_problems(list(catalog(bank.index).cards.values()), schemas))
                if memo is not None:
                    memo["checked"] = kept
        out += kept[1]
    root = os.fspath(bank.project.path)
    if os.path.isdir(os.path.join(root, "threads")):
        from .threadfiles import load
        out += [_diagnostic(p) for p in load(bank)[1]]
    if os.path.isdir(os.path.join(root, "scenes")):
        from .scenefiles import load as load_scenes
        out += [_diagnostic(p) for p in load_scenes(bank)[1]]
    return out


def _diagnostic(problem: dict[str, Any]) -> Diagnostic:
    """A file that could not be read is a warning; one a merge left markers in is an error (files.md, Git)."""
    if problem["message"] == LEFT_OUT:
        return Diagnostic(problem["source"], problem["line"], ERROR, LEFT_OUT, MERGE_CONFLICT)
    return Diagnostic(problem["source"], problem["line"], WARNING, problem["message"])
