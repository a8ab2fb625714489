"""`membank mcp`: a Model Context Protocol server over stdio, on the official `mcp` Python SDK.

One project is open (`--project`, found upward as every command does) through `project:open`; its
files are watched as the sidecar watches them. The tools and resources are `mcptools.py`'s: each tool
is one channel called through `dispatch`, run on a worker thread one call at a time (writes to the
project are ordered, the event loop keeps answering pings). A channel's failure is a tool error
(`isError`) whose text is the error object with its stable code. A client's `notifications/cancelled`
(the SDK cancels the call's task) reaches the worker thread through the call's token (`HostToken`): a
cancellable channel stops at its next checkpoint with CANCELED, so a client that gave up does not keep
the server busy; any other channel runs to its end, as in the sidecar; an unknown tool or resource is a
protocol error (-32602). Logs go to stderr; while serving, the SDK points file descriptor 1 at stderr
so nothing but protocol messages reaches stdout.

The SDK is the optional extra `membank[mcp]`, imported only here and only when the server starts."""

from __future__ import annotations

import asyncio
import logging
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from ..kernel import cancel
from ..kernel.errors import MembankError
from ..runtime.catalog import READS
from ..runtime.dispatch import dispatch
from ..runtime.registry import Registry
from . import mcptools

log = logging.getLogger("membank.shells.mcp")
INSTALL = "pip install 'membank[mcp]'"
INSTRUCTIONS = (
    "membank is the writer's memory bank for this novel project: preferences, facts, notes, character "
    "cards and world entries, each a Markdown file cited by its project-relative source. Use `recall` "
    "before writing about something the story may already have settled, `kg_state` and "
    "`kg_consistency_check` for what a character is at a chapter, and `memory_create` to keep what the "
    "writer tells you to remember. Errors carry a stable `code` (INVALID_ARGUMENT, NOT_FOUND, CONFLICT, ...)."
)


class HostToken(cancel.Token):
    """A tool call's token that also notices, at each checkpoint, that the task waiting for it in the event
    loop was canceled (anyio's `from_thread.check_cancelled`, on the worker thread the call runs on)."""

    __slots__ = ()

    def check(self) -> None:
        if not self.canceled:
            import anyio.from_thread

            try:
                anyio.from_thread.check_cancelled()
            except asyncio.CancelledError:
                self.cancel()
            except RuntimeError:  # not on an anyio worker thread: nothing to notice
                pass
        super().check()


def _call(registry: Registry, tool: mcptools.Tool, arguments: Any) -> dict[str, Any]:
    """One tool call on the worker thread, under a token that notices the client's cancel."""
    with cancel.installed(HostToken()):
        return mcptools.call(registry, tool, arguments)


def sdk_missing() -> str | None:
    """Why the server cannot start without the extra, or None when the SDK is importable."""
    try:
        import mcp.server.lowlevel  # noqa: F401
        import mcp.server.stdio  # noqa: F401
    except ImportError as e:
        return (f"membank mcp needs the MCP Python SDK, which is not installed ({e.name or e}); "
                f"install it with: {INSTALL}")
    return None


def _version() -> str:
    try:
        return metadata.version("membank")
    except metadata.PackageNotFoundError:
        return "0"


def build(registry: Registry) -> Any:
    """The SDK's low-level `Server` with membank's tools and resources, over `registry` (one project open)."""
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    one_at_a_time = anyio.CapacityLimiter(1)  # channels run as the CLI runs them: one call at a time

    async def in_thread(fn: Any, *args: Any) -> Any:
        return await anyio.to_thread.run_sync(fn, *args, limiter=one_at_a_time)

    tools = [types.Tool(name=t.name, title=t.title, description=f"{t.description} (channel `{t.channel}`)",
                        input_schema=mcptools.input_schema(t),
                        annotations=types.ToolAnnotations(
                            title=t.title, read_only_hint=t.channel in READS,
                            destructive_hint=t.channel in mcptools.DESTRUCTIVE,
                            idempotent_hint=t.channel not in mcptools.NOT_IDEMPOTENT,
                            open_world_hint=False))
             for t in mcptools.TOOLS]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        tool = mcptools.BY_NAME.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"no tool named `{params.name}`",
                           {"code": "NOT_FOUND", "tool": params.name})
        envelope = await in_thread(_call, registry, tool, params.arguments)
        is_error, text, structured = mcptools.result(envelope)
        if is_error:
            log.info("tool %s: %s", tool.name, structured.get("code"))
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured,
                                    is_error=is_error)

    async def list_resources(ctx: Any, params: Any) -> Any:
        try:
            found = await in_thread(mcptools.resources, registry)
        except MembankError as e:
            raise MCPError(types.INTERNAL_ERROR, e.message, {"code": e.code, **e.details}) from None
        return types.ListResourcesResult(resources=[
            types.Resource(uri=r.uri, name=r.name, title=r.source, description=r.description, mime_type=mcptools.MIME)
            for r in found])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        try:
            text = await in_thread(mcptools.read, registry, uri)
        except MembankError as e:
            raise MCPError(types.INVALID_PARAMS, e.message, {"code": e.code, **e.details}) from None
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type=mcptools.MIME,
                                                                             text=text)])

    return Server("membank", version=_version(), title="membank", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_read_resource=read_resource)


def run(project: Path | None, *, watch: bool = True, log_level: str = "info") -> int:
    """`membank mcp`: open the project, serve MCP on stdin/stdout until stdin closes; the exit code."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s membank %(levelname)s %(name)s: %(message)s")
    logging.getLogger("membank").setLevel(getattr(logging, log_level.upper(), logging.INFO))
    missing = sdk_missing()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    import anyio
    from mcp.server.stdio import stdio_server

    registry = Registry()
    from .clicall import here

    where = here(project)  # a current folder removed under the shell: NOT_FOUND, not a traceback
    envelope = dispatch(registry, "project:open", {"path": where})
    if not envelope["ok"]:
        log.error("cannot open the project %s: %s", where, envelope["error"]["message"])
        registry.close()
        return 2
    from ..domains.indexing import strongfill

    strongfill.start(registry.get(None))  # the strong tier fills in the background while the server runs
    watcher = None
    if watch:
        from .watch import Watcher

        watcher = Watcher(registry.get(None))
        try:
            watcher.start()
        except Exception:
            log.exception("cannot watch the project; its files are read as they were at start")
            watcher = None
    server = build(registry)

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    log.info("serving MCP on stdio for %s (%s)", envelope["data"]["name"], envelope["data"]["projectId"])
    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        log.info("interrupted")
    finally:
        if watcher is not None:
            watcher.stop()
        registry.close()
    return 0
