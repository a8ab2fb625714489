"""The card commands: `membank import FILE… [--update]` and `membank export SOURCE --format json|png|charx
[--spec v1|v2|v3] --output FILE` (docs/import-export.md). Files are named from the current folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional

import typer

from .cells import clip
from .clikit import JsonOpt, ProjectOpt, call, command
from .render import out

SHOWN = {"created": "imported", "unchanged": "already imported, unchanged",
         "pending": "imported before; would change (run again with --update to write it)", "updated": "updated"}


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return clip(text, 60)


def imported_view(d: dict[str, Any]) -> None:
    for item in d["items"]:
        out.print(f"{item['file']} ({item['format']}): {SHOWN[item['status']]} -> {item['target']}")
        for book in item.get("books", ()):
            scope = "only with its character" if book["scope"] == "character" else "in every prompt it matches"
            out.print(f"  book {book['target']}: {book['entries']} entries, {book['alwaysOn']} always on "
                      f"(~{book['alwaysOnTokens']:,} tokens), {scope}")
        for s in item.get("skipped", ()):
            out.print(f"  skipped  {s['name']}: {s['reason']}")
        if "skippedTotal" in item:
            out.print(f"  and {item['skippedTotal'] - len(item['skipped']):,} more skipped")
        for warning in item.get("warnings", ()):
            out.print(f"  warning: {warning}")
        for c in item["changes"]:
            if c["change"] == "same" or (c["change"] == "new" and item["status"] == "created"):
                continue
            out.print(f"  {c['change']:8} {c['source']}")
            for f in c.get("fields", ()):
                if f["change"] == "kept":
                    out.print(f"    kept {f['field']} (yours: {_short(f['mine'])}; the card's: {_short(f['theirs'])})")
                else:
                    out.print(f"    {f['change']} {f['field']}")
        if "changesTotal" in item:
            out.print(f"  {item['changesTotal']:,} files in all (--json lists {len(item['changes'])} of them)")


def exported_view(d: dict[str, Any]) -> None:
    out.print(f"{d['source']} -> {d['output']} ({d['format']}, {d['spec']}, {d['bytes']:,} bytes)")


@command("card:import")
def import_(files: list[Path] = typer.Argument(..., metavar="FILE...", help="Card or lorebook files."),
            update: bool = typer.Option(False, "--update", help="Merge a new version of a card imported before into its files (your edits stay)."),
            project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    call(project, "card:import", {"paths": [os.path.abspath(f) for f in files], "update": update}, as_json,
         imported_view)


@command("card:export")
def export(source: str = typer.Argument(..., metavar="SOURCE", help="characters/NAME.md or a book folder world/NAME."),
           format_: str = typer.Option(..., "--format", help="json, png or charx."),
           output: Path = typer.Option(..., "--output", "-o", help="The file to write."),
           spec: Optional[str] = typer.Option(None, "--spec", help="v1, v2 or v3 (default: as imported)."),
           force: bool = typer.Option(False, "--force", help="Replace the output file if it exists."),
           project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    payload: dict[str, Any] = {"source": source, "format": format_, "output": os.path.abspath(output), "force": force}
    if spec is not None:
        payload["spec"] = spec
    call(project, "card:export", payload, as_json, exported_view)
