"""An editor saving a memory file every few milliseconds while membank updates it: are saves lost?

Shared by tests/test_editor_race.py (a short run) and scripts/adversarial_saves.py (a long one)."""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from membank import Bank
from membank.kernel.errors import CONFLICT, MembankError

_SAVE = re.compile(r"^save (\d+)$", re.MULTILINE)


@dataclass
class Figures:
    saves: int = 0
    updates_ok: int = 0
    conflicts: int = 0
    lost: int = 0


def _body_number(text: str) -> int:
    found = _SAVE.findall(text)
    return int(found[-1]) if found else -1


def race(bank: Bank, project_root: Path, seconds: float, interval: float = 0.005) -> Figures:
    """Run for `seconds`. Each editor save has a unique body number; before each save the
    editor reads the file and checks its previous save is still there. Membank's copy of an older
    body showing there is a candidate loss; it counts once no update is in flight (a swap that is
    being undone may show membank's copy for a moment)."""
    memory = bank.create_memory("note", "project", "save 0")
    path = project_root / memory["source"]
    figures = Figures()
    stop = threading.Event()
    updating = threading.Lock()  # held by the updater around each call: "an update is in flight"
    failure: list[BaseException] = []

    def editor() -> None:
        try:
            number = 0
            while not stop.is_set():
                text = path.read_text("utf-8")
                if _body_number(text) < number:
                    with updating:  # wait for the update in flight to finish, then look again
                        text = path.read_text("utf-8")
                    if _body_number(text) < number:
                        figures.lost += 1
                number += 1
                tmp = path.parent / f".{path.name}.editor-{number}.tmp"
                tmp.write_text(_SAVE.sub(f"save {number}", text), "utf-8")
                os.replace(tmp, path)  # how vim, VS Code and gedit save
                figures.saves = number
                stop.wait(interval)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            failure.append(e)

    thread = threading.Thread(target=editor, daemon=True)
    thread.start()
    started = time.monotonic()
    n = 0
    try:
        while not failure:
            took = time.monotonic() - started
            if took >= seconds and ((figures.saves and figures.updates_ok + figures.conflicts) or took >= 30 * seconds):
                break  # the time is up and both sides have acted: a stalled thread cannot make the race vacuous
            n += 1
            with updating:
                try:
                    bank.update_memory(memory["id"], {"tags": [f"t{n}"]})
                    figures.updates_ok += 1
                except MembankError as e:
                    if e.code != CONFLICT:
                        raise
                    figures.conflicts += 1
    finally:
        stop.set()
        thread.join()
    if failure:
        raise failure[0]
    return figures
