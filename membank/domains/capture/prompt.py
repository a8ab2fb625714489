"""The prompt `capture:prepare` gives the model (capture.md, prepare): built by `context:assemble` with the
skill `capture`, as of the position just before the chapter (the end of the document before it; for the
first chapter no position: only what is timeless), the chapter as the passage; the skill's `{{…}}` places
filled with what prepare found (the mentioned entities as they stood before, the open threads, the facts
in force, the JSON Schema). A project without the skill uses the built-in text, filled directly."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from ...files.conflicts import conflict_line
from ...files.frontmatter import decode, split
from ...kernel.errors import MembankError
from ..contract import Bank
from ..context.channels import context_assemble
from ..skills.read import find as find_skill
from ..story.manuscript import read_document
from ..story.order import StoryOrder

SKILL = "capture"
DEFAULT_BUDGET = 12_000  # tokens, when the skill gives none (about one code point each in Chinese)
BUILT_IN = "membank:skills/capture.md"
POINTER = "（本章正文见下文 Selection 一节 · the chapter is the Selection below）"


def skill(bank: Bank) -> tuple[str, int, str]:
    """(the capture skill's text, its token budget, its source); the built-in one when the project has
    none (a project made before the skill was added)."""
    try:
        _, found = find_skill(bank, SKILL)
        rules = found.get("contextRules") or {}
        return found["content"], int(rules.get("max_tokens") or DEFAULT_BUDGET), found["source"]
    except MembankError:
        text = resources.files("membank").joinpath("template/skills/capture.md").read_text("utf-8")
        doc = split(decode(text.encode("utf-8")))
        rules = doc.meta.get("context_rules") or {}
        return doc.body, int(rules.get("max_tokens") or DEFAULT_BUDGET), BUILT_IN


def fill(template: str, values: dict[str, str], append: bool = True) -> str:
    """`{{name}}` replaced by its value; a value the skill does not place goes at the end (`append`)."""
    out = template.rstrip() + "\n"
    for name, value in values.items():
        mark = "{{" + name + "}}"
        if mark in out:
            out = out.replace(mark, value)
        elif append and name != "document":
            out += f"\n## {name}\n\n{value}\n"
    return out


def entity_text(e: dict[str, Any]) -> str:
    line = f"- {e['name']}（{e['kind']}，{e['source']}）"
    if e["aliases"]:
        line += " 别名：" + "、".join(e["aliases"])
    if e["state"]:
        line += f"\n  状态：{e['state']['value']}"
    for name, cited in e["facets"].items():
        line += f"\n  {name}: {json.dumps(cited['value'], ensure_ascii=False)}"
    for r in e.get("relations") or []:
        line += f"\n  关系：{r['type']} → {r['name']}"
    if e["summary"]:
        line += "\n  " + " ".join(e["summary"].split())[:300]
    return line


def build(bank: Bank, order: StoryOrder, document: str, text: str, built_in: str | None,
          values: dict[str, str]) -> str:
    """The prompt for one part of the chapter (`text`). `built_in`: the built-in skill's text, when the
    project has no skill `capture` to assemble with."""
    if built_in is not None:
        return fill(built_in, {**values, "chapter": text})
    rank = order.document_rank(document)
    previous = order.positions[rank - 1] if rank > 0 else None
    if previous is not None:  # the chapter after the document before it: the position is that one's end
        before = read_document(bank.root, previous) or ""
        if conflict_line(before) is not None:  # both versions of a merge: never in a prompt (files.md, Git)
            before = ""
        buffer = before + "\n\n" + text
        data = context_assemble(bank, SKILL, previous, buffer, {"start": len(before) + 2, "end": len(buffer)})
    else:
        data = context_assemble(bank, SKILL, None, text, {"start": 0, "end": len(text)})
    system = fill(data["systemPrompt"], {**values, "chapter": POINTER}, append=False)
    missing = {k: v for k, v in values.items() if "{{" + k + "}}" not in data["systemPrompt"]}
    if missing:  # a place the writer deleted from the skill: its value after the skill, never lost
        system = fill(system, missing)
    return system.rstrip() + "\n\n" + data["userContent"]
