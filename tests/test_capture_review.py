"""Capture review (capture.md, review; issue 34.3): the writer's decisions applied together through the
round-trip writer, each value citing its chapter line, the decisions kept in the proposal file; review in
the file and `membank review D --apply`; a card edited since the proposal re-read, never overwritten.
The cards and chapters are test_capture's (a few lines of 红楼梦 第二回-第四回)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import membank
from membank import Bank
from membank.domains.capture import decide, proposals

from .capturekit import CH03, CRY, D, MOVE, NANNY, fresh, ok, refused
from .capturekit import proposed as _proposed
from .helpers import membank as run

GRANNY = {"op": "relate", "entity": "林黛玉", "to": "贾母", "type": "外孙女", "evidence": "黛玉便知是他外祖母"}
LEFT = {"op": "fact", "content": "黛玉离开扬州，进京依傍外祖母。", "evidence": "随了奶娘及荣府几个老妇人登舟而去"}
MEETING = {"op": "thread", "title": "黛玉初见贾母", "action": "open", "entities": ["林黛玉"], "evidence": "一把搂入怀中"}
CARD = "characters/lin-daiyu.md"


def _card(bank: Bank, rel: str = CARD) -> str:
    return (bank.root / ".writenow" / rel).read_text("utf-8")


def _file(bank: Bank) -> str:
    return (bank.root / ".writenow" / "proposals" / D).read_text("utf-8")


@pytest.fixture
def bank(tmp_path: Path) -> Any:
    b = fresh(tmp_path / "hlm")
    yield b
    b.close()


# --- pure decisions ---------------------------------------------------------------------------------

def _p(op: dict[str, Any], status: str = "pending") -> proposals.Proposed:
    return proposals.Proposed(proposals.op_id(D, op), op, "sha256:x", 3, (), status)


def test_each_op_becomes_one_item_citing_its_line() -> None:
    c = decide.change("p-1", MOVE, D, 3, "lin-daiyu")
    assert (c.card, c.key) == ("lin-daiyu", "progressions")
    assert c.item == {"at": D, "state": "舍父进京", "set": {"location": "荣国府"}, "evidence": f"{D}:3"}
    scene = decide.change("p-1", {**MOVE, "scene": "s2"}, D, 5, "lin-daiyu")
    assert scene.item["at"] == f"{D}#s2"
    rel = decide.change("p-2", GRANNY, D, 5, "lin-daiyu")
    assert rel.key == "relations" and rel.item == {"to": "贾母", "type": "外孙女", "since": D, "evidence": f"{D}:5"}
    new = decide.change("p-3", NANNY, D, 3, None)
    assert (new.card, new.key) == (None, "characters/奶娘.md")
    assert new.item == {"name": "奶娘", "kind": "character", "introduced": D, "evidence": f"{D}:3"}
    fact = decide.change("p-4", {"op": "fact", "content": "黛玉弃父进京。", "evidence": "y"}, D, 3, None)
    assert fact.key == "memories/facts/黛玉弃父进京.md" and fact.body == "黛玉弃父进京。"
    assert fact.item == {"type": "fact", "since": D, "evidence": [f"{D}:3"]}
    thread = decide.change("p-5", {"op": "thread", "title": "宝黛初会", "action": "open", "evidence": "y"}, D, 5, None)
    assert (thread.key, thread.item) == ("threads/宝黛初会.md", {"title": "宝黛初会", "opened": D, "evidence": f"{D}:5"})
    resolve = {"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "y"}
    ended = decide.change("p-6", resolve, D, 3, None, decide.Target("file", "threads/jinjing.md"))
    assert (ended.where, ended.card, ended.edit, ended.item) == ("file", "threads/jinjing.md", "keys", {"resolved": D})
    unrelate = {"op": "unrelate", "entity": "a", "to": "b", "type": "c", "evidence": "y"}
    apart = decide.change("p-7", unrelate, D, 4, None, decide.Target("card", "lin-daiyu", 9))
    assert (apart.card, apart.edit, apart.at_line, apart.item["until"]) == ("lin-daiyu", "until", 9, D)
    hidden = decide.change("p-8", {"op": "reveal", "content": "黛玉之母已逝。", "evidence": "y"}, D, 3, None)
    assert (hidden.edit, hidden.item["revealed"], hidden.body) == ("new", D, "黛玉之母已逝。")
    scene = decide.change("p-9", {"op": "scene", "scene": "进府", "pov": "黛玉", "evidence": "y"}, D, 5, None,
                          decide.Target("file", "scenes/chapters/ch03.md.md"))
    assert (scene.edit, scene.key, scene.item) == ("scene", "进府", {"pov": "黛玉"})
    for later in (resolve, unrelate, {"op": "invalidate", "fact": "f", "evidence": "y"}):
        with pytest.raises(Exception, match="not found"):  # what it changes is gone: nothing to write
            decide.change("p-6", later, D, 3, None)


def test_decisions_are_checked_whole() -> None:
    ops = [_p(MOVE), _p(GRANNY), _p(CRY, "stale"), _p(NANNY, "applied")]
    a, b, c, d = (p.id for p in ops)
    got = decide.decisions(ops, [{"id": a, "decision": "accept"}, {"id": b, "decision": "reject"}])
    assert got == {a: ("accepted", MOVE), b: ("rejected", GRANNY)}
    patched = decide.decisions(ops, [{"id": a, "decision": "patch", "patch": {"state": "进京"}}])
    assert patched[a] == ("accepted", {**MOVE, "state": "进京"})
    for wrong, code in [([{"id": "p-000000000000", "decision": "accept"}], "NOT_FOUND"),
                        ([{"id": c, "decision": "accept"}], "CONFLICT"),  # stale
                        ([{"id": d, "decision": "reject"}], "CONFLICT"),  # applied already
                        ([{"id": a, "decision": "maybe"}], "INVALID_ARGUMENT"),
                        ([{"id": a, "decision": "accept"}, {"id": a, "decision": "reject"}], "INVALID_ARGUMENT"),
                        ([{"id": a, "decision": "patch", "patch": {"entity": 3}}], "INVALID_ARGUMENT")]:
        with pytest.raises(Exception) as e:
            decide.decisions(ops, wrong)
        assert getattr(e.value, "code", None) == code, wrong


# --- through the bank -------------------------------------------------------------------------------

def test_review_writes_the_cards_keeping_the_writers_bytes(bank: Bank) -> None:
    path = bank.root / ".writenow" / CARD
    path.write_text(_card(bank).replace("林黛玉\n", "林黛玉  # 主角\nmood: unknown-key\n", 1), "utf-8")
    ok(bank, "memory:list")  # the index reads the edit
    before = _card(bank)
    move, granny, cry, nanny = _proposed(bank, [MOVE, GRANNY, CRY, NANNY])
    data = ok(bank, "capture:review", documentId=D, decisions=[
        {"id": move, "decision": "accept"}, {"id": granny, "decision": "reject"},
        {"id": cry, "decision": "patch", "patch": {"state": "搂着外孙女大哭"}}, {"id": nanny, "decision": "accept"}])
    assert data["counts"] == {"applied": 3, "rejected": 1}
    after = _card(bank)
    assert "# 主角" in after and "mood: unknown-key" in after
    assert after.startswith(before.split("progressions:")[0].replace("revision", "x").split("updated")[0][:20])
    assert f"evidence: '{D}:3'" in after or f"evidence: {D}:3" in after
    state = ok(bank, "kg:state", name="林黛玉", at=D)
    assert state["state"] == "舍父进京" and state["facets"]["location"]["value"] == "荣国府"
    assert ok(bank, "kg:state", name="贾母", at=D)["state"] == "搂着外孙女大哭"
    assert "introduced: chapters/ch03.md" in _card(bank, "characters/奶娘.md")
    text = _file(bank)
    assert text.count("- status: applied") == 3 and text.count("- status: rejected") == 1
    assert "搂着外孙女大哭" in text  # the patch is recorded
    status = ok(bank, "capture:status")["items"]
    assert next(i for i in status if i["documentId"] == D)["state"] == "reviewed"
    again = refused(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"}])
    assert again["code"] == "CONFLICT"


def test_all_or_nothing_and_a_card_edited_since_is_re_read(bank: Bank) -> None:
    move, cry = _proposed(bank, [MOVE, CRY])
    card, proposal = _card(bank), _file(bank)
    # the writer gives 黛玉 the same change by hand after the proposal: re-read, the op no longer applies
    path = bank.root / ".writenow" / CARD
    edited = card.replace("relations:", f"  - {{at: {D}, state: 舍父进京, set: {{location: 荣国府}}}}\nrelations:")
    path.write_text(edited, "utf-8")
    granny = (bank.root / ".writenow" / "characters" / "jia-mu.md").read_text("utf-8")
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": cry, "decision": "accept"},
                                                                      {"id": move, "decision": "accept"}])
    assert error["code"] == "CONFLICT" and move in error["message"] and "ALREADY_KNOWN" in error["message"]
    assert path.read_text("utf-8") == edited and _file(bank) == proposal  # nothing half-applied
    assert (bank.root / ".writenow" / "characters" / "jia-mu.md").read_text("utf-8") == granny


def test_a_changed_chapter_makes_pending_ops_stale(bank: Bank) -> None:
    (move,) = _proposed(bank, [MOVE])
    (bank.root / "chapters" / "ch03.md").write_text(CH03 + "\n    又一段．\n", "utf-8")
    listed = ok(bank, "capture:pending", documentId=D)["items"]
    assert [(i["id"], i["status"]) for i in listed] == [(move, "stale")]
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"}])
    assert error["code"] == "CONFLICT" and "stale" in error["message"]
    ok(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "reject"}])  # noise may go
    assert "- status: rejected" in _file(bank)


def test_review_in_the_file_and_the_command_line(bank: Bank, tmp_path: Path) -> None:
    move, granny, cry = _proposed(bank, [MOVE, GRANNY, CRY])
    root, home = bank.root, tmp_path / "home"
    bank.close()

    def cli(*args: str) -> Any:
        return run(*args, cwd=root, home=home)

    listed = cli("review", D)
    assert listed.returncode == 0 and move in listed.stdout and "方洒泪拜别" in listed.stdout, listed.stderr
    done = cli("review", D, "--reject", granny)
    assert done.returncode == 0 and "0 applied, 1 rejected" in done.stdout, done.stderr
    path = root / ".writenow" / "proposals" / D
    text = path.read_text("utf-8")
    at = text.index(f"## {move}")
    path.write_text(text[:at] + text[at:].replace("- status: pending", "- status: accepted", 1), "utf-8")
    assert f"{D}\tpending\t(pending 1, accepted 1, rejected 1)" in cli("capture", "--status").stdout
    applied = cli("review", D, "--apply")
    assert applied.returncode == 0 and "1 applied" in applied.stdout, applied.stderr
    now = cli("review", D).stdout
    assert cry in now and move not in now
    # the file hand-edited into nonsense: --apply refuses with the line and writes nothing
    text = path.read_text("utf-8")
    line = text[:text.index(f"## {cry}")].count("\n") + 1
    path.write_text(text.replace("```yaml\nop: progress\nentity: 贾母", "```yaml\nop: [progress", 1), "utf-8")
    card = (root / ".writenow" / CARD).read_text("utf-8")
    bad = cli("review", D, "--apply")
    assert bad.returncode != 0 and f":{line}:" in bad.stdout + bad.stderr
    assert (root / ".writenow" / CARD).read_text("utf-8") == card
    reopened = membank.open(root)
    try:
        assert ok(reopened, "kg:state", name="林黛玉", at=D)["state"] == "舍父进京"
    finally:
        reopened.close()


# --- the property: kg:state equals the ops applied at the chapter, and what it was before -----------

STATES = st.text(alphabet="进京病愈笑哭归去", min_size=1, max_size=4)
# ops of every other kind, independent of each other and of the progressions: any subset may be accepted
OTHERS: dict[str, dict[str, Any]] = {
    "relate": {"op": "relate", "entity": "贾母", "to": "王夫人", "type": "儿媳", "evidence": "老母迎上来"},
    "unrelate": {"op": "unrelate", "entity": "林黛玉", "to": "林如海", "type": "父亲", "evidence": "弃父而往"},
    "invalidate": {"op": "invalidate", "fact": "", "evidence": "身体方愈"},  # the fact's id is the bank's
    "reveal": {"op": "reveal", "content": "黛玉的外祖母是贾母。", "evidence": "黛玉便知是他外祖母"},
    "fact": {"op": "fact", "content": "黛玉登舟进京。", "evidence": "登舟而去"},
    "resolve": {"op": "thread", "title": "黛玉进京", "action": "resolve", "evidence": "方洒泪拜别"},
    "open": {"op": "thread", "title": "宝黛初会", "action": "open", "evidence": "方进入房时"},
    "scene": {"op": "scene", "scene": "进府", "pov": "林黛玉", "location": "荣国府", "evidence": "方进入房时"},
    "entity": {"op": "entity", "name": "奶娘", "kind": "character", "evidence": "随了奶娘"},
    "touch": {"op": "thread", "title": "黛玉进京", "action": "touch", "evidence": "登舟而去"},  # recorded only
}


def _world(bank: Bank, at: str) -> dict[str, Any]:
    """Everything a capture can change, as the bible answers it at `at`."""
    names = ["林黛玉", "贾母", "林如海"]
    return {"state": {n: (lambda s: (s["state"], s["facets"]))(ok(bank, "kg:state", name=n, at=at)) for n in names},
            "edges": {n: sorted((e["name"], e["type"]) for e in ok(bank, "kg:relations", name=n, at=at)["edges"])
                      for n in names},
            "reader": sorted(f["content"] for f in ok(bank, "story:reader", at=at)["items"]),
            "threads": {t["title"]: t["status"] for t in ok(bank, "story:threads", at=at)["items"]},
            "scene": {k: v["value"] for k, v in ok(bank, "story:scene", at=at)["state"].items()},
            "cards": sorted(c["name"] for c in ok(bank, "kg:entity:list", at=at)["items"]  # introduced by `at`
                            if (c["introduced"] or {}).get("value", "") <= at)}  # ch02 < ch03: story order


def _expected(was: dict[str, Any], changes: Any, others: set[str], fact: str) -> dict[str, Any]:
    """The bible at the chapter after the accepted ops: what it was there, with each op applied."""
    want = {k: dict(v) if isinstance(v, dict) else list(v) for k, v in was.items()}
    for n, s, loc in changes:
        want["state"][n] = (s, {**want["state"][n][1], "location": {"value": loc}})
    if "relate" in others:
        want["edges"]["贾母"] = sorted([*want["edges"]["贾母"], ("王夫人", "儿媳")])
    if "unrelate" in others:
        want["edges"]["林黛玉"] = [e for e in want["edges"]["林黛玉"] if e != ("林如海", "父亲")]
        want["edges"]["林如海"] = [e for e in want["edges"]["林如海"] if e != ("林黛玉", "父亲")]
    if "invalidate" in others:
        want["reader"] = [c for c in want["reader"] if c != fact]
    want["reader"] = sorted(want["reader"] + [OTHERS[k]["content"] for k in ("reveal", "fact") if k in others])
    if "resolve" in others:
        want["threads"]["黛玉进京"] = "resolved"
    if "open" in others:
        want["threads"]["宝黛初会"] = "open"
    if "scene" in others:
        want["scene"] = {**want["scene"], "pov": "林黛玉", "location": "荣国府"}
    if "entity" in others:
        want["cards"] = sorted([*want["cards"], "奶娘"])
    return want


def _values(world: dict[str, Any]) -> dict[str, Any]:
    """Facets compared by value (their source, line and position move with the write)."""
    return {**world, "state": {n: (s, {k: v["value"] for k, v in f.items()}) for n, (s, f) in world["state"].items()}}


@settings(max_examples=5, deadline=None)
@example([("林黛玉", "进京", "荣国府")], set(OTHERS))  # every kind at once, whatever is drawn
@given(st.lists(st.tuples(st.sampled_from(["林黛玉", "贾母", "林如海"]), STATES,
                          st.sampled_from(["扬州", "荣国府", "京都"])), max_size=3, unique_by=lambda t: t[0]),
       st.sets(st.sampled_from(sorted(OTHERS)), max_size=len(OTHERS)))
def test_accepted_ops_are_the_state_at_the_chapter_and_nothing_earlier_moves(changes: Any, others: set[str]) -> None:
    if not changes and not others:
        return
    with tempfile.TemporaryDirectory() as tmp:
        bank = fresh(Path(tmp) / "hlm")
        try:
            fact = next(m for m in ok(bank, "memory:list", type="fact")["items"])
            earlier = ["chapters/ch02.md"]  # every position before the chapter
            before = {at: _world(bank, at) for at in [*earlier, D]}
            ops = [{"op": "progress", "entity": n, "state": s, "set": {"location": loc}, "evidence": "黛玉"}
                   for n, s, loc in changes]
            ops += [{**OTHERS[k], "fact": fact["id"]} if k == "invalidate" else OTHERS[k] for k in sorted(others)]
            ids = _proposed(bank, ops)
            ok(bank, "capture:review", documentId=D, decisions=[{"id": i, "decision": "accept"} for i in ids])
            assert _values(_world(bank, D)) == _values(_expected(before[D], changes, others, fact["content"]))
            for at in earlier:
                assert _world(bank, at) == before[at]
        finally:
            bank.close()


def test_doctor_warns_when_an_applied_quote_is_gone_from_the_chapter(bank: Bank) -> None:
    (move,) = _proposed(bank, [MOVE])
    ok(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"}])
    assert not [d for d in ok(bank, "index:diagnostics")["items"] if d.get("code") == "CAPTURE_EVIDENCE_GONE"]
    (bank.root / "chapters" / "ch03.md").write_text(CH03.replace("方洒泪拜别，", ""), "utf-8")
    found = [d for d in ok(bank, "index:diagnostics")["items"] if d.get("code") == "CAPTURE_EVIDENCE_GONE"]
    card = _card(bank).splitlines()
    assert [(d["source"], d["severity"]) for d in found] == [(f".writenow/{CARD}", "warning")]
    assert f"{D}:3" in card[found[0]["line"] - 1] and "方洒泪拜别" in found[0]["message"]


def test_a_write_that_fails_midway_puts_back_what_was_written(bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.capture import commit

    move, cry = _proposed(bank, [MOVE, CRY])
    granny_path = bank.root / ".writenow" / "characters" / "jia-mu.md"
    card, granny, proposal = _card(bank), granny_path.read_text("utf-8"), _file(bank)
    real = commit.replace_unchanged
    calls: list[Path] = []

    def second_fails(path: Path, data: bytes, expected: bytes, **how: bool) -> str:
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(path, data, expected, **how)

    monkeypatch.setattr(commit, "replace_unchanged", second_fails)
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"},
                                                                      {"id": cry, "decision": "accept"}])
    assert error["code"] == "DB_ERROR"
    assert (_card(bank), granny_path.read_text("utf-8"), _file(bank)) == (card, granny, proposal)
    assert ok(bank, "kg:state", name="林黛玉", at=D)["state"] == "随父在扬州"  # the index holds the old card


@pytest.mark.parametrize("put_back", ["disk-error", "save-kept-aside"])
def test_a_put_back_that_fails_names_the_file_it_left_and_the_next_review_finishes_the_call(
        bank: Bank, monkeypatch: pytest.MonkeyPatch, put_back: str) -> None:
    """One card cannot be written and the other, written already, cannot be put back (a disk error, or an
    editor's save that had to be kept beside it: faulted in-process): the call is DB_ERROR naming that card
    in `details.unknownState`, never "nothing written"; the call's record stays, so the next review
    finishes the call rather than leave it half-applied."""
    from membank.domains.capture import commit
    from membank.files.exchange import Changed

    move, cry = _proposed(bank, [MOVE, CRY])
    granny_path = bank.root / ".writenow" / "characters" / "jia-mu.md"
    card, granny = _card(bank), granny_path.read_text("utf-8")
    real = commit.replace_unchanged
    seen: list[Path] = []

    def faulty(path: Path, data: bytes, expected: bytes, **how: bool) -> str:
        seen.append(path)
        if path == granny_path:
            raise OSError(5, "Input/output error")
        if seen.count(path) == 2:  # the put-back
            raise OSError(5, "Input/output error") if put_back == "disk-error" else Changed(path.with_name("kept"))
        return real(path, data, expected, **how)

    monkeypatch.setattr(commit, "replace_unchanged", faulty)
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"},
                                                                      {"id": cry, "decision": "accept"}])
    monkeypatch.undo()
    assert error["code"] == "DB_ERROR" and error["details"]["unknownState"] == [f".writenow/{CARD}"]
    assert f".writenow/{CARD} could not be put back" in error["message"] and "nothing was written" not in error["message"]
    assert _card(bank) != card and granny_path.read_text("utf-8") == granny  # as the answer says
    assert ok(bank, "capture:pending", documentId=D)["interrupted"] == {"applied": [move], "notApplied": [cry]}
    done = ok(bank, "capture:review", documentId=D)
    assert done["resumed"] == {"applied": sorted([move, cry]), "notApplied": []}
    assert granny_path.read_text("utf-8") != granny and _file(bank).count("- status: applied") == 2


def test_each_folder_is_fsynced_once_and_the_proposal_file_is_written_after_the_cards(
        bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.capture import commit

    ids = _proposed(bank, [MOVE, CRY, GRANNY])
    events: list[tuple[str, str]] = []
    real_put, real_sync = commit.replace_unchanged, commit.fsync_dir

    def put(path: Path, data: bytes, expected: bytes, **how: bool) -> str:
        events.append(("write", path.relative_to(bank.root / ".writenow").as_posix()))
        return real_put(path, data, expected, **how)

    def sync(folder: Path) -> None:
        events.append(("fsync", folder.relative_to(bank.root / ".writenow").as_posix()))
        real_sync(folder)

    monkeypatch.setattr(commit, "replace_unchanged", put)
    monkeypatch.setattr(commit, "fsync_dir", sync)
    ok(bank, "capture:review", documentId=D, decisions=[{"id": i, "decision": "accept"} for i in ids])
    cards = sorted(events[:2])
    assert cards == [("write", "characters/jia-mu.md"), ("write", CARD)]  # the two cards, side by side
    assert events[2:] == [("fsync", "characters"), ("write", f"proposals/{D}"), ("fsync", "proposals/chapters")]


def test_within_a_review_the_same_front_matter_is_parsed_once_and_each_reader_gets_its_own_copy() -> None:
    from membank.files import yamlmemo
    from membank.files.frontmatter import split

    calls: list[str] = []

    def load(text: str) -> Any:
        calls.append(text)
        return {"progressions": [{"at": "c1"}]}

    with yamlmemo.remembering():
        first = yamlmemo.loaded("a: 1", load)
        first["progressions"].append({"at": "c2"})  # a reader changing what it got
        assert yamlmemo.loaded("a: 1", load) == {"progressions": [{"at": "c1"}]} and len(calls) == 1
    assert yamlmemo.loaded("a: 1", load) and len(calls) == 2  # outside the scope nothing is kept
    text = "---\nname: 林黛玉\nprogressions:\n  - {at: c1}\n---\n"
    with yamlmemo.remembering():
        assert split(text).meta == split(text).meta and split(text).meta is not split(text).meta


def test_a_thread_started_in_a_review_keeps_nothing_in_its_memo() -> None:
    """A thread that runs in a copy of the review's context (`asyncio.to_thread`, or any thread on a Python
    where threads inherit it: 3.14 free-threaded) parses on its own: it neither shares the review's memo
    nor keeps one of its own for its whole life."""
    import contextvars
    import threading

    from membank.files import yamlmemo

    calls: list[str] = []

    def load(text: str) -> Any:
        calls.append(text)
        return {"a": 1}

    with yamlmemo.remembering():
        copied = contextvars.copy_context()
        worker = threading.Thread(target=lambda: [copied.run(yamlmemo.loaded, "a: 1", load) for _ in range(2)])
        worker.start()
        worker.join()
        assert len(calls) == 2  # the thread parsed each time
        yamlmemo.loaded("a: 1", load)
        assert len(calls) == 3  # and left nothing in the review's memo


def test_a_fact_and_a_thread_become_files_of_their_own(bank: Bank) -> None:
    left, meeting = _proposed(bank, [LEFT, MEETING])
    ok(bank, "capture:review", documentId=D, decisions=[{"id": left, "decision": "accept"},
                                                         {"id": meeting, "decision": "accept"}])
    facts = [m for m in ok(bank, "memory:list", type="fact")["items"] if "扬州" in m["content"]]
    assert [m["source"] for m in facts] == [".writenow/memories/facts/黛玉离开扬州-进京依傍外祖母.md"]
    threads = {t["title"]: t for t in ok(bank, "story:threads", at="chapters/ch04.md")["items"]}
    assert threads["黛玉初见贾母"]["opened"] == D and threads["黛玉初见贾母"]["entities"] == ["林黛玉"]
    assert not ok(bank, "index:diagnostics")["items"]


def test_a_hand_edited_op_of_the_wrong_shape_or_a_quote_of_1_mb_is_refused_with_its_line(bank: Bank) -> None:
    (move,) = _proposed(bank, [MOVE])
    path = bank.root / ".writenow" / "proposals" / D
    text = _file(bank).replace("- status: pending", "- status: accepted")
    line = text[:text.index(f"## {move}")].count("\n") + 1
    card = _card(bank)
    for broken, said in [(text.replace("entity: 林黛玉\n", ""), "needs `entity`"),
                         (text.replace("op: progress", "op: fly"), "`op` is one of"),
                         (text.replace("> 方洒泪拜别", "> " + "引" * 1_000_000), "1,000,000 characters")]:
        path.write_text(broken, "utf-8")
        error = refused(bank, "capture:review", documentId=D)
        assert error["code"] == "CONFLICT" and error["details"]["line"] == line and said in error["message"]
        assert _card(bank) == card and path.read_text("utf-8") == broken
        assert ok(bank, "capture:status")["items"][1]["problems"][0]["line"] == line
    path.write_text(text, "utf-8")
    error = refused(bank, "capture:review", documentId=D, decisions=[
        {"id": move, "decision": "patch", "patch": {"evidence": "引" * 1_000_000}}])
    assert error["code"] == "INVALID_ARGUMENT" and _card(bank) == card


def test_bad_decisions_write_nothing(bank: Bank) -> None:
    (move,) = _proposed(bank, [MOVE])
    proposal = _file(bank)
    for decisions in ([{"id": move, "decision": "maybe"}], [{"id": move, "decision": "accept"}] * 10_000,
                      [{"id": move}], [{"id": move, "decision": "patch", "patch": {"op": "fact"}}]):
        assert refused(bank, "capture:review", documentId=D, decisions=decisions)["code"] == "INVALID_ARGUMENT"
    assert refused(bank, "capture:review", documentId="chapters/ch02.md", decisions=[])["code"] == "NOT_FOUND"
    assert _file(bank) == proposal


@pytest.mark.parametrize("fault", ["deleted", "a-file-instead"])
def test_the_index_folder_gone_while_a_review_writes_is_no_failure_of_the_call(
        bank: Bank, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    """`.writenow/.index/` (which holds the call's record) deleted, or a file put in its place, while the
    review writes its files: every file is written, so the call answers what it did (it said DB_ERROR "Not a
    directory" for a call whose every file was written, as the record could not be deleted); the next call
    makes the index again from the files."""
    import shutil
    import threading

    from membank.domains.capture import commit

    move, cry = _proposed(bank, [MOVE, CRY])
    index = bank.root / ".writenow" / ".index"
    real = commit.replace_unchanged

    once = threading.Lock()  # the files are written several at a time: the first write faults, once

    def first_write(path: Path, data: bytes, expected: bytes, **how: bool) -> str:
        with once:
            if index.is_dir():
                shutil.rmtree(index)
                if fault == "a-file-instead":
                    index.write_text("not a folder\n", "utf-8")
        return real(path, data, expected, **how)

    monkeypatch.setattr(commit, "replace_unchanged", first_write)
    done = ok(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"},
                                                                {"id": cry, "decision": "accept"}])
    monkeypatch.undo()
    assert done["counts"] == {"applied": 2, "rejected": 0} and _file(bank).count("- status: applied") == 2
    if fault == "a-file-instead":
        index.unlink()
    assert ok(bank, "kg:state", name="林黛玉", at=D)["state"] == "舍父进京"  # a new index, from the files
    assert "interrupted" not in ok(bank, "capture:pending", documentId=D)


def test_a_put_back_that_fails_is_said_even_when_the_index_then_fails(
        bank: Bank, monkeypatch: pytest.MonkeyPatch) -> None:
    """A put-back that fails (`details.unknownState`) followed by an index that cannot be synced (a disk
    error, `.index/` gone): the answer still names the file left as it may be, and the call's record stays
    (it said the index's DB_ERROR, no unknownState, and the record went: a half-applied call nobody finishes)."""
    from membank.domains.capture import commit
    from membank.index import StorageError

    move, cry = _proposed(bank, [MOVE, CRY])
    granny_path = bank.root / ".writenow" / "characters" / "jia-mu.md"
    real = commit.replace_unchanged
    seen: list[Path] = []

    def faulty(path: Path, data: bytes, expected: bytes, **how: bool) -> str:
        seen.append(path)
        if path == granny_path or seen.count(path) == 2:  # granny cannot be written, the card not put back
            raise OSError(5, "Input/output error")
        return real(path, data, expected, **how)

    def sync_fails(*args: Any) -> None:
        raise StorageError("disk I/O error")

    monkeypatch.setattr(commit, "replace_unchanged", faulty)
    monkeypatch.setattr(bank, "sync_many", sync_fails)
    error = refused(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"},
                                                                      {"id": cry, "decision": "accept"}])
    monkeypatch.undo()
    assert error["code"] == "DB_ERROR" and error["details"]["unknownState"] == [f".writenow/{CARD}"], error
    assert ok(bank, "capture:pending", documentId=D)["interrupted"] == {"applied": [move], "notApplied": [cry]}
    assert ok(bank, "capture:review", documentId=D)["resumed"] == {"applied": sorted([move, cry]), "notApplied": []}


def test_a_link_for_the_global_banks_index_is_never_written_through(bank: Bank, home: Path, tmp_path: Path) -> None:
    """The global bank's `.index` (which holds the machine's key sealing a review's record) made a link to a
    folder elsewhere: the review goes on without a record, as when the key cannot be made, and nothing is
    written where the link leads (the key was)."""
    import shutil

    move, cry = _proposed(bank, [MOVE, CRY])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.rmtree(home / ".index", ignore_errors=True)
    (home / ".index").symlink_to(outside, target_is_directory=True)
    done = ok(bank, "capture:review", documentId=D, decisions=[{"id": move, "decision": "accept"},
                                                                {"id": cry, "decision": "accept"}])
    assert done["counts"] == {"applied": 2, "rejected": 0}
    assert list(outside.iterdir()) == []
