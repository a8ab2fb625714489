"""context:assemble on the sample project: layers, the stable prefix, rules, story position, budgets."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import membank
from membank import Bank
from membank.kernel import clock
from membank.kernel.limits import MAX_LISTED

CH05 = "chapters/ch05.md"
SELECTION = "He drew. Steel rang."


def _assemble(bank: Bank, **payload: Any) -> dict[str, Any]:
    envelope = bank.call("context:assemble", {"skillId": "continue", **payload})
    assert envelope["ok"], envelope
    return envelope["data"]


def _skill(root: Path, skill_id: str, rules: str, body: str = "Do the thing.") -> None:
    (root / ".writenow" / "skills" / f"{skill_id}.md").write_text(
        f"---\nid: {skill_id}\nname: {skill_id}\ncontext_rules:\n{rules}\n---\n{body}\n", "utf-8")


def test_six_layers_in_two_parts_every_piece_cited(bank: Bank) -> None:
    d = _assemble(bank, documentId=CH05, selection={"text": SELECTION}, instruction="Continue the fight")
    assert [b["name"] for b in d["blocks"]] == ["identity", "skill", "project", "preferences", "retrieved", "immediate"]
    assert d["systemPrompt"] == "".join(b["text"] for b in d["blocks"][:4])
    assert d["userContent"] == "".join(b["text"] for b in d["blocks"][4:])
    assert d["stablePrefixHash"].startswith("sha256:") and len(d["stablePrefixHash"]) == 71
    assert d["cacheBreakpoints"] == [1, 2, 3] and d["diagnostics"]["prefixTokens"] > 500
    kinds = {(i["kind"], i["id"]) for i in d["items"]}
    assert ("card", "characters/lin-mo") in kinds  # mentioned in the text around the selection
    assert ("card", "characters/maren-voss") in kinds and ("state", "characters/maren-voss") in kinds
    for item in d["items"]:
        assert item["source"] is None or not os.path.isabs(item["source"])
    assert "Layer" not in d["systemPrompt"] and str(bank.root) not in d["systemPrompt"] + d["userContent"]


def test_the_prefix_has_no_state_the_retrieved_layer_has_it_cited(bank: Bank) -> None:
    d = _assemble(bank, documentId=CH05, selection={"text": SELECTION})
    # Maren is include: always — her body is in Layer 2, her state at ch05 only in Layer 4, cited with its line
    assert "Hiding Lin Mo" not in d["systemPrompt"]
    assert "State at chapters/ch05.md#1: Hiding Lin Mo's whereabouts" in d["userContent"]
    assert "(.writenow/characters/maren-voss.md:8)" in d["userContent"]


def test_surrounding_only_skill_gets_no_card_or_memory_content(bank: Bank, sample: Path) -> None:
    _skill(sample, "bare", "  surrounding: 500\n  preferences: false")
    bank.sync()
    d = _assemble(bank, skillId="bare", documentId=CH05, selection={"text": SELECTION})
    assert {i["kind"] for i in d["items"]} <= {"identity", "skill", "project", "before", "selection", "after"}
    assert "Source: .writenow/" not in d["systemPrompt"] + d["userContent"]
    assert d["blocks"][4]["text"].count("(none)") == 9  # every Layer 4 section masked, never removed
    full = _assemble(bank, documentId=CH05, selection={"text": SELECTION})
    skeleton = [line for line in d["systemPrompt"].splitlines() if line.startswith("#")]
    assert skeleton[:2] == ["## Identity", "## Skill"]
    assert [s for s in skeleton if s.startswith(("## ", "### "))] == \
        [s for s in full["systemPrompt"].splitlines() if s.startswith(("## ", "### "))]


@pytest.mark.parametrize("rules, kinds, absent", [
    ("  characters: true\n  preferences: false", {"card"}, {"memory", "preference"}),
    ("  project-settings: true\n  preferences: false", {"card"}, {"preference"}),
    ("  memories: 2\n  preferences: false", {"memory"}, {"card", "preference"}),
    ("  preferences: true", {"preference"}, {"card", "memory"}),
])
def test_each_rule_asks_for_its_material(bank: Bank, sample: Path, rules: str, kinds: set[str],
                                         absent: set[str]) -> None:
    _skill(sample, "probe", rules)
    bank.sync()
    d = _assemble(bank, skillId="probe", documentId=CH05, selection={"text": SELECTION}, queryText="Lin Mo wounded")
    found = {i["kind"] for i in d["items"]}
    assert kinds <= found and not (absent & found)
    sections = {i["source"].split("/")[1] for i in d["items"] if i["kind"] == "card"}
    if "characters" in rules:
        assert sections == {"characters"}
    if "project-settings" in rules:
        assert sections == {"world"}
    if "memories: 2" in rules:
        assert sum(i["kind"] == "memory" and i["layer"] == 4 and "score" in i for i in d["items"]) <= 2


BAD_RULES = [
    ("surrounding", "-1"), ("surrounding", "20001"), ("surrounding", "lots"), ("characters", "yes"), ("characters", "on"),
    ("characters", "1"), ("project-settings", "maybe"), ("preferences", "0"), ("memories", "51"),
    ("memories", "true"), ("episodes", "6"), ("history", "\"no\""), ("max_tokens", "99"), ("max_tokens", "200001"),
    ("wordcount", "5"),
]


@pytest.mark.parametrize("key, value", BAD_RULES)
def test_a_bad_rule_is_a_diagnostic_and_refuses_the_skill(bank: Bank, sample: Path, key: str, value: str) -> None:
    other = "  history: false" if key != "history" else "  memories: 1"
    _skill(sample, "broken", f"{other}\n  {key}: {value}")
    bank.sync()
    diag = [d for d in bank.diagnostics()["items"] if d["source"] == ".writenow/skills/broken.md"]
    assert len(diag) == 1 and diag[0]["severity"] == "error" and diag[0]["line"] == 6
    assert f"context_rules.{key}" in diag[0]["message"]
    envelope = bank.call("context:assemble", {"skillId": "broken"})
    assert envelope["ok"] is False and envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"] == {"field": f"context_rules.{key}", "source": ".writenow/skills/broken.md"}
    assert str(sample) not in envelope["error"]["message"]
    listed = {s["id"]: s for s in bank.list_skills()["items"]}
    assert listed["broken"]["valid"] is False and listed["continue"]["valid"] is True


def test_skills_ship_and_global_ones_are_overridden(bank: Bank, sample: Path, home: Path) -> None:
    ids = [s["id"] for s in bank.list_skills()["items"]]
    assert ids == ["consistency-check", "continue", "polish", "rewrite", "summarize"]
    (home / "skills" / "continue.md").write_text("---\nname: Global continue\n---\nGlobal text.\n", "utf-8")
    (home / "skills" / "outline.md").write_text("---\nname: Outline\ncontext_rules: {memories: 3}\n---\nOutline.\n",
                                                "utf-8")
    (home / "identity.md").write_text("You serve one author.\n", "utf-8")
    bank.sync()
    skills = {s["id"]: s for s in bank.list_skills()["items"]}
    assert skills["continue"]["bank"] == "project" and skills["outline"]["source"] == "global:skills/outline.md"
    assert bank.get_skill("outline")["rules"]["memories"] == 3
    d = _assemble(bank, skillId="outline")
    assert d["blocks"][0]["text"] == "## Identity\n\nYou serve one author.\n\n"
    assert d["items"][0]["source"] == "global:identity.md"
    assert bank.call("skill:get", {"skillId": "nope"})["error"]["code"] == "NOT_FOUND"


def _prefix(bank: Bank, **payload: Any) -> str:
    return _assemble(bank, **payload)["systemPrompt"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=st.integers(0, 600), length=st.integers(0, 40), instruction=st.text(max_size=40),
       query=st.one_of(st.none(), st.text(max_size=30)), document=st.sampled_from([None, CH05, "chapters/ch01.md"]),
       run=st.one_of(st.none(), st.from_regex(r"r-[a-z0-9]{6}", fullmatch=True)),
       moment=st.integers(0, 2_000_000_000))
def test_nothing_of_the_moment_reaches_the_prefix(bank: Bank, start: int, length: int, instruction: str,
                                                  query: str | None, document: str | None, run: str | None,
                                                  moment: int) -> None:
    baseline = bank.memo.setdefault("test.baseline", _prefix(bank))
    text = (bank.root / CH05).read_text("utf-8")
    payload: dict[str, Any] = {"documentText": text, "selection": {"start": min(start, len(text)),
                                                                   "end": min(start + length, len(text))},
                               "instruction": instruction}
    for key, value in (("documentId", document), ("queryText", query), ("runId", run)):
        if value is not None:
            payload[key] = value
    then = dt.datetime(2001, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=moment)
    with clock.use(lambda: then):
        assert _prefix(bank, **payload) == baseline


def test_file_order_mtimes_and_crlf_do_not_move_the_hash(tmp_path: Path, sample: Path, bank: Bank) -> None:
    before = _assemble(bank, documentId=CH05)["stablePrefixHash"]
    bank.close()
    for path in sorted((sample / ".writenow").rglob("*.md")):
        data = path.read_bytes()
        path.write_bytes(data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
        os.utime(path, (1_000_000, 1_000_000 + hash(path.name) % 1000))
    reopened = membank.open(sample)
    try:
        reopened.sync(rebuild=True)
        assert _assemble(reopened, documentId=CH05)["stablePrefixHash"] == before
    finally:
        reopened.close()


def test_a_new_preference_lands_at_the_end_of_the_prefix(bank: Bank) -> None:
    before = _prefix(bank)
    bank.create_memory(type_="preference", scope="project", content="Never name the sea god.")
    after = _prefix(bank)
    head = before[:before.index("\n\n## Preferences")]
    assert after.startswith(head) and "Never name the sea god." in after
    layer3 = after[after.index("## Preferences"):]
    assert layer3.rstrip().endswith("Never name the sea god.\n  (.writenow/memories/preference/never-name-the-sea-god.md)")


def test_injection_disabled_masks_memories_but_keeps_cards(bank: Bank) -> None:
    bank.update_settings({"injectionEnabled": False})
    d = _assemble(bank, documentId=CH05, selection={"text": SELECTION})
    kinds = {i["kind"] for i in d["items"]}
    assert "card" in kinds and not {"preference", "memory"} & kinds
    assert "INJECTION_DISABLED" in [r["code"] for r in d["diagnostics"]["reasons"]]
    assert "## Preferences\n\n### The author's preferences\n\n(none)\n\n" in d["systemPrompt"]


def test_no_document_means_only_timeless_material(bank: Bank) -> None:
    d = _assemble(bank, selection={"text": "Lin Mo"})
    assert d["diagnostics"]["reasons"][0]["code"] == "STORY_POSITION_UNKNOWN"
    assert "State at" not in d["userContent"] and "第五章受伤" not in d["userContent"]
    assert d["diagnostics"]["hiddenDetail"]["progressions"] > 0


def test_each_run_is_journaled_without_manuscript_text(bank: Bank, sample: Path) -> None:
    d = _assemble(bank, documentId=CH05, selection={"text": SELECTION}, runId="r-trace01")
    lines = [json.loads(line) for f in (sample / ".writenow" / "journal").rglob("*.jsonl")
             for line in f.read_text("utf-8").splitlines()]
    run = [e for e in lines if e["event"] == "run"]
    assert len(run) == 1 and run[0]["runId"] == "r-trace01" and run[0]["stablePrefixHash"] == d["stablePrefixHash"]
    assert {p["layer"] for p in run[0]["pieces"]} == {0, 1, 2, 3, 4}
    assert "Steel rang" not in json.dumps(run[0], ensure_ascii=False)
    assert _assemble(bank)["runId"].startswith("r-")


def test_nothing_from_later_in_the_story(bank: Bank, sample: Path) -> None:
    """A progression and a fact from chapter 9 never reach an assembly or a preview in chapter 3."""
    wb = sample / ".writenow"
    project = (wb / "project.yaml").read_text("utf-8")
    (wb / "project.yaml").write_text(project + "chapters: [chapters/ch01.md, chapters/ch03.md, chapters/ch05.md, "
                                     "chapters/ch09.md]\n", "utf-8")
    card = (wb / "characters" / "lin-mo.md").read_text("utf-8")
    ch05 = "  - {at: chapters/ch05.md, state: 受伤, set: {location: 北方森林, wounded: true}}"
    assert ch05 in card
    card = card.replace(ch05, ch05 + "\n  - {at: chapters/ch09.md, state: 被背叛, set: {alive: false, knows: [王叔是叛徒]}}")
    (wb / "characters" / "lin-mo.md").write_text(card, "utf-8")
    (wb / "memories" / "facts" / "traitor.md").write_text(
        "---\ntype: fact\nsince: chapters/ch09.md\n---\nLin Mo learns that Uncle Wang is the traitor.\n", "utf-8")
    bank.sync()
    later = ("被背叛", "王叔是叛徒", "Uncle Wang", "traitor.md")
    text = "Lin Mo stood at the lamp with Maren. 林默 said nothing about the traitor."
    for skill in ("continue", "consistency-check", "rewrite"):
        d = _assemble(bank, skillId=skill, documentId="chapters/ch03.md", documentText=text,
                      selection={"text": "Lin Mo stood"}, queryText="who is the traitor Uncle Wang")
        whole = json.dumps(d, ensure_ascii=False)
        assert not any(word in whole for word in later), skill
        assert d["diagnostics"]["hiddenDetail"]["progressions"] >= 1 and d["diagnostics"]["hiddenDetail"]["memories"] >= 1
        assert "在灯塔里养好体力" in d["userContent"]  # the state at chapter 3 is there
    preview = bank.preview(query_text="Uncle Wang traitor", document_id="chapters/ch03.md")
    assert not any(word in json.dumps(preview, ensure_ascii=False) for word in later)
    assert "traitor.md" in json.dumps(bank.preview(query_text="Uncle Wang traitor", document_id="chapters/ch09.md"))
    at9 = _assemble(bank, skillId="consistency-check", documentId="chapters/ch09.md", documentText=text,
                    selection={"text": "Lin Mo stood"}, queryText="Uncle Wang traitor")
    assert "被背叛" in at9["userContent"] and "Uncle Wang" in at9["userContent"]


def test_regex_keys_exclude_keys_and_secondary_logic_activate_cards(bank: Bank, sample: Path) -> None:
    world = sample / ".writenow" / "world"
    (world / "storm.md").write_text("---\nname: The Great Storm\nkind: lore\nkeys: ['/gale[s]?\\b/i']\n"
                                    "exclude_keys: [calm]\n---\nThe storm of '88.\n", "utf-8")
    (world / "wreck.md").write_text("---\nname: Wreck of the Alma\nkind: lore\nkeys: [wreck]\n"
                                    "secondary_keys: [Alma, schooner]\nlogic: and_any\n---\nShe sank in '71.\n", "utf-8")
    (world / "slow.md").write_text("---\nname: Slow\nkind: lore\nkeys: ['/(a|aa)+$/']\n---\nNever.\n", "utf-8")
    bank.sync()

    def activated(text: str) -> set[str]:
        d = _assemble(bank, skillId="rewrite", documentText=text, selection={"text": text})
        return {i["id"] for i in d["items"] if i["kind"] == "card" and i["layer"] == 4}

    assert "world/storm" in activated("The GALES came at dusk.")
    assert "world/storm" not in activated("The gales came, then calm.")
    assert "world/wreck" not in activated("A wreck on the rocks.")
    assert "world/wreck" in activated("A wreck: the schooner broke apart.")
    assert "world/slow" not in activated("a" * 3000 + "b")  # a backtracking key ends (skipped or no match)


def test_budget_drops_are_reported_with_reasons(bank: Bank, sample: Path) -> None:
    _skill(sample, "tight", "  surrounding: 20000\n  characters: true\n  project-settings: true\n  memories: 10\n"
           "  max_tokens: 300")
    bank.sync()
    d = _assemble(bank, skillId="tight", documentId=CH05, selection={"text": SELECTION}, queryText="Lin Mo")
    dropped = d["diagnostics"]["dropped"]
    assert dropped and all(x["reason"].startswith("over the ") and x["tokens"] > 0 for x in dropped)
    assert any(x["reason"].startswith("over the skill's budget") for x in dropped)
    assert {x["layer"] for x in dropped} >= {4}
    kept_tokens = sum(i["tokens"] for i in d["items"] if i["layer"] >= 2)
    assert kept_tokens <= 300 or "OVER_BUDGET" in [r["code"] for r in d["diagnostics"]["reasons"]]
    assert {x["source"] for x in dropped if x["layer"] == 4} <= {i["source"] for i in
                                                                _assemble(bank, skillId="continue", documentId=CH05,
                                                                          selection={"text": SELECTION},
                                                                          queryText="Lin Mo")["items"]} | {None}


def test_dropped_lists_the_first_pieces_left_out_and_counts_them_all(bank: Bank, sample: Path) -> None:
    folder = sample / ".writenow" / "memories" / "preferences" / "many"
    folder.mkdir(parents=True)
    for i in range(230):  # more than an answer lists (MAX_LISTED), all over Layer 3's cap below
        (folder / f"p{i:03d}.md").write_text(f"---\nid: m-many-{i:03d}\ntype: preference\nscope: project\n"
                                             f"created: 2030-01-01T00:00:{i % 60:02d}Z\n---\nPrefer plain word {i}.\n",
                                             "utf-8")
    bank.sync()
    assert bank.call("context:settings:update", {"patch": {"layerTokens": {"preferences": 60}}})["ok"]
    payload = {"documentId": CH05, "selection": {"text": SELECTION}, "runId": "r-same"}
    d = _assemble(bank, **payload)
    dropped, diagnostics = d["diagnostics"]["dropped"], d["diagnostics"]
    assert len(dropped) == MAX_LISTED < diagnostics["truncated"]
    assert [x["layer"] for x in dropped] == sorted(x["layer"] for x in dropped)  # by layer, as left out
    assert sum(x["layer"] == 3 for x in dropped) >= 200 - sum(x["layer"] == 2 for x in dropped)
    kept = json.loads(json.dumps(d))
    for x in dropped:
        x["reason"] = x["id"] = "x"  # the caller's own: the next answer is the same
    again = _assemble(bank, **payload)
    again["diagnostics"]["tookMs"] = kept["diagnostics"]["tookMs"]
    assert again == kept
