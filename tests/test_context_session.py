"""Working memory reaches the prompt (issue 31.2; context.md, Working memory; seed 003 MS1-R1-S1): with the
app's `sessionId` and a skill's `working: N`, the session's entries go into Layer 5 as the "this session"
block, most important first within N tokens, never into the systemPrompt; through Python, the sidecar and
the MCP tools alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from membank import Bank
from membank.domains.working.decide import Held, immediate
from membank.runtime.registry import Registry
from membank.shells import mcptools

from .sidecar import Sidecar

CH05 = "chapters/ch05.md"
SELECTION = "He drew. Steel rang."
RULES = "  surrounding: 400\n  characters: true\n  preferences: true\n  episodes: 3\n  working: {n}\n"


def _skill(root: Path, n: int = 400, skill_id: str = "continue-action") -> None:
    (root / ".writenow" / "skills" / f"{skill_id}.md").write_text(
        f"---\nid: {skill_id}\nname: Continue an action scene\ncontext_rules:\n{RULES.format(n=n)}---\n"
        "Continue the fight in the author's voice.\n", "utf-8")


def _ok(bank: Bank, channel: str, **payload: Any) -> Any:
    envelope = bank.call(channel, payload)
    assert envelope["ok"], envelope
    return envelope["data"]


def _assemble(bank: Bank, **payload: Any) -> dict[str, Any]:
    return _ok(bank, "context:assemble", **{"skillId": "continue-action", "documentId": CH05,
                                            "selection": {"text": SELECTION}, "instruction": "Continue the fight",
                                            **payload})


def _session(block: str) -> str:
    return block.split("### This session\n\n", 1)[1].split("\n\n### ", 1)[0]


def _working(bank: Bank, session: str = "win-1") -> None:
    for kind, content, importance in (("note", "Tam is still on the rocks, hidden", 0.3),
                                      ("selection", "Maren runs down the cliff path", 0.9),
                                      ("signal", "shorter sentences in fights", 0.6)):
        _ok(bank, "memory:working:add", sessionId=session, kind=kind, content=content, importance=importance,
            focus="the fight in the cove")


def test_immediate_takes_the_most_important_first_within_the_budget() -> None:
    held = [Held("a", 10, 0.3, 1), Held("b", 30, 0.9, 2), Held("c", 10, 0.6, 3), Held("d", 10, 0.6, 4)]
    assert [h.id for h in immediate(held, 100)] == ["b", "d", "c", "a"]  # equal importance: the latest first
    assert [h.id for h in immediate(held, 25)] == ["d", "c"]  # b is too large for it: smaller ones still fit
    assert immediate(held, 0) == [] and immediate([], 10) == []


def test_the_seed_scenario_a_continued_action_scene(bank: Bank, sample: Path) -> None:  # MS1-R1-S1
    """Immediate (this session's working memory), episodes by project and scene, and the rules Layer 3
    holds for Settings (present even when empty), in one prompt."""
    _skill(sample)
    bank.sync()
    for scene, summary in (("dialogue", "a quiet talk at the lamp"), ("action", "the pier chase, short lines")):
        _ok(bank, "memory:episode:record", chapterId=CH05, sceneType=scene, skillUsed="continue-action",
            action="accept", summary=summary, wait=True)
    _working(bank)
    plain = _assemble(bank, sceneType="action")
    d = _assemble(bank, sceneType="action", sessionId="win-1")

    session = _session(d["blocks"][5]["text"])  # Immediate: before the instruction, most important first
    assert session.split("\n\n") == ["- [selection] Maren runs down the cliff path",
                                    "- [signal] shorter sentences in fights", "- [note] Tam is still on the rocks, hidden"]
    assert d["blocks"][5]["text"].index("### This session") < d["blocks"][5]["text"].index("### Instruction")
    working = [i for i in d["items"] if i["kind"] == "working"]
    assert [i["layer"] for i in working] == [5, 5, 5] and {i["source"] for i in working} == {"session:win-1"}
    assert working[0]["reason"] == {"kind": "selection", "importance": 0.9, "count": 1}
    assert "Maren runs down" not in d["systemPrompt"] and d["stablePrefixHash"] == plain["stablePrefixHash"]
    assert _session(plain["blocks"][5]["text"]) == "(none)"

    episodes = [i for i in d["items"] if i["kind"] == "episode"]  # by project and scene: the action one first
    assert len(episodes) == 2 and "the pier chase" in d["blocks"][4]["text"]
    assert d["blocks"][4]["text"].index("the pier chase") < d["blocks"][4]["text"].index("a quiet talk")

    rules = d["blocks"][3]  # Settings-consumable: Layer 3, the author's standing rules (may be empty)
    assert rules["name"] == "preferences" and "### The author's preferences" in rules["text"]
    assert rules["text"] in d["systemPrompt"]

    [run] = [json.loads(line) for f in sorted((sample / ".writenow" / "journal").glob("**/*.jsonl"))
             for line in f.read_text("utf-8").splitlines() if f'"runId": "{d["runId"]}"' in line
             or f'"runId":"{d["runId"]}"' in line]
    assert {p["id"] for p in run["pieces"] if p["layer"] == 5} == {i["id"] for i in working}
    assert "Maren runs down" not in json.dumps(run)  # ids only in the trace, never the text


def test_the_working_budget_and_an_unknown_or_absent_session(bank: Bank, sample: Path) -> None:
    _skill(sample, n=12)
    bank.sync()
    _working(bank)
    d = _assemble(bank, sessionId="win-1")
    assert _session(d["blocks"][5]["text"]).split("\n\n") == ["- [selection] Maren runs down the cliff path"]
    unknown = _assemble(bank, sessionId="nobody")
    assert "SESSION_UNKNOWN" in {r["code"] for r in unknown["diagnostics"]["reasons"]}
    assert _session(unknown["blocks"][5]["text"]) == "(none)"
    absent = _assemble(bank)  # no sessionId: nothing asked, nothing said
    assert "SESSION_UNKNOWN" not in {r["code"] for r in absent["diagnostics"]["reasons"]}
    other = _ok(bank, "context:assemble", skillId="continue", documentId=CH05, selection={"text": SELECTION},
                sessionId="win-1")  # a skill without `working` gets no working memory
    assert not [i for i in other["items"] if i["kind"] == "working"]
    _ok(bank, "memory:session:end", sessionId="win-1")
    assert "SESSION_UNKNOWN" in {r["code"] for r in _assemble(bank, sessionId="win-1")["diagnostics"]["reasons"]}


def test_a_tight_budget_drops_the_session_least_important_first_after_the_text(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "skills" / "tight.md").write_text(
        "---\nid: tight\nname: tight\ncontext_rules:\n  characters: true\n  preferences: false\n  working: 400\n"
        "  max_tokens: 100\n---\nGo.\n", "utf-8")
    _skill(sample)
    bank.sync()
    _working(bank)
    for label, importance in (("A", 0.1), ("B", 0.2)):  # two large, unimportant entries: over the budget
        _ok(bank, "memory:working:add", sessionId="win-1", kind="note", content=f"{label} " + "spray " * 40,
            importance=importance)
    d = _ok(bank, "context:assemble", skillId="tight", documentId=CH05, selection={"text": SELECTION},
            sessionId="win-1")
    dropped = [x["id"] for x in d["diagnostics"]["dropped"] if x["kind"] == "working"]
    kept = [i["id"] for i in d["items"] if i["kind"] == "working"]
    everything = [i["id"] for i in _assemble(bank, sessionId="win-1")["items"] if i["kind"] == "working"]
    assert dropped and dropped == everything[::-1][:len(dropped)] and kept == everything[:len(kept)]


def test_injection_disabled_empties_the_session_block(bank: Bank, sample: Path) -> None:
    _skill(sample)
    bank.sync()
    _working(bank)
    _ok(bank, "memory:settings:update", patch={"injectionEnabled": False})
    d = _assemble(bank, sessionId="win-1")
    assert _session(d["blocks"][5]["text"]) == "(none)"
    assert "INJECTION_DISABLED" in {r["code"] for r in d["diagnostics"]["reasons"]}


def test_a_bad_working_rule_refuses_the_skill(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "skills" / "bad.md").write_text(
        "---\nid: bad\nname: bad\ncontext_rules:\n  working: 9000\n---\nGo.\n", "utf-8")
    bank.sync()
    envelope = bank.call("context:assemble", {"skillId": "bad"})
    assert not envelope["ok"] and envelope["error"]["details"]["field"] == "context_rules.working"


def test_the_sidecar_passes_the_session_through(sample: Path, home: Path) -> None:
    _skill(sample)
    server = Sidecar("--project", str(sample), "--no-watch", home=home)
    try:
        assert server.call("memory:working:add", {"sessionId": "app-1", "kind": "selection", "importance": 0.8,
                                                  "content": "林默 draws 听潮"})["ok"]
        reply = server.call("context:assemble", {"skillId": "continue-action", "documentId": CH05,
                                                 "selection": {"text": SELECTION}, "sessionId": "app-1"})
        assert reply["ok"], reply
        assert _session(reply["data"]["blocks"][5]["text"]) == "- [selection] 林默 draws 听潮"
        assert "林默 draws" not in reply["data"]["systemPrompt"]
        assert not server.bad_lines
    finally:
        server.kill()


def test_the_mcp_tools_hold_a_session_and_pass_it_through(sample: Path) -> None:
    _skill(sample)
    registry = Registry()
    try:
        assert registry.open(str(sample)) is not None
        add = mcptools.BY_NAME["working_add"]
        error, _, data = mcptools.result(mcptools.call(registry, add, {"sessionId": "mcp-1", "kind": "note",
                                                                       "content": "the cove at night", "importance": 0.5}))
        assert not error and data["entry"]["sessionId"] == "mcp-1"
        assert "sessionId" in mcptools.input_schema(mcptools.BY_NAME["context_assemble"])["properties"]
        error, _, data = mcptools.result(mcptools.call(registry, mcptools.BY_NAME["context_assemble"], {
            "skillId": "continue-action", "documentId": CH05, "sessionId": "mcp-1"}))
        assert not error and _session(data["blocks"][5]["text"]) == "- [note] the cove at night"
        error, _, data = mcptools.result(mcptools.call(registry, mcptools.BY_NAME["session_end"], {"sessionId": "mcp-1"}))
        assert not error and data["ended"] and data["dropped"] == 1
    finally:
        registry.close()


def test_an_unreadable_index_still_gets_the_session(bank: Bank, sample: Path) -> None:  # MS1-R3-S2 with MS1-R1-S1
    _skill(sample)
    bank.sync()
    _working(bank)
    for f in (sample / ".writenow/.index").glob("index.db*"):
        f.write_bytes(b"not a database " * 100)
    d = _assemble(bank, sessionId="win-1")
    assert d["diagnostics"]["memoryDegraded"] is True
    assert _session(d["blocks"][5]["text"]).split("\n\n")[0] == "- [selection] Maren runs down the cliff path"
