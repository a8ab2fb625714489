"""`membank demo`: a sample project copied to a temporary folder and walked through the main job."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from .render import memory_table, preview_view

if TYPE_CHECKING:
    from rich.console import Console


def sample_project_dir() -> Path:
    """The sample novel project: packaged with membank, or the repository's fixtures/."""
    here = Path(__file__).resolve().parents[1]  # the package
    for candidate in (here / "sample-project", here.parent / "fixtures" / "sample-project"):
        if (candidate / ".writenow" / "project.yaml").is_file():
            return candidate
    raise FileNotFoundError("the sample project is missing from this installation")


def run_demo(folder: Path, out: Console) -> None:
    project = folder / "the-lighthouse-keeper"
    shutil.copytree(sample_project_dir(), project)
    os.environ["WRITENOW_HOME"] = str(folder / "global-bank")  # the writer's own global bank stays out of it
    # one process, gone in a second: the strong tier's background fill never runs here, so its model would be
    # loaded only to say (STRONG_VECTORS_PENDING) that the static vectors rank, which they do anyway
    os.environ.setdefault("MEMBANK_STRONG_ENCODER", "off")
    registry = Registry()

    def call(channel: str, payload: dict) -> dict:
        envelope = dispatch(registry, channel, payload)
        if not envelope["ok"]:
            raise RuntimeError(f"{channel} failed: {envelope['error']['message']}")
        return envelope["data"]

    out.rule("1. A writer's project: Markdown files under .writenow/")
    for path in sorted((project / ".writenow").rglob("*.md")):
        if ".index" not in path.parts:
            out.print("  " + path.relative_to(project).as_posix())

    out.rule("2. membank indexes them")
    opened = call("project:open", {"path": str(project)})
    sync = call("index:sync", {"rebuild": True})
    out.print(f"project {opened['name']} ({opened['projectId']}): added {sync['added']} files in {sync['tookMs']:.0f} ms, "
              f"{sync['errors']} with errors")

    out.rule("3. The memories, in deterministic order")
    memory_table(call("memory:list", {})["items"])

    out.rule("4. The app adds a memory (written as a file, indexed at once)")
    created = call("memory:create", {"type": "preference", "scope": "project",
                                     "content": "Keep chapter openings under two hundred words.", "tags": ["pacing"]})
    out.print(f"created {created['id']} at {created['source']}")
    out.print((project / created["source"]).read_text("utf-8"), markup=False)

    out.rule("5. What goes into the prompt for chapter five")
    preview_view(call("memory:injection:preview", {"documentId": "chapters/ch05.md"}))

    out.rule("6. A query the app sends while the writer works")
    question = "is the hero injured?"
    out.print(f"  the app asks: \"{question}\" (ranked by meaning too: \"wounded\" answers \"injured\")",
              markup=False)
    preview_view(call("memory:injection:preview", {"queryText": question}))

    out.rule("7. The prompt for `continue` in chapter five: six layers, a prefix that does not move")
    first = call("context:assemble", {"skillId": "continue", "documentId": "chapters/ch05.md",
                                      "selection": {"text": "He drew. Steel rang."}, "instruction": "Continue the fight."})
    for block in first["blocks"]:
        part = "systemPrompt" if block["layer"] <= 3 else "userContent"
        out.print(f"  layer {block['layer']} {block['name']:<12} {block['tokens']:>5} tokens  ({part})")
    cards = [i["source"] for i in first["items"] if i["layer"] == 4 and i["kind"] in ("card", "state")]
    out.print("  mentioned cards with their state at chapter five: " + ", ".join(cards), markup=False)
    second = call("context:assemble", {"skillId": "continue", "documentId": "chapters/ch01.md",
                                       "selection": {"text": "Maren"}, "instruction": "Describe the lamp room."})
    same = "the same" if second["stablePrefixHash"] == first["stablePrefixHash"] else "DIFFERENT"
    out.print(f"  another chapter, another selection: the prefix hash is {same} ({first['stablePrefixHash'][:23]}…); "
              f"{second['diagnostics']['hidden']} later-story items hidden in chapter one", markup=False)
    out.print("  see it whole: membank context continue --document chapters/ch05.md --selection \"He drew.\"",
              markup=False)

    out.rule("8. The story graph: what is true at a chapter, and a consistency check")
    for at in ("chapters/ch03.md", "chapters/ch05.md"):
        state = call("kg:state", {"name": "Lin Mo", "at": at})
        facets = ", ".join(f"{k}: {str(v['value']).lower() if isinstance(v['value'], bool) else v['value']}"
                           for k, v in state["facets"].items())
        out.print(f"  林默 at {at}: {state['state']}  [{facets}]  ({state['source']}:{state['line']})", markup=False)
    checked = call("kg:consistency:check", {"documentId": "chapters/ch05.md",
                                            "text": "Su Yao watched from the cliff as Maren lit the lamp."})
    for flag in checked["flags"]:
        where = ", ".join(f"{e['source']}:{e['line']}" for e in flag["evidence"])
        out.print(f"  {flag['code']}: {flag['message']} ({where})", markup=False)
    out.print("  see a timeline: membank story \"Lin Mo\"; check a chapter: membank check chapters/ch05.md",
              markup=False)
    registry.close()
