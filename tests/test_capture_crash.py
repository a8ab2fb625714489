"""A `capture:review` killed midway (capture.md: every file of a call or none). A real process is killed
after it wrote one file of its call; the next review finishes the call (no op applied twice) and says so,
`capture:pending` shows what is waiting, and a file the writer changed in between stops the finishing and
is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import membank

from .capturekit import CRY, D, MOVE, NANNY, fresh, ok, proposed as _proposed, refused
from .helpers import membank as run

CARD = "characters/lin-daiyu.md"
NANNY_GOES = {"op": "progress", "entity": "奶娘", "state": "随黛玉进京", "evidence": "随了奶娘"}  # into the new card

KILL = """
import os, sys
import membank
from membank.domains.capture import commit
def first_then_die(writes):
    commit._put(writes[0])  # one file of the call on disk, then the process is gone
    os._exit(9)
commit._put_all = first_then_die
bank = membank.open(sys.argv[1])
print(bank.call("capture:review", {"documentId": "chapters/ch03.md", "decisions": [
    {"id": i, "decision": "accept"} for i in sys.argv[2:]]}))
"""


def _killed(root: Path, ids: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", KILL, str(root), *ids], capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr


def _texts(root: Path) -> dict[str, str]:
    wn = root / ".writenow"
    return {p.relative_to(wn).as_posix(): p.read_text("utf-8") for p in sorted(wn.rglob("*.md"))
            if not p.relative_to(wn).as_posix().startswith(("skills/", "README"))}


@pytest.fixture
def crashed(tmp_path: Path) -> tuple[Path, list[str], dict[str, str]]:
    root = tmp_path / "hlm"
    bank = fresh(root)
    try:
        ids = _proposed(bank, [MOVE, CRY, NANNY, NANNY_GOES])
    finally:
        bank.close()
    before = _texts(root)
    _killed(root, ids)
    return root, ids, before


def test_a_killed_review_is_shown_then_finished_once(crashed: tuple[Path, list[str], dict[str, str]]) -> None:
    root, ids, before = crashed
    after_crash = _texts(root)
    changed = [rel for rel in after_crash if after_crash[rel] != before.get(rel)]
    assert changed == ["characters/奶娘.md"] and after_crash[f"proposals/{D}"] == before[f"proposals/{D}"]
    bank = membank.open(root)
    try:
        waiting = ok(bank, "capture:pending", documentId=D)
        assert waiting["interrupted"] == {"applied": sorted(ids[2:]), "notApplied": sorted(ids[:2])}
        done = ok(bank, "capture:review", documentId=D)  # `membank review D --apply`: the file decided nothing
        assert done["resumed"] == {"applied": sorted(ids), "notApplied": []}
        finished = _texts(root)
        assert finished["characters/奶娘.md"] == after_crash["characters/奶娘.md"]  # not written twice
        assert finished[CARD].count("舍父进京") == before[CARD].count("舍父进京") + 1  # its progression, once
        assert finished[f"proposals/{D}"].count("- status: applied") == 4
        assert "随黛玉进京" in finished["characters/奶娘.md"]
        assert ok(bank, "kg:state", name="林黛玉", at=D)["state"] == "舍父进京"
        assert "interrupted" not in ok(bank, "capture:pending", documentId=D)
        again = refused(bank, "capture:review", documentId=D, decisions=[{"id": ids[0], "decision": "accept"}])
        assert again["code"] == "CONFLICT" and "applied already" in again["message"]
        assert _texts(root) == finished
    finally:
        bank.close()


def test_a_file_changed_since_the_crash_stops_the_finishing(crashed: tuple[Path, list[str], dict[str, str]]) -> None:
    root, ids, before = crashed
    card = root / ".writenow" / CARD
    card.write_text(card.read_text("utf-8").replace("林如海之女。", "林如海之女，体弱。"), "utf-8")  # by hand
    bank = membank.open(root)
    try:
        kept = _texts(root)
        done = ok(bank, "capture:review", documentId=D)
        assert done["resumed"] == {"applied": sorted(ids[2:]), "notApplied": sorted(ids[:2])}
        assert done["counts"] == {"applied": 0, "rejected": 0} and _texts(root) == kept
        listed = ok(bank, "capture:pending", documentId=D)
        assert "interrupted" not in listed and {i["id"] for i in listed["items"]} == set(ids)  # none recorded
        # the ops not applied are checked again against the cards as they are: they apply once
        data = ok(bank, "capture:review", documentId=D, decisions=[{"id": i, "decision": "accept"} for i in ids[:2]])
        assert data["counts"]["applied"] == 2 and "体弱" in card.read_text("utf-8")
    finally:
        bank.close()


def test_the_command_line_shows_the_interrupted_review(crashed: tuple[Path, list[str], dict[str, str]],
                                                        home: Path) -> None:
    root, ids, _ = crashed
    shown = run("review", D, cwd=root, home=home)
    assert shown.returncode == 0, shown.stderr
    assert "a review was interrupted" in shown.stdout and ids[2] in shown.stdout.split("interrupted")[1]
    applied = run("review", D, "--apply", "--json", cwd=root, home=home)
    assert json.loads(applied.stdout)["data"]["resumed"]["notApplied"] == []


def _record(root: Path) -> Path:
    (found,) = (root / ".writenow" / ".index" / "reviews").glob("*.json")
    return found


@pytest.mark.parametrize("spoil", ["torn", "outside", "wrong-type", "link"])
def test_a_spoiled_record_finishes_nothing(crashed: tuple[Path, list[str], dict[str, str]], spoil: str) -> None:
    """A record cut short by the crash itself, or one edited to write outside the bank, through a link, or
    with a value of the wrong type: dropped, nothing written from it; the ops are checked again as they are."""
    root, ids, _ = crashed
    record = _record(root)
    data = json.loads(record.read_text("utf-8"))
    outside = root.parent / "outside.md"
    if spoil == "torn":
        record.write_bytes(record.read_bytes()[:40])
    elif spoil == "outside":
        data["files"][1]["rel"] = "../../outside.md"
        record.write_text(json.dumps(data), "utf-8")
    elif spoil == "wrong-type":
        data["files"][1]["new"] = 7
        record.write_text(json.dumps(data), "utf-8")
    else:
        (root / ".writenow" / "characters" / "away").symlink_to(root.parent, target_is_directory=True)
        data["files"][1]["rel"] = "characters/away/outside.md"
        data["files"][1]["original"] = None
        record.write_text(json.dumps(data), "utf-8")
    before = _texts(root)
    bank = membank.open(root)
    try:
        assert "interrupted" not in ok(bank, "capture:pending", documentId=D)
        done = ok(bank, "capture:review", documentId=D)
        assert "resumed" not in done and done["counts"] == {"applied": 0, "rejected": 0}
        assert _texts(root) == before and not outside.exists() and not record.exists()
    finally:
        bank.close()


def test_a_record_that_cannot_be_written_writes_nothing(tmp_path: Path) -> None:
    """`.index/reviews` made a file: the record cannot be kept, so the review writes nothing (DB_ERROR)."""
    root = tmp_path / "hlm"
    bank = fresh(root)
    try:
        ids = _proposed(bank, [MOVE, CRY])
        (root / ".writenow" / ".index" / "reviews").write_text("not a folder\n", "utf-8")
        before = _texts(root)
        error = refused(bank, "capture:review", documentId=D, decisions=[{"id": i, "decision": "accept"} for i in ids])
        assert error["code"] == "DB_ERROR" and ".index/reviews" in error["message"]
        assert _texts(root) == before
        assert "interrupted" not in ok(bank, "capture:pending", documentId=D)
    finally:
        bank.close()


def test_a_review_at_work_is_not_shown_as_interrupted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`capture:pending` while another thread's review holds its record (between the record and the last
    file): a review at work, not a crash's, so nothing is reported, and pending does not wait for it."""
    import threading

    from membank.domains.capture import commit

    root = tmp_path / "hlm"
    bank = fresh(root)
    try:
        ids = _proposed(bank, [MOVE, CRY])
        inside, go = threading.Event(), threading.Event()
        real = commit._put_all

        def held(writes: list[commit.Write]) -> list[object]:
            inside.set()
            assert go.wait(60)
            return real(writes)
        monkeypatch.setattr(commit, "_put_all", held)
        answers: list[dict[str, object]] = []
        worker = threading.Thread(target=lambda: answers.append(bank.call("capture:review", {
            "documentId": D, "decisions": [{"id": i, "decision": "accept"} for i in ids]})))
        worker.start()
        assert inside.wait(60)
        assert list((root / ".writenow" / ".index" / "reviews").glob("*.json"))  # the record is there
        listed = ok(bank, "capture:pending", documentId=D)
        go.set()
        worker.join(60)
        assert "interrupted" not in listed
        assert answers[0]["ok"] and "resumed" not in answers[0]["data"]  # type: ignore[operator]
    finally:
        bank.close()


