"""The bench's hostile-lorebook rows (quality.md): 400 world entries keyed `/(a|a)+$/` (catastrophic
backtracking) and one keyed `/(?:(?:a{100}){100}){400}/` (a gigabyte to compile) added to the sample
project. `context:assemble` and `kg:consistency:check` over text those keys choke on are timed without
the lorebook, then with it: the rows are what it adds (p95 ≤ 100 ms) and the resident memory it adds
(VmRSS, ≤ 50 MB). The regular expressions of a call share 50 ms (domains/story/regexkeys.py)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any, Callable

from ...runtime.api import open_project
from .rows import Row

ENTRIES = 400
SLOW_KEY = "/(a|a)+$/"
GIGABYTE_KEY = "/(?:(?:a{100}){100}){400}/"
CHOKE = "The gulls cried " + "a" * 40 + "b"  # 2**40 ways for each slow key to fail


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _timed(call: Callable[[], Any], reps: int) -> list[float]:
    out = []
    for _ in range(reps):
        started = time.perf_counter()
        call()
        out.append((time.perf_counter() - started) * 1000)
    return out


def hostile_rows(sample: Path, tmp: Path, reps: int = 30) -> list[Row]:
    project = tmp / "hostile-lorebook"
    shutil.copytree(sample, project, ignore=shutil.ignore_patterns(".index"))
    bank = open_project(project)
    note = (f"{ENTRIES} entries keyed {SLOW_KEY} and one keyed {GIGABYTE_KEY}, over text they choke on; the "
            "figure is what the lorebook adds to the same call without it")
    assemble = Row("hostile_assemble", f"a hostile lorebook ({ENTRIES} catastrophic keys) in context:assemble", "ms",
                   ENTRIES, target=100, target_text="≤ 100 ms added", note=note)
    check = Row("hostile_check", f"a hostile lorebook ({ENTRIES} catastrophic keys) in kg:consistency:check", "ms",
                ENTRIES, target=100, target_text="≤ 100 ms added", note=note)
    rss = Row("hostile_rss", "a hostile lorebook: resident memory added", "MB", ENTRIES, target=50,
              target_text="≤ 50 MB added", note="VmRSS after the calls with it, less after the calls without it")
    try:
        payload = {"skillId": "continue", "documentText": f"{CHOKE}\n\n{CHOKE}",
                   "selection": {"text": CHOKE}, "instruction": CHOKE}

        def assembled() -> Any:
            return bank.call("context:assemble", payload)

        def checked() -> Any:
            return bank.call("kg:consistency:check", {"documentId": "chapters/ch05.md", "text": CHOKE * 20})

        _timed(assembled, 3), _timed(checked, 3)
        without = (_timed(assembled, reps), _timed(checked, reps))
        before = _rss_mb()
        folder = project / ".writenow" / "world" / "hostile"
        folder.mkdir(parents=True)
        for i in range(ENTRIES):
            (folder / f"e{i:03}.md").write_text(f"---\nname: Entry {i}\nkind: lore\nkeys: ['{SLOW_KEY}']\n---\n"
                                                "Never.\n", "utf-8")
        (folder / "boom.md").write_text(f"---\nname: Boom\nkind: lore\nkeys: ['{GIGABYTE_KEY}']\n---\nBoom.\n",
                                        "utf-8")
        bank.sync()
        _timed(assembled, 3), _timed(checked, 3)  # the matcher built once per generation of the cards
        for row, base, call in ((assemble, without[0], assembled), (check, without[1], checked)):
            median = sorted(base)[len(base) // 2]
            row.samples.extend(t - median for t in _timed(call, reps))
        rss.samples.append(max(0.0, _rss_mb() - before))
    finally:
        bank.close()
        shutil.rmtree(project, ignore_errors=True)
    return [assemble, check, rss]
