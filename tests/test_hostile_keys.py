"""A hostile lorebook (issue 29, quality.md promise 10): a regular-expression key that costs a gigabyte to
compile is a diagnostic and never compiled; slow keys share 50 ms per call and the rest are reported;
cancel and deadlines stop a scan between keys; a check over a chapter of one-character names answers
with capped lists and their totals. Memory is measured (tracemalloc, a subprocess's peak), time never:
the timings are the bench's (`membank bench`, the hostile-lorebook row)."""

from __future__ import annotations

import json
import subprocess
import threading
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from membank import Bank
from membank.domains.story.matching import Keyed, Matcher, call_allowance
from membank.kernel import cancel, regexcost
from membank.kernel.errors import CANCELED, TIMEOUT, MembankError
from membank.kernel.limits import MAX_LISTED, MAX_PASSAGE_CHARS

from .helpers import write_memory

GIGABYTE_KEY = "/(?:(?:a{100}){100}){400}/"  # 26 characters: ~1.1 GB and ~40 s to compile
SLOW_KEY = "/(a|a)+$/"  # catastrophic backtracking: only the time limit ends it


@pytest.mark.parametrize("key", [GIGABYTE_KEY, "/a{100000}/", "/(?:ab|cd){1000}/", "/(?:a{100}){50,60}/",
                                 "/" + "(" * 30 + "a" + ")" * 30 + "/", "/(?x) a /", "/(?R)/", "/(?:a){e<=1}/",
                                 "/abc/q", "/" + "a" * 1001 + "/"])
def test_a_key_over_the_bounds_is_refused_from_its_text(key: str) -> None:
    assert regexcost.refusal(key)


@pytest.mark.parametrize("key", [SLOW_KEY, "/\\b(?:Lin|Mo){1,3}\\b/i", "/gale[s]?\\b/i", "/Lin.{0,20}Mo/",
                                 "/\\p{Han}{2,4}/", "/[(]{3}x/", "/a{2000}/", "literal {100} words",
                                 "/a{0,100000}/", "/(?:(?:a{0,100}){1,100}){0,400}/"])
def test_keys_writers_write_are_within_the_bounds(key: str) -> None:
    assert regexcost.refusal(key) is None


_MEASURE = """
import json, resource, sys, tracemalloc
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # a compile of the key would fail here, not swap
from membank.domains.story.matching import Keyed, Matcher
from membank.files.parse import parse_card
tracemalloc.start()
card = parse_card(sys.argv[1].encode(), ".writenow/world/x.md", "world", "x.md", 0)
m = Matcher.build([Keyed("world/x", "X", keys=card.record.keys)])
found, skipped = m.mentions("a" * 50000)
print(json.dumps({"peak": tracemalloc.get_traced_memory()[1], "found": len(found),
                  "skipped": [s.reason for s in skipped], "diagnostics": [d.line for d in card.diagnostics]}))
"""


def test_the_gigabyte_key_is_never_compiled_and_costs_no_memory() -> None:
    text = f"---\nname: X\nkeys:\n  - fine\n  - '{GIGABYTE_KEY}'\n---\nBody.\n"
    done = subprocess.run([sys.executable, "-c", _MEASURE, text], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    measured = json.loads(done.stdout)
    assert measured["diagnostics"] == [5]  # on the key's own line
    assert measured["skipped"] == ["bounds"]
    assert measured["peak"] < 8 * 1024 * 1024  # compiling it: ~1.1 GB


def test_the_keys_of_all_cards_together_are_bounded() -> None:
    key = "/a{1999}b/"  # within its own bound
    heavy = [Keyed(f"c{i:03}", f"C{i}", keys=(key,)) for i in range(60)]
    _, skipped = Matcher.build(heavy).mentions("ab")
    compiled = len(heavy) - len(skipped)
    assert all(s.reason == "bounds" for s in skipped) and skipped[0].id > "c020"  # the first cards keep theirs
    assert compiled * regexcost.units(key) <= regexcost.MAX_TOTAL_UNITS < (compiled + 1) * regexcost.units(key)


def test_a_bank_reports_the_key_and_every_answer_skips_it(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "world" / "boom.md").write_text(
        f"---\nname: Boom\nkind: lore\nkeys: [boom, '{GIGABYTE_KEY}']\n---\nBoom.\n", "utf-8")
    bank.sync()
    problems = [d for d in bank.diagnostics()["items"] if d["source"].endswith("boom.md")]
    assert [d["line"] for d in problems] == [4] and "will not compile" in problems[0]["message"]
    check = bank.call("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": "a boom, " + "a" * 500})
    assert [(s["key"], s["reason"]) for s in check["data"]["skipped"]] == [(GIGABYTE_KEY, "bounds")]
    mentions = bank.call("kg:mentions", {"text": "boom"})["data"]
    assert {i["id"] for i in mentions["items"]} == {"world/boom"} and mentions["skippedTotal"] == 1


