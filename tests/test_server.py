"""`membank serve`, run as the app runs it: a real subprocess spoken to over pipes, with deadlines."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any, Iterator

import pytest

from membank.shells import schema
from membank.runtime.catalog import CATALOG as CHANNELS
from membank.runtime.catalog import READS
from membank.shells.server import METHOD_NOT_FOUND, PARSE_ERROR, INVALID_REQUEST

from .sidecar import DEADLINE, REPO, Sidecar

SCHEMAS = REPO / "docs" / "schema"


@pytest.fixture
def sidecar(sample: Path, home: Path) -> Iterator[Sidecar]:
    server = Sidecar("--project", str(sample), home=home)
    try:
        yield server
        assert server.close() == 0
        assert not server.bad_lines, server.bad_lines  # stdout carries JSON-RPC lines only
    finally:
        server.kill()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sidecar]:
    """One server for the tests that only provoke errors: they must leave it serving anyway."""
    import shutil

    from tests.conftest import FIXTURES

    folder = tmp_path_factory.mktemp("shared")
    shutil.copytree(FIXTURES / "sample-project", folder / "sample", ignore=shutil.ignore_patterns(".index"))
    server = Sidecar("--project", str(folder / "sample"), home=folder / "global-bank")
    try:
        yield server
        assert server.close() == 0
        assert not server.bad_lines, server.bad_lines
    finally:
        server.kill()


def _generate(root: Path, count: int) -> Path:
    """A project with `count` small memory files."""
    (root / ".writenow" / "memories" / "notes").mkdir(parents=True)
    (root / ".writenow" / "project.yaml").write_text("id: p-generated\nname: Generated\n", "utf-8")
    for i in range(count):
        (root / ".writenow" / "memories" / "notes" / f"n{i:05d}.md").write_text(
            f"---\nid: n{i:05d}\ntype: note\nupdated: 2026-01-01T00:00:00Z\n---\n"
            f"Note {i}: the tide turns at the causeway when the gulls go quiet, number {i}.\n", "utf-8")
    return root


def _check_schema(method: str, data: Any) -> None:
    doc = json.loads((SCHEMAS / schema.file_name(method)).read_text("utf-8"))
    problems = schema.check(data, doc["properties"]["data"], doc)
    assert not problems, f"{method} data does not fit docs/schema: {problems}"


# -- every channel ----------------------------------------------------------------------------


def _payloads(sample: Path, created: str) -> dict[str, dict[str, Any]]:
    return {
        "project:open": {"path": str(sample)},
        "project:init": {"path": str(sample)},  # set up already: nothing is created
        "index:status": {},
        "index:sync": {},
        "index:diagnostics": {},
        "memory:create": {"type": "preference", "scope": "project", "content": "Keep the sea in every chapter.",
                          "tags": ["style"]},
        "memory:get": {"id": created},
        "memory:list": {"includeDeleted": True},
        "memory:update": {"id": created, "patch": {"content": "Keep the sea in every chapter opening."}},
        "memory:delete": {"id": created},
        "memory:restore": {"id": created},
        "memory:settings:get": {},
        "memory:settings:update": {"patch": {"injectionMaxItems": 7}},
        "embedding:settings:update": {"patch": {"model": None}},  # the bundled model, as before
        "context:settings:update": {"patch": {"layerTokens": {"retrieved": 3500}}},
        "lifecycle:settings:update": {"patch": {"episodeTtlDays": 120}},
        "memory:injection:preview": {"queryText": "the sea"},
        "memory:preferences:ingest": {"runId": "run-1", "skillId": "polish", "action": "accept",
                                      "evidenceRef": "omit needless words"},
        "memory:preferences:clear": {},
        "skill:list": {},
        "skill:get": {"skillId": "continue"},
        "context:assemble": {"skillId": "continue", "documentId": "chapters/ch05.md",
                             "selection": {"start": 10, "end": 40}, "instruction": "Go on.", "runId": "r-sidecar-1",
                             "sceneType": "dialogue"},
        "kg:entity:list": {"at": "chapters/ch05.md"},
        "kg:entity:get": {"name": "Lin Mo"},
        "kg:relations": {"name": "Maren", "at": "chapters/ch05.md", "depth": 2},
        "kg:state": {"id": "characters/lin-mo", "at": "chapters/ch05.md"},
        "kg:state:update": {"name": "Edric Thorne", "at": "chapters/ch05.md", "set": {"limp": True}},
        "kg:mentions": {"text": "Maren and 林默 at the light"},
        "kg:consistency:check": {"documentId": "chapters/ch05.md"},
        "story:threads": {"at": "chapters/ch05.md"},
        "story:scene": {"at": "chapters/ch05.md"},
        "story:reader": {"at": "chapters/ch05.md"},
        "story:duplicates": {},
        "memory:trace:get": {"runId": "r-sidecar-1"},
        "memory:trace:feedback": {"runId": "r-sidecar-1", "verdict": "correct", "reason": "the right cards"},
        "ai:skill:feedback": {"runId": "r-sidecar-1", "action": "accept", "editDistance": 0.15, "sceneType": "dialogue",
                              "evidenceRef": "keep the sea close", "summary": "Lin and Maren argue at the light"},
        "memory:episode:record": {"sceneType": "dialogue", "skillUsed": "continue", "summary": "a quarrel", "wait": True},
        "memory:episode:query": {"sceneType": "dialogue", "queryText": "an argument at the lighthouse"},
        "memory:lifecycle:run": {"trigger": "weekly"},
        "memory:working:add": {"sessionId": "s-sidecar", "kind": "signal", "content": "keep the sea close",
                               "importance": 0.6, "focus": "Lin and Maren at the light"},
        "memory:working:list": {"sessionId": "s-sidecar"},
        "memory:session:end": {"sessionId": "s-sidecar"},
        "card:import": {"paths": [str(_card_file(sample.parent / "keeper.json"))]},
        "card:export": {"source": "characters/maren-voss.md", "format": "json", "spec": "v2",
                        "output": str(sample.parent / "maren.json"), "force": True},
        "project:git:setup": {},
        "manuscript:search": {"queryText": "the lighthouse", "before": "chapters/ch05.md"},
        "manuscript:status": {},
        "kg:appearances": {"name": "Lin Mo"},
        "summary:put": {"of": "chapters/ch01.md", "level": "chapter", "text": "Maren keeps the lamp lit."},
        "summary:list": {"before": "chapters/ch05.md"},
        **_capture(sample),
    }


def _capture(sample: Path) -> dict[str, dict[str, Any]]:
    from membank.domains.capture.evidence import chapter_hash
    from membank.domains.capture.proposals import op_id
    text = (sample / "chapters" / "ch05.md").read_text("utf-8").lstrip("\ufeff")
    quote = next(line.strip()[:20] for line in text.splitlines() if line.strip() and not line.startswith("#"))
    op = {"op": "fact", "content": "The lamp burns all night.", "evidence": quote}
    return {"capture:prepare": {"documentId": "chapters/ch05.md"},
            "capture:propose": {"documentId": "chapters/ch05.md", "chapterHash": chapter_hash(text), "ops": [op]},
            "capture:pending": {"documentId": "chapters/ch05.md"},
            "capture:review": {"documentId": "chapters/ch05.md",
                               "decisions": [{"id": op_id("chapters/ch05.md", op), "decision": "reject"}]},
            "capture:status": {}}


def _card_file(path: Path) -> Path:
    """A Character Card V1 to import (docs/import-export.md)."""
    path.write_text(json.dumps({"name": "Keeper", "description": "Keeps the light.", "personality": "",
                                "scenario": "", "first_mes": "Hm.", "mes_example": ""}), "utf-8")
    return path


def test_serves_every_channel_with_data_that_fits_its_schema(sidecar: Sidecar, sample: Path) -> None:
    created = sidecar.ok("memory:create", {"type": "note", "scope": "project", "content": "A note to work on."})["id"]
    payloads = _payloads(sample, created)
    missing = sorted(set(CHANNELS) - set(payloads))
    assert not missing, f"channels with no payload in this test: {missing}"
    for method in CHANNELS:  # the table's order: create before get, delete before restore
        data = sidecar.ok(method, payloads[method])
        _check_schema(method, data)
    assert sidecar.ok("memory:get", {"id": created})["content"] == "Keep the sea in every chapter opening."
    assert sidecar.ok("memory:settings:get")["injectionMaxItems"] == 7


def test_reads_are_channels_that_exist() -> None:
    assert READS <= set(CHANNELS)


def test_project_open_and_project_ids(sidecar: Sidecar, sample: Path, tmp_path: Path) -> None:
    first = sidecar.ok("index:status")
    assert sidecar.ok("project:open", {"path": str(sample / "chapters")}) == {
        "projectId": first["projectId"], "name": first["name"], "root": sample.name}  # found upward, no abs path
    other = _generate(tmp_path / "other", 3)
    opened = sidecar.ok("project:open", {"path": str(other)})
    assert opened == {"projectId": "p-generated", "name": "Generated", "root": "other"}
    ambiguous = sidecar.call("memory:list")
    assert ambiguous["error"]["code"] == "INVALID_ARGUMENT" and ambiguous["error"]["details"]["field"] == "projectId"
    assert len(sidecar.ok("memory:list", {"projectId": "p-generated"})["items"]) == 3
    assert sidecar.call("memory:list", {"projectId": "p-nope"})["error"]["code"] == "NOT_FOUND"
    missing = sidecar.call("project:open", {"path": str(tmp_path / "nowhere")})
    assert missing["error"]["code"] == "NOT_FOUND"
    assert str(tmp_path) not in json.dumps(missing)


def test_server_starts_with_no_project_and_opens_one(sample: Path, home: Path) -> None:
    server = Sidecar(home=home)
    try:
        assert server.call("index:status")["error"]["details"]["field"] == "projectId"
        project_id = server.ok("project:open", {"path": str(sample)})["projectId"]
        assert server.ok("index:status")["projectId"] == project_id
        assert server.close() == 0
    finally:
        server.kill()


def test_bad_project_argument_is_bad_usage(tmp_path: Path, home: Path) -> None:
    server = Sidecar("--project", str(tmp_path / "nowhere"), home=home)
    try:
        assert server.proc.wait(DEADLINE) == 2
        server.close()
        assert any("cannot open the project" in line for line in server.stderr)
        assert not server.messages
    finally:
        server.kill()


# -- protocol faults ------------------------------------------------------------------------------


def _error(server: Sidecar, raw: bytes) -> dict[str, Any]:
    """Send a raw line; the one new reply (an error) it caused."""
    before = len(server.replies())
    server.send_raw(raw)
    got = server.wait_for(lambda: server.replies()[before:], "an error reply")
    assert len(got) == 1, got
    assert "error" in got[0] and "result" not in got[0], got[0]
    return got[0]


@pytest.mark.parametrize("raw, code", [
    (b"this is not json\n", PARSE_ERROR),
    (b'{"jsonrpc": "2.0", "method": \n', PARSE_ERROR),
    (b"\xff\xfe\x00 not utf-8\n", PARSE_ERROR),
    (b"[" * 100_000 + b"\n", PARSE_ERROR),  # nesting deep enough to break a recursive parser
    (b"42\n", INVALID_REQUEST),
    (b'"index:status"\n', INVALID_REQUEST),
    (b"null\n", INVALID_REQUEST),
    (b"[]\n", INVALID_REQUEST),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "index:status"}]\n', INVALID_REQUEST),  # batches are refused
    (b'{"jsonrpc": "2.0", "id": {"no": 1}, "method": "index:status"}\n', INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": NaN, "method": "index:status"}\n', PARSE_ERROR),  # not JSON, though Python reads it
    (b'{"jsonrpc": "2.0", "id": 1e999, "method": "index:status"}\n', INVALID_REQUEST),  # an id JSON cannot echo
    (b'{"jsonrpc": "2.0", "id": true, "method": "index:status"}\n', INVALID_REQUEST),
])
def test_protocol_faults_get_an_error_with_a_null_id(shared: Sidecar, raw: bytes, code: int) -> None:
    reply = _error(shared, raw)
    assert reply["id"] is None and reply["error"]["code"] == code
    assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
    assert shared.ok("index:status")["counts"]["memories"] > 0  # and it keeps serving


@pytest.mark.parametrize("request_, code", [
    ({"jsonrpc": "2.0", "id": 7}, INVALID_REQUEST),  # no method
    ({"jsonrpc": "2.0", "id": 7, "method": 12}, INVALID_REQUEST),
    ({"id": 7, "method": "index:status"}, INVALID_REQUEST),  # no jsonrpc
    ({"jsonrpc": "1.0", "id": 7, "method": "index:status"}, INVALID_REQUEST),
    ({"jsonrpc": "2.0", "id": 7, "method": "memory:explode"}, METHOD_NOT_FOUND),
    ({"jsonrpc": "2.0", "id": 7, "method": ""}, METHOD_NOT_FOUND),
])
def test_bad_requests_get_an_error_with_their_id(shared: Sidecar, request_: dict[str, Any], code: int) -> None:
    reply = _error(shared, json.dumps(request_).encode() + b"\n")
    assert reply["id"] == 7 and reply["error"]["code"] == code
    assert shared.ok("index:status")


@pytest.mark.parametrize("params, field", [
    ([1, 2], "params"),
    ("index", "params"),
    ({"type": "note", "scope": "project"}, "content"),
    ({"type": "note", "scope": "project", "content": 5}, "content"),
    ({"type": "note", "scope": "world", "content": "x"}, "scope"),
    ({"type": "note", "scope": "project", "content": "x", "tags": "style"}, "tags"),
    ({"type": "note", "scope": "project", "content": "x", "colour": "red"}, "colour"),
])
def test_params_of_the_wrong_shape_are_an_envelope_naming_the_field(shared: Sidecar, params: Any, field: str) -> None:
    envelope = shared.call("memory:create", params)
    assert envelope["ok"] is False
    assert envelope["error"]["code"] == "INVALID_ARGUMENT" and envelope["error"]["details"]["field"] == field


def test_a_ten_megabyte_line_is_refused_and_the_next_one_served(shared: Sidecar) -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "memory:create",
                      "params": {"type": "note", "scope": "project", "content": "x" * 10_000_000}}).encode()
    reply = _error(shared, big + b"\n")
    assert reply["id"] == 1 and reply["error"]["code"] == INVALID_REQUEST  # the id, read from the line's head
    assert shared.ok("index:status")["counts"]["memories"] > 0
    _error(shared, b"y" * 10_000_000 + b"\n")  # not JSON either: still one error, still serving
    assert shared.ok("index:status")
    # and a line just under the limit is read whole: valid JSON, so it is served (its field is refused)
    near = json.dumps({"jsonrpc": "2.0", "id": "near", "method": "memory:get",
                       "params": {"id": "m-x", "pad": "z" * 3_000_000}}).encode()
    shared.send_raw(near + b"\n")
    assert shared.reply("near")["result"]["error"]["details"]["field"] == "pad"


@pytest.mark.parametrize("head, id_", [
    (b'{"jsonrpc": "2.0", "id": 42, "method": "memory:create", "params": {"content": "', 42),
    (b'{"id": "call-7", "jsonrpc": "2.0", "method": "memory:create", "params": {"content": "', "call-7"),
    (b'{"jsonrpc": "2.0", "method": "memory:update", "params": {"id": "m-1", "patch": {"content": "', None),
    (b'{"jsonrpc": "2.0", "method": "memory:create", "params": {"content": "', None),  # the id is past the head
])
def test_an_oversized_line_is_answered_with_its_own_id_when_its_head_shows_it(shared: Sidecar, head: bytes,
                                                                             id_: Any) -> None:
    line = head + b"x" * 5_000_000 + b'"}, "id": 99}\n'
    reply = _error(shared, line)
    assert reply["id"] == id_ and reply["error"]["code"] == INVALID_REQUEST  # never another request's id (m-1)
    assert shared.ok("index:status")


def test_a_line_that_is_not_json_is_answered_with_its_id_when_it_can_be_read(shared: Sidecar) -> None:
    reply = _error(shared, b'{"jsonrpc": "2.0", "id": 5, "method": "memory:get", "params": {"id": NaN}}\n')
    assert reply["id"] == 5 and reply["error"]["code"] == PARSE_ERROR


def test_ids_are_echoed_and_notifications_get_no_reply(sidecar: Sidecar) -> None:
    for id_ in ("abc", 0, -3, 2.5, None, "", "9"):
        reply = sidecar.reply(sidecar.send("memory:settings:get", id_=id_))
        assert reply["result"]["ok"] and reply["id"] == id_ and type(reply["id"]) is type(id_)
    before = len(sidecar.replies())
    sidecar.send("memory:create", {"type": "note", "scope": "project", "content": "Sent as a notification."},
                 notification=True)
    sidecar.send("no:such:method", notification=True)
    sidecar.send("memory:create", {"type": 3}, notification=True)
    sidecar.ok("index:sync")  # the same project's write lane: runs after the notification's create
    assert len(sidecar.replies()) == before + 1  # only index:sync answered
    contents = [m["content"] for m in sidecar.ok("memory:list")["items"]]
    assert "Sent as a notification." in contents


def test_empty_lines_and_crlf_are_tolerated(sidecar: Sidecar) -> None:
    sidecar.send_raw(b"\n   \n")
    sidecar.send_raw(b'{"jsonrpc":"2.0","id":"crlf","method":"index:status"}\r\n')
    assert sidecar.reply("crlf")["result"]["ok"]
    assert not sidecar.replies()[:-1]  # blank lines got no reply


# -- concurrency --------------------------------------------------------------------------------


def test_writes_to_one_project_keep_their_order(sidecar: Sidecar) -> None:
    memory = sidecar.ok("memory:create", {"type": "note", "scope": "project", "content": "revision one"})
    ids = [sidecar.send("memory:update", {"id": memory["id"], "expectedRevision": revision,
                                          "patch": {"content": f"revision {revision + 1}"}})
           for revision in range(1, 11)]  # pipelined: each only succeeds if the one before ran first
    creates = [sidecar.send("memory:create", {"type": "note", "scope": "project", "content": f"burst {i}"})
               for i in range(20)]
    for i, id_ in enumerate(ids):
        envelope = sidecar.reply(id_)["result"]
        assert envelope["ok"], envelope
        assert envelope["data"]["revision"] == i + 2
    made = {sidecar.reply(id_)["result"]["data"]["id"] for id_ in creates}
    assert len(made) == 20
    listed = {m["id"] for m in sidecar.ok("memory:list")["items"]}
    assert made <= listed
    assert sidecar.ok("memory:get", {"id": memory["id"]})["content"] == "revision 11"


def test_replies_come_as_calls_finish(sidecar: Sidecar) -> None:
    ids = [sidecar.send(method) for method in ("index:sync", "index:status", "memory:list", "index:diagnostics",
                                               "memory:injection:preview")]
    for id_ in ids:
        assert sidecar.reply(id_)["result"]["ok"]
    assert sorted(m["id"] for m in sidecar.replies()) == sorted(ids)


# -- the watcher ----------------------------------------------------------------------------------


def test_a_chapter_saved_on_disk_is_announced(sidecar: Sidecar, sample: Path) -> None:
    chapter = sample / "chapters" / "ch01.md"
    assert sidecar.ok("manuscript:status")["items"][0]["source"] == "chapters/ch01.md"
    prepared = sidecar.ok("capture:prepare", {"documentId": "chapters/ch01.md"})
    text = chapter.read_text("utf-8")
    quote = next(line.strip()[:20] for line in text.splitlines() if line.strip() and not line.startswith("#"))
    sidecar.ok("capture:propose", {"documentId": "chapters/ch01.md", "chapterHash": prepared["chapterHash"],
                                   "ops": [{"op": "fact", "content": "The gulls left.", "evidence": quote}]})
    tmp = chapter.with_name("ch01.md.tmp")
    tmp.write_text(text + "\n\nThe gulls came back at dawn.\n", "utf-8")
    os.replace(tmp, chapter)
    note = sidecar.wait_for(lambda: sidecar.notifications("chapter:changed"), "chapter:changed")[0]
    capture = note["params"].pop("capture")
    assert note["params"] == {"projectId": sidecar.ok("index:status")["projectId"], "documentId": "chapters/ch01.md"}
    assert (capture["state"], capture["stale"]) == ("stale", 1)  # its pending op was proposed on the old text
    assert not [n for n in sidecar.notifications("index:changed") if "chapters/ch01.md" in n["params"]["sources"]]
    found = sidecar.ok("manuscript:search", {"queryText": "gulls at dawn"})["items"]
    assert found[0]["source"] == "chapters/ch01.md"


def test_a_file_edited_on_disk_is_announced_and_visible(sidecar: Sidecar, sample: Path) -> None:
    memory = sidecar.ok("memory:create", {"type": "preference", "scope": "project",
                                          "content": "Dialogue carries the scene."})
    path = sample / memory["source"]
    text = path.read_text("utf-8").replace("Dialogue carries the scene.", "Silence carries the scene.")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)  # the way editors save
    note = sidecar.wait_for(lambda: [n for n in sidecar.notifications("index:changed")
                                     if memory["source"] in n["params"]["sources"]], "index:changed")[0]
    assert note["params"]["projectId"] == sidecar.ok("index:status")["projectId"]
    assert "id" not in note
    _check_notification(note)
    preview = sidecar.ok("memory:injection:preview")
    assert [i["content"] for i in preview["items"] if i["id"] == memory["id"]] == ["Silence carries the scene."]


def test_a_broken_edit_is_announced_with_its_diagnostic(sidecar: Sidecar, sample: Path) -> None:
    path = sample / ".writenow/characters/su-yao.md"
    source = ".writenow/characters/su-yao.md"
    good = path.read_text("utf-8")
    assert sidecar.ok("index:status")["watch"]["running"]  # the project is open and watched
    path.write_text(good.replace("state: Lodging", "state: 住在: Lodging"), "utf-8")
    note = sidecar.wait_for(lambda: [n for n in sidecar.notifications("index:changed")
                                     if source in n["params"]["sources"]], "index:changed")[-1]
    _check_notification(note)
    broken = [d for d in note["params"]["diagnostics"] if d["source"] == source]
    assert broken and broken[0]["severity"] == "error" and broken[0]["line"] == 9
    assert broken[0] in sidecar.ok("index:diagnostics")["items"]  # the message doctor gives
    path.write_text(good, "utf-8")
    fixed = sidecar.wait_for(lambda: [n for n in sidecar.notifications("index:changed")
                                      if broken[0] in n["params"]["fixed"]], "the fix announced")[-1]
    _check_notification(fixed)
    assert fixed["params"]["diagnostics"] == []


def _check_notification(note: dict[str, Any]) -> None:
    doc = json.loads((SCHEMAS / "index.changed.json").read_text("utf-8"))
    assert not schema.check({"method": note["method"], "params": note["params"]}, doc)


def test_no_watch_means_no_notifications(sample: Path, home: Path) -> None:
    server = Sidecar("--project", str(sample), "--no-watch", home=home)
    try:
        assert server.ok("index:status")["watch"] is None
        assert server.close() == 0
    finally:
        server.kill()


# -- stopping -----------------------------------------------------------------------------------


def test_closed_stdin_exits_cleanly_after_replying(sample: Path, home: Path) -> None:
    server = Sidecar("--project", str(sample), home=home)
    try:
        ids = [server.send("memory:create", {"type": "note", "scope": "project", "content": f"last words {i}"})
               for i in range(5)]
        ids.append(server.send("index:status"))
        assert server.close() == 0  # stdin closed at once: every accepted call still answered
        for id_ in ids:
            assert server.reply(id_, timeout=0)["result"]["ok"]
        assert not server.bad_lines
        notes = sorted((sample / ".writenow" / "memories" / "note").glob("last-words-*.md"))
        assert len(notes) == 5
    finally:
        server.kill()


def test_sigterm_finishes_in_flight_writes_and_exits_zero(tmp_path: Path, home: Path) -> None:
    project = _generate(tmp_path / "big", 1500)
    # the wait for calls in flight is made long: the test is about finishing them, not about how fast
    server = Sidecar("--project", str(project), "--log-level", "debug", home=home, env={"MEMBANK_STOP_WAIT": "600"})
    try:
        server.ok("index:status")
        create = server.send("memory:create", {"type": "note", "scope": "project", "content": "Written before TERM."})
        sync = server.send("index:sync", {"rebuild": True})
        server.wait_for(lambda: any("start index:sync" in line for line in server.stderr), "the sync to start")
        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(DEADLINE) == 0
        server.close()
        assert server.reply(create, timeout=0)["result"]["ok"]
        assert server.reply(sync, timeout=0)["result"]["data"]["added"] == 1501
        assert (project / ".writenow" / "memories" / "note" / "written-before-term.md").exists()
        assert not server.bad_lines
    finally:
        server.kill()


def test_sigterm_when_idle_exits_zero(sidecar: Sidecar) -> None:
    sidecar.ok("index:status")
    sidecar.proc.send_signal(signal.SIGTERM)
    assert sidecar.proc.wait(DEADLINE) == 0


def test_logs_go_to_stderr_only(sample: Path, home: Path) -> None:
    server = Sidecar("--project", str(sample), "--log-level", "debug", home=home)
    try:
        server.ok("index:status")
        server.call("memory:get", {"id": "nope"})
        assert server.close() == 0
        assert server.stderr, "expected some logging on stderr"
        assert not server.bad_lines
        assert all("jsonrpc" in m for m in server.messages)
    finally:
        server.kill()
