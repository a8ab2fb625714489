"""`membank mcp`: the MCP server driven end to end by the official SDK's own stdio client (one server
process for the module: initialize, list the tools, call each one, the errors with their stable codes,
list and read the resources), and what holds without the `mcp` extra."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from membank.runtime.catalog import CATALOG
from membank.runtime.dispatch import dispatch
from membank.runtime.registry import Registry
from membank.shells import mcptools
from membank.shells.schema import channel_schema

from .helpers import membank as run_cli

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
CHANNELS = {"memory:injection:preview", "context:assemble", "kg:state", "kg:consistency:check", "memory:create",
            "memory:update", "memory:working:add", "memory:session:end", "skill:list", "capture:prepare",
            "capture:propose", "capture:status"}
DEADLINE = 120.0  # seconds for the whole session; it takes a few


def _sample(folder: Path) -> Path:
    dest = folder / "sample"
    shutil.copytree(FIXTURES / "sample-project", dest, ignore=shutil.ignore_patterns(".index"))
    return dest


# -- the session, run once ------------------------------------------------------------------------


async def _session(project: Path, home: Path, errlog: Any) -> dict[str, Any]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.shared.exceptions import MCPError

    params = StdioServerParameters(command=sys.executable, args=["-m", "membank.shells.cli", "mcp", "--project",
                                                                 str(project), "--log-level", "warning"],
                                   env={"WRITENOW_HOME": str(home), "PYTHONUNBUFFERED": "1"}, cwd=str(REPO))
    seen: dict[str, Any] = {}
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            seen["init"] = await session.initialize()
            seen["tools"] = (await session.list_tools()).tools

            async def call(name: str, arguments: dict[str, Any]) -> Any:
                return await session.call_tool(name, arguments)

            seen["recall"] = await call("recall", {"queryText": "is the hero injured?", "documentId": "chapters/ch05.md"})
            seen["context_assemble"] = await call("context_assemble", {"skillId": "continue",
                                                                       "documentId": "chapters/ch05.md"})
            seen["kg_state"] = await call("kg_state", {"name": "Lin Mo", "at": "chapters/ch05.md"})
            seen["kg_consistency_check"] = await call("kg_consistency_check", {
                "documentId": "chapters/ch05.md", "text": "Lin Mo raised his sword arm high above his head."})
            seen["skill_list"] = await call("skill_list", {})
            seen["capture_prepare"] = await call("capture_prepare", {"documentId": "chapters/ch05.md"})
            text = (project / "chapters" / "ch05.md").read_text("utf-8")
            quote = next(ln.strip()[:20] for ln in text.splitlines() if ln.strip() and not ln.startswith("#"))
            seen["capture_propose"] = await call("capture_propose", {
                "documentId": "chapters/ch05.md",
                "chapterHash": (seen["capture_prepare"].structured_content or {}).get("chapterHash"),
                "ops": [{"op": "fact", "content": "The lamp burns all night.", "evidence": quote}], "by": "agent"})
            seen["capture_status"] = await call("capture_status", {})
            # the writer reviews what the agent proposed, from a terminal, while the server runs
            seen["capture_progress"] = await call("capture_propose", {
                "documentId": "chapters/ch05.md",
                "chapterHash": (seen["capture_prepare"].structured_content or {}).get("chapterHash"),
                "ops": [{"op": "progress", "entity": "Lin Mo", "state": "flees into the Blackpine trees",
                         "evidence": "stumbled, and ran, not towards the light but inland"}], "by": "agent"})
            op_id = ((seen["capture_progress"].structured_content or {}).get("ops") or [{}])[0].get("id", "none")
            seen["review_cli"] = await asyncio.to_thread(run_cli, "review", "chapters/ch05.md", "--accept", op_id,
                                                         cwd=project, home=home)
            seen["kg_state_reviewed"] = await call("kg_state", {"name": "Lin Mo", "at": "chapters/ch05.md"})
            seen["kg_state_before"] = await call("kg_state", {"name": "Lin Mo", "at": "chapters/ch01.md"})
            seen["memory_create"] = await call("memory_create", {"type": "fact", "scope": "project",
                                                                 "content": "Maren hums when she is afraid.",
                                                                 "tags": ["maren"]})
            created = seen["memory_create"].structured_content or {}
            seen["memory_update"] = await call("memory_update", {
                "id": created.get("id"), "patch": {"content": "Maren sings when she is afraid."},
                "expectedRevision": created.get("revision")})
            seen["stale"] = await call("memory_update", {"id": created.get("id"), "patch": {"pinned": True},
                                                         "expectedRevision": created.get("revision")})
            seen["bad"] = await call("memory_create", {"type": "fact", "scope": "nowhere", "content": "x"})
            seen["unknown_field"] = await call("kg_state", {"at": "chapters/ch05.md", "name": "Lin Mo", "color": "red"})
            seen["no_query"] = await call("recall", {})
            try:
                await call("no_such_tool", {})
            except MCPError as e:
                seen["no_tool"] = e
            seen["resources"] = (await session.list_resources()).resources
            by_hand = project / ".writenow" / "memories" / "notes" / "by-hand.md"  # the writer edits meanwhile
            by_hand.write_text("---\nid: m-by-hand\ntype: note\nscope: project\n---\nThe bell rings at dusk.\n",
                               encoding="utf-8")
            for _ in range(200):  # the watcher picks it up (debounced); 20 s at most
                listed = [str(r.uri) for r in (await session.list_resources()).resources]
                if any(u.endswith("/notes/by-hand.md") for u in listed):
                    seen["watched"] = listed
                    break
                await asyncio.sleep(0.1)
            memory = next(r for r in seen["resources"] if str(r.uri).endswith("/lin-mo-wounded-ch05.md"))
            seen["read"] = await session.read_resource(memory.uri)
            card = next(r for r in seen["resources"] if "/.writenow/characters/" in str(r.uri))
            seen["read_card"] = await session.read_resource(card.uri)
            for uri in ("membank://project/.writenow/settings.yaml", "membank://project/../../etc/passwd"):
                try:
                    await session.read_resource(uri)
                except MCPError as e:
                    seen.setdefault("refused", []).append(e)
    return seen


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pytest.importorskip("mcp")
    folder = tmp_path_factory.mktemp("mcp")
    project, home = _sample(folder), folder / "global-bank"
    log = folder / "server.log"

    async def bounded() -> dict[str, Any]:
        return await asyncio.wait_for(_session(project, home, errlog), DEADLINE)

    with open(log, "w", encoding="utf-8") as errlog:
        try:
            seen = asyncio.run(bounded())
        except BaseException:
            errlog.flush()
            print(log.read_text("utf-8"), file=sys.stderr)  # the server's stderr, for the failure report
            raise
    seen["project"], seen["log"] = project, log.read_text("utf-8")
    return seen


def _data(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    text = json.loads(result.content[0].text)
    assert text == result.structured_content
    return text


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error
    error = json.loads(result.content[0].text)
    assert error == result.structured_content and set(error) <= {"code", "message", "details"}
    return error


# -- with the SDK: end to end ---------------------------------------------------------------------


def test_initialize_names_the_server_and_its_capabilities(session: dict[str, Any]) -> None:
    init = session["init"]
    assert init.server_info.name == "membank"
    assert init.capabilities.tools is not None and init.capabilities.resources is not None
    assert "recall" in (init.instructions or "")


def test_every_tool_is_listed_with_its_channels_payload_schema(session: dict[str, Any]) -> None:
    tools = {t.name: t for t in session["tools"]}
    assert set(tools) == {t.name for t in mcptools.TOOLS} and len(tools) == 12
    assert {t.channel for t in mcptools.TOOLS} == CHANNELS
    for t in mcptools.TOOLS:
        listed = tools[t.name]
        assert listed.input_schema == mcptools.input_schema(t)
        assert f"`{t.channel}`" in (listed.description or "")
    assert tools["recall"].input_schema["required"] == ["queryText"]
    assert tools["memory_update"].annotations.read_only_hint is False
    assert tools["kg_state"].annotations.read_only_hint is True
    assert tools["working_add"].annotations.read_only_hint is False and not tools["working_add"].annotations.destructive_hint
    assert tools["session_end"].annotations.destructive_hint is True


def test_recall_ranks_by_meaning_and_cites_sources(session: dict[str, Any]) -> None:
    data = _data(session["recall"])
    ids = [item["id"] for item in data["items"]]
    assert "m-fact-linmo-wounded" in ids[:3]
    assert all(item["source"].startswith((".writenow/", "global:")) for item in data["items"])


def test_context_story_and_skill_tools_answer_as_their_channels(session: dict[str, Any]) -> None:
    assembled = _data(session["context_assemble"])
    assert assembled["skillId"] == "continue" and assembled["runId"].startswith("r-") and assembled["systemPrompt"]
    state = _data(session["kg_state"])
    assert state["facets"]["wounded"]["value"] is True and state["source"] == ".writenow/characters/lin-mo.md"
    checked = _data(session["kg_consistency_check"])
    assert checked["documentId"] == "chapters/ch05.md" and checked["entities"]
    skills = _data(session["skill_list"])
    assert "continue" in {s["id"] for s in skills["items"]}


def test_an_agent_runs_the_capture_loop_up_to_the_review(session: dict[str, Any]) -> None:
    prepared = session["capture_prepare"].structured_content
    assert prepared["chapterHash"].startswith("sha256:") and prepared["schema"]["title"] == "membank capture proposal"
    assert prepared["prompt"] or prepared["parts"]
    proposed = session["capture_propose"].structured_content
    assert [r["status"] for r in proposed["ops"]] == ["pending"] and proposed["proposal"].endswith("ch05.md")
    items = {i["documentId"]: i for i in session["capture_status"].structured_content["items"]}
    assert (items["chapters/ch05.md"]["state"], items["chapters/ch05.md"]["pending"]) == ("pending", 1)


def test_the_writer_reviews_what_the_agent_proposed_and_kg_state_shows_it(session: dict[str, Any]) -> None:
    proposed = _data(session["capture_progress"])
    assert [(r["op"], r["status"]) for r in proposed["ops"]] == [("progress", "pending")]
    review = session["review_cli"]
    assert review.returncode == 0 and "1 applied" in review.stdout, review.stdout + review.stderr
    assert _data(session["kg_state_reviewed"])["state"] == "flees into the Blackpine trees"
    assert _data(session["kg_state_before"])["state"] == "沉船后被冲上岸，昏迷"  # nothing earlier moves
    card = (session["project"] / ".writenow" / "characters" / "lin-mo.md").read_text("utf-8")
    assert "evidence: 'chapters/ch05.md:" in card and "# oldest first" in card


def test_memory_create_and_update_write_the_file(session: dict[str, Any]) -> None:
    created = _data(session["memory_create"])
    assert created["revision"] == 1 and created["source"].startswith(".writenow/memories/")
    updated = _data(session["memory_update"])
    assert updated["id"] == created["id"] and updated["revision"] == 2
    text = (session["project"] / updated["source"]).read_text("utf-8")
    assert "Maren sings when she is afraid." in text


def test_a_stale_expected_revision_is_a_conflict(session: dict[str, Any]) -> None:
    assert _error(session["stale"])["code"] == "CONFLICT"


def test_bad_arguments_are_tool_errors_naming_the_field(session: dict[str, Any]) -> None:
    bad = _error(session["bad"])
    assert bad["code"] == "INVALID_ARGUMENT" and bad["details"]["field"] == "scope"
    unknown = _error(session["unknown_field"])
    assert unknown["code"] == "INVALID_ARGUMENT" and unknown["details"]["field"] == "color"
    no_query = _error(session["no_query"])
    assert no_query["code"] == "INVALID_ARGUMENT" and no_query["details"]["field"] == "queryText"


def test_an_unknown_tool_is_a_protocol_error(session: dict[str, Any]) -> None:
    error = session["no_tool"]
    assert error.code == -32602 and error.data["code"] == "NOT_FOUND"


def test_resources_are_the_memory_and_card_files_by_source(session: dict[str, Any]) -> None:
    uris = [str(r.uri) for r in session["resources"]]
    assert all(u.startswith("membank://project/.writenow/") for u in uris) and len(uris) == len(set(uris))
    assert any("/.writenow/memories/" in u for u in uris) and any("/.writenow/characters/" in u for u in uris)
    assert any("/.writenow/world/" in u for u in uris)
    assert not any("/skills/" in u or u.endswith(".yaml") for u in uris)
    read = session["read"].contents[0]
    assert read.mime_type == "text/markdown" and read.text.startswith("---\nid: m-fact-linmo-wounded\n")
    assert session["read_card"].contents[0].text.startswith("---")


def test_files_edited_meanwhile_are_seen(session: dict[str, Any]) -> None:
    assert "membank://project/.writenow/memories/notes/by-hand.md" in session.get("watched", [])


def test_only_listed_files_can_be_read(session: dict[str, Any]) -> None:
    refused = session["refused"]
    assert len(refused) == 2 and all(e.code == -32602 and e.data["code"] == "NOT_FOUND" for e in refused)


def test_the_server_logs_nothing_alarming(session: dict[str, Any]) -> None:
    assert "Traceback" not in session["log"]


# -- without the SDK (or without a project) -------------------------------------------------------


def _mcp_process(args: list[str], home: Path, block_sdk: bool, cwd: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys\n"
            + ("sys.modules['mcp'] = None  # as if the extra were not installed\n" if block_sdk else "")
            + "from membank.shells.cli import app\n"
            + f"app({['mcp', *args]!r}, prog_name='membank')\n")
    env = {**os.environ, "WRITENOW_HOME": str(home)}
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def test_without_the_extra_mcp_exits_2_naming_the_install(tmp_path: Path, home: Path) -> None:
    sample = _sample(tmp_path)
    result = _mcp_process(["--project", str(sample)], home, True, REPO)
    assert result.returncode == 2 and result.stdout == ""
    assert "pip install 'membank[mcp]'" in result.stderr
    blocked = subprocess.run([sys.executable, "-c", "import sys; sys.modules['mcp'] = None; import membank, "
                              "membank.shells.cli, membank.shells.mcpserver"], capture_output=True, text=True, timeout=60)
    assert blocked.returncode == 0, blocked.stderr  # membank imports without the extra


def test_a_folder_outside_a_project_exits_2(tmp_path: Path, home: Path) -> None:
    pytest.importorskip("mcp")
    result = _mcp_process(["--project", str(tmp_path)], home, False, REPO)
    assert result.returncode == 2 and result.stdout == ""
    assert "cannot open the project" in result.stderr


# -- the mapping itself (no SDK needed) -----------------------------------------------------------


def test_input_schemas_are_the_payload_schemas_without_project_id() -> None:
    for t in mcptools.TOOLS:
        schema = mcptools.input_schema(t)
        payload = channel_schema(CATALOG[t.channel])
        own = payload["$defs"][payload["properties"]["payload"]["$ref"].removeprefix("#/$defs/")]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["properties"]) == set(own["properties"]) - {"projectId"}
        assert "projectId" not in json.dumps(schema)
        for ref in _refs(schema):
            assert ref in schema["$defs"]


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        return ({node["$ref"].removeprefix("#/$defs/")} if "$ref" in node else set()).union(*map(_refs, node.values()))
    if isinstance(node, list):
        return set().union(*map(_refs, node))
    return set()


def test_resource_uris_round_trip_and_read_only_what_is_listed(tmp_path: Path) -> None:
    source = ".writenow/memories/notes/林默 的伤.md"
    assert mcptools.source_of(mcptools.uri_of(source)) == source and " " not in mcptools.uri_of(source)
    registry = Registry()
    try:
        assert dispatch(registry, "project:open", {"path": str(_sample(tmp_path))})["ok"]
        listed = mcptools.resources(registry)
        assert mcptools.read(registry, listed[0].uri).startswith("---")
        for uri in ("membank://project/.writenow/project.yaml", "file:///etc/passwd"):
            with pytest.raises(mcptools.MembankError) as caught:
                mcptools.read(registry, uri)
            assert caught.value.code == "NOT_FOUND"
    finally:
        registry.close()