def _slow_cards(n: int) -> list[Keyed]:
    return [Keyed(f"slow{i:03}", f"Slow {i}", keys=(SLOW_KEY,)) for i in range(n)]


def test_slow_keys_share_one_allowance_per_call_and_the_rest_are_reported() -> None:
    m = Matcher.build([*_slow_cards(400), Keyed("maren", "Maren")])
    text = "Maren " + "a" * 40 + "b"  # 2**40 ways to fail each
    with call_allowance():  # one call: both scans share it
        hits, skipped = m.activated(text)
        _, again = m.mentions(text)
    assert list(hits) == ["maren"]
    reasons = [s.reason for s in skipped]
    assert len(reasons) == 400 and 1 <= reasons.count("timeout") <= 8  # 20 ms, then half of what is left, of 50
    assert reasons.count("budget") == 400 - reasons.count("timeout")
    assert [s.reason for s in again] == ["budget"] * 400  # nothing left for the second scan
    assert all(s.message.endswith("spent") for s in skipped if s.reason == "budget")


@pytest.fixture
def stepping() -> Iterator[list[float]]:
    """kernel/cancel.py's clock, 5 ms on at every reading."""
    now = [0.0]

    def ticks() -> float:
        now[0] += 0.005
        return now[0]

    with cancel.use(ticks):
        yield now


def test_a_deadline_stops_a_scan_between_keys(stepping: list[float]) -> None:
    m = Matcher.build(_slow_cards(400))
    token = cancel.Token()
    token.bound(300)
    with cancel.installed(token), call_allowance(3600.0), pytest.raises(MembankError) as stopped:
        m.mentions("a" * 30 + "b")
    assert stopped.value.code == TIMEOUT
    assert stepping[0] < 0.5  # the stepping clock was read a few dozen times, not for 400 keys


def test_cancel_stops_a_scan_at_the_next_key(stepping: list[float]) -> None:
    m = Matcher.build(_slow_cards(400))
    token = cancel.Token()
    readings = [0]

    def ticks() -> float:  # the caller gives up while the third key runs
        readings[0] += 1
        if readings[0] == 8:
            token.cancel()
        return stepping[0]

    with cancel.use(ticks), cancel.installed(token), call_allowance(3600.0), pytest.raises(MembankError) as stopped:
        m.mentions("a" * 30 + "b")
    assert stopped.value.code == CANCELED and readings[0] < 20  # two readings a key: stopped after the fourth


def test_a_check_over_a_chapter_of_one_character_names_lists_at_most_200_with_totals(bank: Bank, sample: Path
                                                                                     ) -> None:
    world = sample / ".writenow" / "world" / "han"
    world.mkdir()
    names = [chr(0x4E00 + 3 * i) for i in range(250)]
    for i, c in enumerate(names):
        (world / f"k{i:03}.md").write_text(f"---\nname: K{i}\nkind: lore\nkeys: ['{c}']\n---\nx\n", "utf-8")
    for i in range(210):
        write_memory(sample, f"facts/f{i:03}.md", f"{names[i]}与{names[i + 1]}相识。", id=f"f{i:03}", type="fact")
    bank.sync()
    chapter = "".join(names) * 4  # each name four times: 1,000 mentions
    data = bank.call("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": chapter})["data"]
    assert len(data["entities"]) == MAX_LISTED and data["entitiesTotal"] == 250
    assert all(len(e["mentions"]) == e["mentionsTotal"] == 4 for e in data["entities"])
    assert len(data["facts"]) == MAX_LISTED and data["factsTotal"] >= 210  # the sample has facts too
    one = bank.call("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": names[0] * 1000})["data"]
    assert len(one["entities"][0]["mentions"]) == MAX_LISTED and one["entities"][0]["mentionsTotal"] == 1000
    assert len(json.dumps(data)) < 1_000_000
    too_long = bank.call("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": "x" * (MAX_PASSAGE_CHARS + 1)})
    assert too_long["error"]["code"] == "INVALID_ARGUMENT" and too_long["error"]["details"]["field"] == "text"


