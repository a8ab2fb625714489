"""What `membank mcp` offers, without the MCP SDK: its tools (each one channel), their input schemas
(derived from the channel's payload type), the envelope turned into a tool result, and the resources
(the project's memory and card files, by project-relative source).

Every tool calls its channel through `dispatch`, the path every shell takes; `mcpserver.py` wraps
these functions in the SDK's server. Kept apart so the mapping is testable without the `mcp` extra."""

from __future__ import annotations

import copy
import json
import urllib.parse
from dataclasses import dataclass
from typing import Any

from ..files.reader import Unreadable, read_regular
from ..files.scan import PROJECT_PREFIX
from ..kernel import errors
from ..kernel.errors import MembankError
from ..kernel.limits import MAX_FILE_BYTES
from ..runtime.catalog import CATALOG
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from .schema import channel_schema

URI_PREFIX = "membank://project/"  # + the project-relative source, percent-encoded where a URI needs it
MIME = "text/markdown"
HIDDEN = frozenset({"projectId"})  # the server has exactly one project open: a tool never names it


@dataclass(frozen=True)
class Tool:
    name: str  # MCP tool names allow [A-Za-z0-9_.-] only: no colons
    channel: str
    title: str
    description: str
    requires: tuple[str, ...] = ()  # fields the tool requires beyond the channel's own required ones


TOOLS: tuple[Tool, ...] = (
    Tool("recall", "memory:injection:preview", "Recall memories",
         "What the memory bank holds that bears on a question: memories ranked by meaning and words (`items`), and "
         "the characters and world entries it finds (`cards`), with their reasons, scores and sources (`queryText` "
         "is the question; `documentId`, e.g. `chapters/ch05.md`, adds what belongs to that document).",
         requires=("queryText",)),
    Tool("context_assemble", "context:assemble", "Assemble a prompt's context",
         "The context for a writing skill at a place in a document: six cited layers (rules, preferences, story "
         "state, retrieved memories, surrounding text, the task) within the token budget. `skillId` is a skill "
         "from `skill_list` (e.g. `continue`); `sessionId` adds that session's working memory (`working_add`)."),
    Tool("kg_state", "kg:state", "A character's state",
         "A character's or world entry's state and facets at a story position (`at`: a chapter's document, e.g. "
         "`chapters/ch05.md`), each with the source file and line it comes from. Name it by `name` or `id`."),
    Tool("kg_consistency_check", "kg:consistency:check", "Check a passage for contradictions",
         "The evidence for a passage at its position (the entities it mentions, their state, relations, facts) "
         "and what in it contradicts the cards. `documentId` is the passage's document; `text` the passage (else "
         "the document's file is read)."),
    Tool("memory_create", "memory:create", "Create a memory",
         "Write a new memory file: `type` (preference, fact, note or another word), `scope` (project, document "
         "or global) and `content`; answers the memory with its `id`, `revision` and `source`."),
    Tool("memory_update", "memory:update", "Update a memory",
         "Change a memory's fields (`patch`); give `expectedRevision` (the `revision` you read) so that a change "
         "made meanwhile by someone else is refused with CONFLICT instead of overwritten."),
    Tool("working_add", "memory:working:add", "Hold a note in this session's working memory",
         "Keep something in mind for this editing session (`sessionId`, any id you choose): `kind` (selection, "
         "instruction, note, signal, …), `content` and `importance` (0..1). Held in this server's memory only, never "
         "on disk; `context_assemble` with the same `sessionId` puts it in the prompt when the skill asks for "
         "`working` tokens. Over the session's token cap the least important goes first."),
    Tool("session_end", "memory:session:end", "End a working-memory session",
         "End a session (`sessionId`): its signals added as often as the learning threshold asks become episodes, "
         "the rest is forgotten. Closing the server ends every session the same way."),
    Tool("skill_list", "skill:list", "List the writing skills",
         "The writing skills of the project (project ones over global ones) and their context rules."),
    Tool("capture_prepare", "capture:prepare", "Prepare a chapter for capture",
         "Step 1 of the capture loop (docs/capture.md): for a chapter (`documentId`, e.g. `chapters/ch05.md`), the "
         "prompt to send to your model (`prompt`, or `parts` for a long chapter), the entities it mentions with "
         "their state just before the chapter, the open threads, the facts in force, the JSON Schema of the "
         "answer, and `chapterHash` to send back with `capture_propose`."),
    Tool("capture_propose", "capture:propose", "Propose updates from a chapter",
         "Step 3 of the capture loop: the ops your model extracted (`ops`, as the schema of `capture_prepare` "
         "says, each with an `evidence` quote from the chapter) and the `chapterHash` you prepared with. Each op "
         "comes back with its status and reason; the valid ones wait in the chapter's proposal file for the "
         "writer's review (you do not apply them)."),
    Tool("capture_status", "capture:status", "Capture state of every chapter",
         "Every document of the story in story order with its capture state (none, pending, stale, reviewed): "
         "the list a backfill walks."),
)
BY_NAME: dict[str, Tool] = {t.name: t for t in TOOLS}
# the tools' annotations beyond the catalog's mode (a read is read-only): which change something again when
# repeated, and which forget something (ending a session drops its entries that are not archived)
NOT_IDEMPOTENT = frozenset({"memory:create", "memory:working:add"})
DESTRUCTIVE = frozenset({"memory:session:end"})


