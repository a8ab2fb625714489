"""A trace's way into the bank is looked at again on every append (files/journal.py): once the folders
are made, a link or a file put where a folder or the month's file was is refused the next time, as the
first append would have refused it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from membank.files import journal
from membank.files.write import LeavesBank, LinkInBank
from membank.kernel.errors import MembankError

AT = "2026-11-27T21:00:00.000000Z"


def _append(bank: Path) -> str:
    return journal.append(bank, {"event": "run", "at": AT}, durable=False, folder=journal.TRACES)


def test_a_trace_appends_then_a_folder_linked_out_is_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    rel = _append(bank)
    _append(bank)
    assert len((bank / rel).read_text("utf-8").splitlines()) == 2
    outside = tmp_path / "outside"
    shutil.move(bank / journal.TRACES, outside)
    (bank / journal.TRACES).symlink_to(outside, target_is_directory=True)
    with pytest.raises(LeavesBank):
        _append(bank)
    assert len((outside / rel.rsplit("/", 1)[1]).read_text("utf-8").splitlines()) == 2


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_link_in_the_bank_where_the_month_or_its_folder_was_is_refused(tmp_path: Path, where: str) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    rel = _append(bank)
    target = bank / rel if where == "file" else bank / journal.TRACES
    twin = target.with_name(target.name + ".real")
    os.rename(target, twin)
    target.symlink_to(twin)
    with pytest.raises(LinkInBank):
        _append(bank)


def test_a_file_where_the_traces_folder_was_is_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    _append(bank)
    shutil.rmtree(bank / journal.TRACES)
    (bank / journal.TRACES).write_bytes(b"")
    with pytest.raises(OSError):
        _append(bank)
    assert (bank / journal.TRACES).read_bytes() == b""


def test_a_month_file_with_a_second_name_or_a_fifo_is_refused(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    rel = _append(bank)
    os.link(bank / rel, tmp_path / "second-name")
    with pytest.raises(MembankError):
        _append(bank)
    os.remove(bank / rel)
    os.mkfifo(bank / rel)
    with pytest.raises(MembankError):
        _append(bank)


def test_a_windows_junction_on_the_way_takes_the_full_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On Windows `lstat` reports a junction as a plain folder (with a reparse tag): one leading out of the
    bank must be refused as a link is. Faked here: the traces folder carries a reparse tag and resolves
    outside the bank."""
    bank = tmp_path / "bank"
    bank.mkdir()
    _append(bank)
    outside = tmp_path / "outside"
    outside.mkdir()
    traces = str(bank / journal.TRACES)
    real_lstat, real_realpath = os.lstat, os.path.realpath

    class Junction:
        def __init__(self, st: os.stat_result):
            self.st_mode, self.st_reparse_tag = st.st_mode, 0xA0000003  # IO_REPARSE_TAG_MOUNT_POINT

    def lstat(path: object, *args: object, **kwargs: object) -> object:
        st = real_lstat(path, *args, **kwargs)  # type: ignore[arg-type]
        return Junction(st) if os.fspath(path) == traces else st  # type: ignore[arg-type]

    def realpath(path: object, *args: object, **kwargs: object) -> str:
        text = os.fspath(path)  # type: ignore[arg-type]
        if text == traces or text.startswith(traces + os.sep):
            text = str(outside) + text[len(traces):]
        return real_realpath(text, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(journal.os, "lstat", lstat)
    monkeypatch.setattr(os.path, "realpath", realpath)
    with pytest.raises(LeavesBank):
        _append(bank)
