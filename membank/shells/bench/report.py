"""A bench run's result: the rows with the machine they ran on, as JSON or as a Markdown table."""

from __future__ import annotations

import os
import platform
from dataclasses import asdict, dataclass
from importlib import metadata
from typing import Any

from .corpus import Corpus
from .options import Options
from .rows import Row, fmt


@dataclass
class Result:
    rows: list[Row]
    options: Options
    started: str
    took_s: float
    corpus: dict[str, Any]
    machine: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"membank": _version(), "date": self.started, "tookS": round(self.took_s, 1), "quick": self.options.quick,
                "options": asdict(self.options), "machine": self.machine, "busy": busy(self.machine),
                "corpus": self.corpus, "rows": [r.to_json() for r in self.rows]}


def _version() -> str:
    # from the installed distribution: a shell may not import the package's facade, where __version__ is
    try:
        return metadata.version("membank")
    except metadata.PackageNotFoundError:
        return "unknown"


def machine() -> dict[str, Any]:
    """What the figures depend on: CPU, cores, memory, Python, SQLite, and the load right now."""
    import apsw

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            mem = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"loadAverage": load, "python": platform.python_version(), "platform": platform.platform(), "cpu": cpu,
            "cores": os.cpu_count(), "memoryGiB": mem, "sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version()}


BENCH_LOAD = 1.0  # the bench's own share of the load average at its end: one busy core, most of the run


def busy(machine: dict[str, Any]) -> str | None:
    """Why the figures cannot be trusted, or None: other work kept more than a quarter of the cores
    (at least half a core) busy before the run (the 1-minute load at the start) or during it (at the
    end, less the bench's own core). Such a run's p95s show the other work, not membank."""
    cores = machine.get("cores") or 1
    allowed = max(0.5, cores / 4)
    start, end = machine.get("loadAverageAtStart"), machine.get("loadAverage")
    found = []
    if start and start[0] > allowed:
        found.append(f"{start[0]:g} at the start")
    if end and end[0] - BENCH_LOAD > allowed:
        found.append(f"{end[0]:g} at the end, the bench's own {BENCH_LOAD:g} included")
    if not found:
        return None
    return (f"the machine was busy with other work (1-minute load average {' and '.join(found)}, on {cores} cores): "
            "these figures, the p95s most of all, may be slower than the machine can do; run again when it is idle")


def corpus_json(c: Corpus) -> dict[str, Any]:
    return {"files": c.files, "memories": c.memories, "characters": c.characters, "world": c.world,
            "chinese": c.chinese, "megabytes": round(c.bytes / 1e6, 2), "generatedS": round(c.took_s, 2)}


def table(result: Result, before: dict[str, Any] | None = None) -> str:
    """The figures as a Markdown table (it pastes into docs/performance.md as it is)."""
    old = {r["key"]: r for r in (before or {}).get("rows", [])}
    head = ["what", "files", "n", "median", "p95", "target", "met"] + (["before (median / p95)"] if before else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    notes: list[str] = []
    for r in result.rows:
        unit = f" {r.unit}" if r.samples else ""
        met = {True: "yes", False: "**no**", None: "—"}[r.met]
        what = r.what
        if r.note:
            notes.append(r.note)
            what += f" ({len(notes)})"
        cells = [what, f"{r.size:,}" if r.size else "—", str(r.n), fmt(r.median, r.unit) + unit,
                 fmt(r.p95, r.unit) + unit if r.n > 1 else "—", r.target_text or "—", met]
        if before:
            o = old.get(r.key)
            cells.append(f"{fmt(o['median'], r.unit)} / {fmt(o['p95'], r.unit)}" if o else "—")
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.extend(f"({i}) {note}" for i, note in enumerate(notes, start=1))
    mode = "quick" if result.options.quick else "full"
    m = result.machine
    lines.append("")
    lines.append(f"{mode} run, {result.started}, {result.took_s:.0f} s; {m['cpu']}, {m['cores']} cores, "
                 f"{m['memoryGiB']} GiB, Python {m['python']}, SQLite {m['sqlite']}; load average "
                 f"{m.get('loadAverageAtStart')} at the start, {m.get('loadAverage')} at the end (other work on the "
                 "machine shows up in the p95)")
    warning = busy(m)
    if warning is not None:
        lines.append("")
        lines.append(f"**Warning: {warning}.**")
    return "\n".join(lines)