def test_a_home_that_cannot_hold_the_key_reviews_without_a_record(tmp_path: Path, home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The global bank cannot keep the machine's key (a read-only or broken home, faulted in-process): no
    seal can vouch for a record, so none is kept (it would never be finished) and the review is applied
    as before records existed, rather than refused."""
    from membank.domains.capture import intent

    real = intent.atomic_write

    def no_key(path: Path, *args: object, **kwargs: object) -> object:
        if path.name == "review.key":
            raise PermissionError(13, "read-only home", str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(intent, "atomic_write", no_key)
    root = tmp_path / "hlm"
    bank = fresh(root)
    try:
        ids = _proposed(bank, [MOVE, CRY])
        done = ok(bank, "capture:review", documentId=D, decisions=[{"id": i, "decision": "accept"} for i in ids])
        assert done["counts"]["applied"] == len(ids) and len(done["written"]) > 1
        assert not (home / ".index" / "review.key").exists()
        assert not list((root / ".writenow" / ".index" / "reviews").glob("*.json"))
        assert "interrupted" not in ok(bank, "capture:pending", documentId=D)
    finally:
        bank.close()


def test_a_proposal_file_decided_by_hand_since_the_crash_stops_the_finishing(
        crashed: tuple[Path, list[str], dict[str, str]]) -> None:
    """The writer rejects an op in the proposal file after the crash: the killed call's cards are not
    written over that decision (the proposal file is one of the call's files, capture.md)."""
    root, ids, before = crashed
    proposal = root / ".writenow" / "proposals" / D
    text = proposal.read_text("utf-8")
    head, tail = text.split(ids[0], 1)
    proposal.write_text(head + ids[0] + tail.replace("- status: pending", "- status: rejected", 1), "utf-8")
    bank = membank.open(root)
    try:
        done = ok(bank, "capture:review", documentId=D)
        assert done["resumed"] == {"applied": sorted(ids[2:]), "notApplied": sorted(ids[:2])}
        assert _texts(root)[CARD] == before[CARD]  # the rejected op (and its companion) not written
    finally:
        bank.close()


def test_a_record_copied_into_another_project_finishes_nothing_there(crashed: tuple[Path, list[str], dict[str, str]],
                                                                    tmp_path: Path) -> None:
    """The seal binds the record to its project and chapter: the killed review's project copied whole (its
    `.index/` too) finishes nothing in the copy, where the ops are checked again; the original still does."""
    import shutil

    root, ids, _ = crashed
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    bank = membank.open(copy)
    try:
        assert "interrupted" not in ok(bank, "capture:pending", documentId=D)
        assert "resumed" not in ok(bank, "capture:review", documentId=D)
    finally:
        bank.close()
    bank = membank.open(root)
    try:
        assert ok(bank, "capture:pending", documentId=D)["interrupted"]["applied"] == sorted(ids[2:])
    finally:
        bank.close()


KILLED_AFTER = """
import os, sys
import membank
from membank.domains.capture import intent
def die(path):
    os._exit(9)  # every file of the call written, the proposal file too; the record not deleted yet
intent.drop = die
bank = membank.open(sys.argv[1])
print(bank.call("capture:review", {"documentId": "chapters/ch03.md", "decisions": [
    {"id": i, "decision": "accept"} for i in sys.argv[2:]]}))
"""


def test_a_review_killed_after_its_last_file_is_not_reported_as_finished_later(tmp_path: Path) -> None:
    """Killed once every file was written, before its record went (or a record of a call that was over,
    copied back): nothing is left to finish, so the next review says nothing was `resumed` and `capture:pending`
    shows nothing `interrupted`; the record goes, and the cards stay as the call wrote them."""
    root = tmp_path / "hlm"
    bank = fresh(root)
    try:
        ids = _proposed(bank, [MOVE, CRY])
    finally:
        bank.close()
    done = subprocess.run([sys.executable, "-c", KILLED_AFTER, str(root), *ids], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 9, done.stderr
    after = _texts(root)
    assert after[f"proposals/{D}"].count("- status: applied") == 2
    assert list((root / ".writenow" / ".index" / "reviews").glob("*.json"))  # the record was left
    bank = membank.open(root)
    try:
        assert "interrupted" not in ok(bank, "capture:pending", documentId=D)
        assert "resumed" not in ok(bank, "capture:review", documentId=D)
        assert _texts(root) == after
        assert not list((root / ".writenow" / ".index" / "reviews").glob("*.json"))
        assert ok(bank, "kg:state", name="林黛玉", at=D)["state"] == "舍父进京"
    finally:
        bank.close()
