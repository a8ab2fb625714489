"""The capture commands (docs/capture.md): `membank capture D` prints the prompt to pipe into any model,
`membank propose D FILE` checks the model's answer and keeps the valid ops, `membank capture --status`
lists every document's capture state in story order."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from ..runtime.dispatch import dispatch
from .clikit import JsonOpt, ProjectOpt, call, command, err, finish, open_registry


def _prompt(data: dict[str, Any], part: int | None) -> None:
    if not data["parts"]:
        sys.stdout.write(data["prompt"])
        return
    parts = data["parts"]
    if part is not None:
        if not 1 <= part <= len(parts):
            err.print(f"error: the chapter has {len(parts)} parts; --part is 1 to {len(parts)}")
            raise typer.Exit(1)
        sys.stdout.write(parts[part - 1]["prompt"])
        return
    err.print(f"{data['documentId']} is prepared in {len(parts)} parts (--part N prints one)")
    sys.stdout.write("\n\x0c\n".join(p["prompt"] for p in parts))


def _status(data: dict[str, Any]) -> None:
    for item in data["items"]:
        counts = ", ".join(f"{k} {item[k]}" for k in ("pending", "stale", "accepted", "applied", "rejected") if item[k])
        print(f"{item['documentId']}\t{item['state']}" + (f"\t({counts})" if counts else ""))
        for p in item["problems"]:
            print(f"  line {p['line']}: {p['message']}")


def _proposed(data: dict[str, Any]) -> None:
    for r in data["ops"]:
        where = f" line {r['line']}" if r["line"] is not None else ""
        reason = f" {r['reason']}" if r["reason"] else ""
        print(f"#{r['index']} {r['id']} {r['op']}: {r['status']}{reason}{where}" +
              (f" — {r['message']}" if r["message"] else ""))
    c = data["counts"]
    print(f"{c['pending']} kept, {c['duplicate']} already proposed, {c['refused']} refused"
          f" → {data['proposal']}" + ("" if data["written"] else " (unchanged)"))


@command("capture:prepare")
def capture(document: Optional[str] = typer.Argument(None, metavar="DOCUMENT",
                                                     help="A chapter, e.g. chapters/ch05.md."),
            status: bool = typer.Option(False, "--status", help="Every document's capture state, in story order."),
            part: Optional[int] = typer.Option(None, "--part", help="Print only this part (1, 2, …)."),
            project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    if status:
        call(project, "capture:status", {}, as_json, _status)
    if document is None:
        err.print("error: give a DOCUMENT, or --status")
        raise typer.Exit(2)
    call(project, "capture:prepare", {"documentId": document}, as_json, lambda d: _prompt(d, part))


@command("capture:propose")
def propose(document: str = typer.Argument(..., metavar="DOCUMENT", help="The chapter the ops are about."),
            file: str = typer.Argument(..., metavar="FILE", help="The model's answer, {\"ops\": [...]} (- : stdin)."),
            chapter_hash: Optional[str] = typer.Option(None, "--hash", help="The chapterHash it was prepared "
                                                       "with (default: the answer's, else the chapter as it is now)."),
            by: Optional[str] = typer.Option(None, "--by", help="Who proposed (a model's name)."),
            project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    try:
        raw = sys.stdin.read() if file == "-" else Path(file).read_text("utf-8")
        answer = json.loads(raw)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        err.print(f"error [INVALID_ARGUMENT]: {file} is not a JSON answer ({e})")
        raise typer.Exit(1) from None
    ops = answer.get("ops") if isinstance(answer, dict) else answer
    registry = open_registry(project, as_json)
    try:
        given = chapter_hash or (answer.get("chapterHash") if isinstance(answer, dict) else None)
        if given is None:
            prepared = dispatch(registry, "capture:prepare", {"documentId": document})
            if not prepared["ok"]:
                finish(prepared, as_json)
            given = prepared["data"]["chapterHash"]
        payload = {"documentId": document, "chapterHash": given, "ops": ops, **({"by": by} if by else {})}
        envelope = dispatch(registry, "capture:propose", payload)
    finally:
        registry.close()
    finish(envelope, as_json, _proposed)


def _pending(data: dict[str, Any]) -> None:
    for item in data["items"]:
        print(f"## {item['id']} · {item['op']} [{item['status']}]" + (f"  {', '.join(item['flags'])}"
                                                                    if item["flags"] else ""))
        print("   " + json.dumps({k: v for k, v in item["fields"].items() if k not in ("op", "evidence")},
                                ensure_ascii=False))
        print(f"   > {item['evidence']}" + (f"  ({item['where']})" if item["where"] else ""))
        for note in item["notes"]:
            print(f"   - {note}")
    if not data["items"]:
        print("nothing to review")
    _interrupted(data.get("interrupted"), "a review was interrupted (the process stopped midway); the next "
                 "`membank review` finishes it")


def _interrupted(left: dict[str, list[str]] | None, what: str) -> None:
    if left is not None:
        print(f"{what}: applied {', '.join(left['applied']) or 'nothing'}"
              + (f"; not applied: {', '.join(left['notApplied'])}" if left["notApplied"] else ""))


def _reviewed(data: dict[str, Any]) -> None:
    for op in data["ops"]:
        print(f"{op['id']}\t{op['op']}\t{op['status']}")
    c = data["counts"]
    _interrupted(data.get("resumed"), "an interrupted review was finished first")
    print(f"{c['applied']} applied, {c['rejected']} rejected; {len(data['written'])} files written")


@command("capture:review")
def review(document: str = typer.Argument(..., metavar="DOCUMENT", help="The chapter whose proposals to review."),
           accept: list[str] = typer.Option([], "--accept", help="Accept (and apply) this op id; repeatable."),
           reject: list[str] = typer.Option([], "--reject", help="Reject this op id; repeatable."),
           apply: bool = typer.Option(False, "--apply", help="Apply the decisions made in the proposal file "
                                      "(a status edited to accepted or rejected)."),
           project: Optional[Path] = ProjectOpt, as_json: bool = JsonOpt) -> None:
    if not accept and not reject and not apply:
        call(project, "capture:pending", {"documentId": document}, as_json, _pending)
        return
    if apply and (accept or reject):
        err.print("error [INVALID_ARGUMENT]: --apply applies the file's decisions; give it alone")
        raise typer.Exit(1)
    decisions = [{"id": i, "decision": "accept"} for i in accept] + [{"id": i, "decision": "reject"} for i in reject]
    payload: dict[str, Any] = {"documentId": document}
    if not apply:
        payload["decisions"] = decisions
    call(project, "capture:review", payload, as_json, _reviewed)