def test_an_mcp_client_that_cancels_stops_the_call_at_its_next_checkpoint() -> None:
    anyio = pytest.importorskip("anyio")
    from membank.shells.mcpserver import HostToken

    started = threading.Event()
    outcome: list[str] = []

    def work() -> None:  # a tool call on the server's worker thread, checking as a scan does between keys
        with cancel.installed(HostToken()):
            started.set()
            try:
                for _ in range(10_000_000):
                    cancel.check()
                outcome.append("ran to its end")
            except MembankError as e:
                outcome.append(e.code)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(anyio.to_thread.run_sync, work)
            await anyio.to_thread.run_sync(started.wait)
            tasks.cancel_scope.cancel()  # what the SDK does on the client's notifications/cancelled

    anyio.run(main)
    assert outcome == [CANCELED]


def test_a_query_or_an_instruction_is_bounded_and_a_derived_query_is_cut(bank: Bank) -> None:
    long = "Maren and the lamp. " * 600  # 12,000 characters
    for channel, payload in (("memory:injection:preview", {"queryText": long}),
                             ("memory:episode:query", {"queryText": long}),
                             ("context:assemble", {"skillId": "continue", "instruction": long})):
        refused = bank.call(channel, payload)
        assert refused["error"]["code"] == "INVALID_ARGUMENT", channel
        assert refused["error"]["details"]["field"] in ("queryText", "instruction")
    # a long selection still works: the query recall gets from it is cut, the selection itself is not
    done = bank.call("context:assemble", {"skillId": "continue", "selection": {"text": long * 5}})
    assert done["ok"] and long * 5 in done["data"]["userContent"]


class _HeldPattern:
    """A compiled key whose first scan waits for `release` (the sidecar's cancel arrives meanwhile)."""

    def __init__(self, real: Any, held: dict[str, Any]) -> None:
        self.real, self.held = real, held

    def finditer(self, text: str, timeout: float) -> Any:
        self.held["scans"] += 1
        if self.held["scans"] == 1:
            self.held["entered"].set()
            assert self.held["release"].wait(30)
        return self.real.finditer(text, timeout=timeout)


def test_the_sidecars_cancel_stops_a_check_at_the_next_key(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from membank.domains.story import regexkeys

    from .wire import Wire

    held: dict[str, Any] = {"scans": 0, "entered": threading.Event(), "release": threading.Event()}
    real = regexkeys.compile_key

    def compile_held(key: str) -> Any:
        compiled, reason, problem = real(key)
        return _HeldPattern(compiled, held), reason, problem
    monkeypatch.setattr(regexkeys, "compile_key", compile_held)
    folder = sample / ".writenow" / "world" / "slow"
    folder.mkdir()
    for i in range(50):
        (folder / f"e{i:02}.md").write_text(f"---\nname: E{i}\nkind: lore\nkeys: ['{SLOW_KEY}']\n---\nx\n", "utf-8")
    wire = Wire()
    try:
        wire.call("project:open", {"path": str(sample)})
        check = wire.send("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": "a" * 30 + "b"})
        assert held["entered"].wait(30)
        wire.cancel(check)  # the first key is running: the scan stops before the second
        held["release"].set()
        assert wire.result(check)["error"]["code"] == CANCELED
        assert held["scans"] == 1
    finally:
        held["release"].set()
        wire.close()


def test_a_fact_the_allowance_did_not_reach_is_scanned_again_by_a_later_check(bank: Bank, sample: Path) -> None:
    (sample / ".writenow" / "world" / "storm.md").write_text(
        "---\nname: The Great Storm\nkind: lore\nkeys: ['/gale[s]?\\b/i']\n---\nThe storm of '88.\n", "utf-8")
    write_memory(sample, "facts/alma.md", "The gales took the Alma in '71.", id="f-alma", type="fact")
    bank.sync()
    payload = {"documentId": "chapters/ch05.md", "text": "Then the gales came."}
    with call_allowance(0.0):  # a call whose regular-expression time is spent before it scans anything
        spent = bank.call("kg:consistency:check", payload)["data"]
    assert [s["reason"] for s in spent["skipped"]] == ["budget"] and spent["entities"] == []
    data = bank.call("kg:consistency:check", payload)["data"]
    assert [e["id"] for e in data["entities"]] == ["world/storm"] and data["skippedTotal"] == 0
    assert [(f["id"], f["entities"]) for f in data["facts"]] == [("f-alma", ["world/storm"])]


def test_a_document_too_long_to_check_is_refused_naming_it(bank: Bank, sample: Path) -> None:
    (sample / "chapters" / "whole-book.md").write_text("x" * (MAX_PASSAGE_CHARS + 1), "utf-8")
    refused = bank.call("kg:consistency:check", {"documentId": "chapters/whole-book.md"})["error"]
    assert refused["code"] == "INVALID_ARGUMENT" and refused["details"]["field"] == "documentId"
    assert "chapters/whole-book.md" in refused["message"] and "`text`" in refused["message"]