# -- input schemas ---------------------------------------------------------------------------------


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"].removeprefix("#/$defs/")} if isinstance(node.get("$ref"), str) else set()
        return found.union(*(_refs(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node))
    return set()


def input_schema(tool: Tool) -> dict[str, Any]:
    """The tool's arguments: its channel's payload schema (what `python -m membank.shells.schema` writes to
    docs/schema/), with the root object inlined, the `$defs` it uses, and no `projectId`."""
    doc = channel_schema(CATALOG[tool.channel])
    defs: dict[str, Any] = doc.get("$defs", {})
    root = copy.deepcopy(defs[doc["properties"]["payload"]["$ref"].removeprefix("#/$defs/")])
    root.pop("title", None)
    root.pop("description", None)  # the tool has its own
    root["properties"] = {k: v for k, v in root["properties"].items() if k not in HIDDEN}
    required = [k for k in root.get("required", []) if k not in HIDDEN]
    for name in tool.requires:
        kinds = root["properties"][name].get("type")
        if isinstance(kinds, list):  # `str | None` in the payload, a plain string here
            root["properties"][name]["type"] = next(k for k in kinds if k != "null")
        required.append(name)
    if required:
        root["required"] = required
    else:
        root.pop("required", None)
    wanted: set[str] = set()
    todo = _refs(root)
    while todo:
        name = todo.pop()
        if name not in wanted:
            wanted.add(name)
            todo |= _refs(defs[name])
    schema: dict[str, Any] = {"type": "object", **{k: v for k, v in root.items() if k != "type"}}
    if wanted:
        schema["$defs"] = {k: copy.deepcopy(defs[k]) for k in sorted(wanted)}
    return schema


# -- calling a tool --------------------------------------------------------------------------------


def call(registry: Registry, tool: Tool, arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Run the tool's channel through `dispatch`: the envelope, exactly as the sidecar would send it."""
    payload = dict(arguments or {})
    for name in tool.requires:
        if payload.get(name) is None:
            return errors.invalid(name, f"`{name}` is required by the tool `{tool.name}`").envelope()
    return dispatch(registry, tool.channel, payload)


def result(envelope: dict[str, Any]) -> tuple[bool, str, dict[str, Any]]:
    """(is_error, text, structured) for an envelope: the channel's data when ok; else the error object
    (`code`, `message`, `details`), the stable code first, as a tool error."""
    if envelope["ok"]:
        data = envelope["data"]
        structured = data if isinstance(data, dict) else {"data": data}
        return False, json.dumps(data, ensure_ascii=False), structured
    error = envelope["error"]
    return True, json.dumps(error, ensure_ascii=False), error


# -- resources -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resource:
    uri: str
    source: str  # `.writenow/memories/…md`
    name: str
    description: str


def uri_of(source: str) -> str:
    return URI_PREFIX + urllib.parse.quote(source, safe="/._-~")


def source_of(uri: str) -> str | None:
    if not uri.startswith(URI_PREFIX):
        return None
    return urllib.parse.unquote(uri[len(URI_PREFIX):])


def _data(registry: Registry, channel: str) -> dict[str, Any]:
    envelope = dispatch(registry, channel, {})
    if not envelope["ok"]:
        e = envelope["error"]
        raise MembankError(e["code"], e["message"], e.get("details"))
    return envelope["data"]


def resources(registry: Registry) -> list[Resource]:
    """The project's live memory files (from `memory:list`, in its order) and card files (from
    `kg:entity:list`): project-relative sources only; the global bank's files are not resources."""
    found: dict[str, Resource] = {}
    for m in _data(registry, "memory:list")["items"]:
        source = m.get("source") or ""
        if source.startswith(PROJECT_PREFIX) and source not in found:
            first = " ".join(str(m.get("content", "")).split())[:80]
            found[source] = Resource(uri_of(source), source, m["id"], f"memory ({m.get('type')}): {first}")
    for e in _data(registry, "kg:entity:list")["items"]:
        source = e.get("source") or ""
        if source.startswith(PROJECT_PREFIX) and source not in found:
            found[source] = Resource(uri_of(source), source, e.get("name") or e.get("id") or source,
                                     f"card ({e.get('kind') or e.get('section')}): {e.get('summary') or ''}".rstrip(": "))
    return list(found.values())


def read(registry: Registry, uri: str) -> str:
    """The text of a listed resource's file; NOT_FOUND for any other URI (nothing else is read)."""
    source = source_of(uri)
    listed = {r.source for r in resources(registry)} if source is not None else set()
    if source not in listed:
        raise MembankError(errors.NOT_FOUND, f"no memory or card file at `{uri}`", {"uri": uri})
    path = registry.get(None).file_of(source)  # type: ignore[arg-type]
    if path is None:
        raise MembankError(errors.NOT_FOUND, f"no memory or card file at `{uri}`", {"uri": uri})
    try:
        data, _ = read_regular(path, MAX_FILE_BYTES + 1)
    except (FileNotFoundError, NotADirectoryError):
        raise MembankError(errors.NOT_FOUND, f"`{source}` is gone", {"uri": uri, "source": source}) from None
    except Unreadable as e:
        raise MembankError(errors.NOT_FOUND, f"`{source}`: {e.message}", {"uri": uri, "source": source}) from None
    return data.decode("utf-8", errors="replace")
