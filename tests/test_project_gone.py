"""A project whose `.writenow/` is deleted under a running process (issue 30 point 7): every call
answers NOT_FOUND (project), writes create nothing, reads say so too; the project answers again once
the folder is back. Through the sidecar (a real `membank serve`) and the MCP tools' path."""

from __future__ import annotations

import shutil
from pathlib import Path

from membank.runtime.registry import Registry
from membank.shells import mcptools
from tests.sidecar import Sidecar

MEMORY = {"type": "fact", "scope": "project", "content": "Maren hums when she is afraid."}


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_serve_refuses_writes_and_reads_of_a_deleted_project(sample: Path, home: Path, tmp_path: Path) -> None:
    server = Sidecar("--project", str(sample), home=home)
    try:
        assert server.ok("memory:create", MEMORY)["id"]
        for _ in range(2):  # a signal that would be archived as an episode when the sidecar closes
            server.ok("memory:working:add", {"sessionId": "s", "kind": "signal", "importance": 0.6, "content": "x"})
        kept = tmp_path / "kept"
        shutil.move(str(sample / ".writenow"), kept)  # deleted, as far as the sidecar can tell
        before = _files(sample)
        for method, params in (("memory:create", MEMORY), ("memory:episode:record", {"sceneType": "action"}),
                               ("memory:lifecycle:run", {"trigger": "daily"}), ("memory:list", {}),
                               ("index:status", {})):
            reply = server.call(method, params)
            assert reply["error"]["code"] == "NOT_FOUND", (method, reply)
            assert "gone" in reply["error"]["message"]
        assert _files(sample) == before and not (sample / ".writenow").exists()
        shutil.move(str(kept), sample / ".writenow")  # back (a `git checkout`, an undo in the file manager)
        assert server.ok("memory:list", {})["items"]
        for _ in range(50):  # gone for good this time; the watcher's reconcile of the move back may be
            shutil.rmtree(sample / ".writenow", ignore_errors=True)  # taking its write lock in there just now
            if not (sample / ".writenow").exists():
                break
        assert not (sample / ".writenow").exists()
    finally:
        assert server.close() == 0
    assert not (sample / ".writenow").exists()  # closing archives nothing into a folder made again


def test_the_mcp_tools_refuse_a_deleted_project(sample: Path) -> None:
    registry = Registry()
    try:
        registry.open(sample)
        shutil.rmtree(sample / ".writenow")
        tool = next(t for t in mcptools.TOOLS if t.name == "memory_create")
        envelope = mcptools.call(registry, tool, MEMORY)
        assert not envelope["ok"] and envelope["error"]["code"] == "NOT_FOUND"
        assert envelope["error"]["details"]["projectId"]
        recall = next(t for t in mcptools.TOOLS if t.name == "recall")
        assert mcptools.call(registry, recall, {"queryText": "Maren"})["error"]["code"] == "NOT_FOUND"
        assert not (sample / ".writenow").exists()
    finally:
        registry.close()


def test_a_read_connection_opened_late_makes_nothing(tmp_path: Path) -> None:
    """The sidecar warms its read threads' connections in the background; one that runs after the
    folder is gone (a loaded machine) must fail, not make `.writenow/.index/index.db` again."""
    import threading

    from membank.index.store import Index

    index = Index(tmp_path / ".writenow" / ".index" / "index.db")
    try:
        shutil.rmtree(tmp_path / ".writenow")
        failures: list[BaseException] = []

        def late() -> None:
            try:
                index.prepare_reader()
            except Exception as e:  # noqa: BLE001 - the failure is what is asserted
                failures.append(e)

        thread = threading.Thread(target=late)
        thread.start()
        thread.join()
        assert failures and not (tmp_path / ".writenow").exists()
    finally:
        index.close()
