"""`membank bench`: every performance target in quality.md, measured on a seeded corpus, in one table.

The runner lives in the package (not in the repository's `benchmarks/`) so that `membank bench`
works wherever membank is installed; `python -m benchmarks` in a checkout calls the same `main`.
Two measurements need code from elsewhere and say so in their row when it is missing:

- the watcher row uses `membank.shells.watch.Watcher` (a real watchdog observer on the real files);
- the sidecar rows start a real `membank serve` process through `benchmarks/sidecar.py` in a
  checkout of the repository (found next to the package, or with `--repo`).

Everything runs in a temporary folder (deleted afterwards) with `WRITENOW_HOME` pointing into it,
so the writer's global bank is never touched. The corpus is generated from a fixed seed: every run
sees the same files. See docs/performance.md for the figures and what they mean.
"""

from __future__ import annotations

import gc
import importlib
import json
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

SEED = 20261121

# -- the corpus --------------------------------------------------------------------------------------

# Topic clusters: each memory mostly draws from one, so semantic queries have real neighbours.
_TOPICS: dict[str, list[str]] = {
    "sea": "sea tide wave harbour ship wreck salt gull storm shore cliff anchor sail deck current fog "
           "lighthouse beacon lamp keeper rocks reef drown boat fisherman net".split(),
    "sword": "sword blade duel fight wound scar steel hilt strike parry enemy ambush blood bandage "
             "swordsman training guard lunge retreat courage fear honour".split(),
    "family": "father mother sister brother daughter son family grief secret letter promise home "
              "childhood memory funeral inheritance debt marriage quarrel forgive".split(),
    "style": "sentence adjective verb dialogue paragraph rhythm tone voice tense clause metaphor "
             "cliche pacing chapter scene description point view narrator prose short".split(),
    "politics": "council town mayor harbourmaster money vote power bribe church schoolhouse smuggler "
                "law court judge trial witness rumour market trade tax guild".split(),
    "night": "night dark moon candle shadow silence dream sleep dawn window cold wind rain thunder "
             "lantern whisper midnight stars cloud frost".split(),
}
_COMMON = ("the a and of to in he she they was is never always before after when because while only "
           "still again through across under over her his their with without into from must should "
           "keep avoid prefer use write show tell remember").split()
_CJK_TOPICS: dict[str, str] = {
    "sea": "海潮浪船港盐鸥风暴岸崖锚帆雾灯塔礁渔网沉",
    "sword": "剑刃斗伤疤钢柄击敌伏血绷带练守退勇怕荣",
    "family": "父母姐妹兄弟女儿子家悲密信诺童年忆葬债婚吵恕",
    "style": "句形容词动对话段节奏语气声时态比喻叙述视角章场景短",
    "politics": "议会镇长钱票权贿教堂学走私法庭审证谣市贸税",
    "night": "夜暗月烛影静梦睡晨窗冷风雨雷灯笼星云霜",
}
_CJK_COMMON = "的了在是我有他她这们中来上大为和国地到以说时要就出会可也你对生能而子那得于着下自之年过发后作里用道行所然家种事成方多经么去法学如都同现当没动面起看定天分还进好小部其些主样理心"
_EN_NAMES = ["Maren Voss", "Edric Thorne", "Ada Brisk", "Tomas Hale", "Ines Marl", "Corin Dusk", "Wren Ashby",
             "Hollis Grey", "Petra Lund", "Osric Vane", "Lena Frost", "Bram Keel"]
_ZH_NAMES = ["林默", "苏瑶", "陈远", "白露", "沈青", "顾北", "叶寒", "萧然", "楚歌", "江离", "温言", "秦川"]
_TAGS = ["style", "tone", "pacing", "dialogue", "plot", "continuity", "character", "setting", "lore", "voice",
         "chapter", "draft", "research", "theme", "names"]
_FOLDERS = {"preference": ["preferences", "preferences/style", "preferences/dialogue"],
            "fact": ["facts", "facts/people", "facts/places", "facts/timeline"],
            "note": ["notes", "notes/drafts", "notes/research"],
            "thread": ["threads"], "idea": ["ideas"]}
_TYPE_WEIGHTS = [("preference", 25), ("fact", 30), ("note", 30), ("thread", 8), ("idea", 7)]

QUERIES = [
    "how does Maren feel about the sea", "the wound from the sword fight", "short sentences in action scenes",
    "who controls the harbour council", "the storm that wrecked the ship", "her father's secret letter",
    "avoid adjectives in dialogue", "lighthouse keeper at night", "the smuggler's bribe and the mayor",
    "pacing of chapter five", "grief after the funeral", "the tide under the cliff", "candle light and shadow",
    "林默的伤势如何", "海上的风暴", "父亲的秘密", "林默和苏瑶的对话", "夜里的灯塔", "镇长和走私", "剑客的伤疤",
    "what is the tone of the narrator", "the debt between the brothers", "fog over the reef", "a duel at dawn",
]


@dataclass(frozen=True)
class Corpus:
    root: Path  # the project folder
    files: int  # memory, character and world files written (the template's few not counted)
    memories: int
    characters: int
    world: int
    chinese: int
    bytes: int
    took_s: float


def _words(rng: random.Random, topic: str, n: int) -> list[str]:
    pool = _TOPICS[topic]
    return [rng.choice(pool) if rng.random() < 0.6 else rng.choice(_COMMON) for _ in range(n)]


def _english(rng: random.Random, topic: str, chars: int) -> str:
    sentences: list[str] = []
    length = 0
    while length < chars:
        words = _words(rng, topic, rng.randint(6, 16))
        if rng.random() < 0.2:
            words[rng.randrange(len(words))] = rng.choice(_EN_NAMES)
        s = " ".join(words)
        s = s[0].upper() + s[1:] + rng.choice(".....;!?")
        sentences.append(s)
        length += len(s) + 1
    text = " ".join(sentences)
    return text[:chars].rsplit(" ", 1)[0].rstrip(".;!?,") + "."


def _chinese(rng: random.Random, topic: str, chars: int) -> str:
    pool, out, n = _CJK_TOPICS[topic], [], 0
    while n < chars:
        k = rng.randint(8, 20)
        sentence = "".join(rng.choice(pool) if rng.random() < 0.5 else rng.choice(_CJK_COMMON) for _ in range(k))
        if rng.random() < 0.3:
            sentence = rng.choice(_ZH_NAMES) + sentence
        out.append(sentence + rng.choice("。。。，！？"))
        n += len(out[-1])
    return "".join(out)[:chars]


def _stamp(rng: random.Random, start: int = 1735689600, span: int = 60_000_000) -> tuple[int, str]:
    t = start + rng.randrange(span)
    return t, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _memory_file(rng: random.Random, i: int, chinese: bool) -> tuple[str, str]:
    """(path under memories/, file text) for memory number `i`."""
    mtype = rng.choices([t for t, _ in _TYPE_WEIGHTS], [w for _, w in _TYPE_WEIGHTS])[0]
    topic = rng.choice(list(_TOPICS))
    length = rng.randint(180, 420)  # ~300 characters on average
    body = _chinese(rng, topic, length) if chinese else _english(rng, topic, length)
    folder = rng.choice(_FOLDERS[mtype])
    rel = f"{folder}/{topic}-{i:06d}.md"
    created_t, created = _stamp(rng)
    _, updated = _stamp(rng, created_t, 3_000_000)
    tags = rng.sample(_TAGS, rng.randint(0, 3))
    doc_scope = rng.random() < 0.1
    lines = ["---"]
    if rng.random() < 0.75:  # written by membank (or the app): every key, explicit id
        lines += [f"id: m-{i:012d}", f"type: {mtype}", f"scope: {'document' if doc_scope else 'project'}"]
        if doc_scope:
            lines.append(f"document: chapters/ch{rng.randint(1, 40):02d}.md")
        learned = rng.random() < 0.08
        lines += [f"origin: {'learned' if learned else 'manual'}",
                  f"confidence: {round(rng.uniform(0.5, 1.0), 2) if learned else 1.0}",
                  f"tags: [{', '.join(tags)}]",
                  f"evidence: [{', '.join(f'run-{rng.randrange(10000):04d}' for _ in range(3))}]" if learned
                  else "evidence: []",
                  f"created: {created}", f"updated: {updated}", f"revision: {rng.randint(1, 6)}",
                  f"deleted_at: {updated if rng.random() < 0.02 else 'null'}",
                  f"pinned: {'true' if rng.random() < 0.03 else 'false'}"]
    else:  # hand-written: fewer keys, comments, sometimes no id
        if rng.random() < 0.5:
            lines.append(f"id: hand-{i:06d}")
        lines.append(f"type: {mtype}   # written by hand")
        if doc_scope:
            lines += ["scope: document", f"document: chapters/ch{rng.randint(1, 40):02d}.md"]
        if tags:
            lines.append("tags:")
            lines += [f"  - {t}" for t in tags]
        lines.append(f"updated: {updated}")
    if rng.random() < 0.05:
        lines.append(f"mood: {rng.choice(['tense', 'calm', 'bleak', 'warm'])}   # a key membank does not know")
    lines.append("---")
    return rel, "\n".join(lines) + "\n" + body + "\n"


def _card_file(rng: random.Random, i: int, section: str, chinese: bool) -> tuple[str, str]:
    topic = rng.choice(list(_TOPICS))
    if section == "characters":
        base = rng.choice(_ZH_NAMES if chinese else _EN_NAMES)
        name, kind = f"{base} {i}", "character"
        rel = f"{'cast' if i % 2 else 'minor'}/person-{i:06d}.md"
    else:
        name, kind = f"{rng.choice(['Saltmere', 'Harrowby', 'Greyreach', '齿岩', '听潮'])} {i}", \
            rng.choice(["place", "rule", "item", "faction", "lore", "style", "other"])
        rel = f"{kind}/entry-{i:06d}.md"
    text = _chinese if chinese else _english
    summary = text(rng, topic, 40 if not chinese else 15)
    body = text(rng, topic, rng.randint(200, 400))
    others = rng.sample(_ZH_NAMES + _EN_NAMES, 2)
    lines = ["---", f"name: {name}", f"kind: {kind}", f"aliases: [{others[0]}]", "keys: []", "include: auto",
             f"summary: {json.dumps(summary, ensure_ascii=False)}"]
    if section == "characters":
        ch = rng.randint(1, 40)
        lines += [f"state: {json.dumps(text(rng, topic, 30 if not chinese else 10), ensure_ascii=False)}",
                  f"state_at: chapters/ch{ch:02d}.md", "relations:",
                  f"  - {{to: {others[1]}, type: {rng.choice(['ally', 'enemy', 'debt', 'kin'])}, since: chapters/ch{ch:02d}.md}}",
                  "progressions:   # oldest first",
                  f"  - {{at: chapters/ch{max(1, ch - 3):02d}.md, state: arrives}}",
                  f"  - {{at: chapters/ch{ch:02d}.md, state: changes}}"]
    _, updated = _stamp(rng)
    lines += [f"updated: {updated}", "---"]
    return rel, "\n".join(lines) + "\n" + body + "\n"


def generate(folder: Path, files: int, seed: int = SEED) -> Corpus:
    """A project in `folder` with `files` memory, character and world files (5% cards, a tenth in Chinese).

    Plain writes, no fsync: this is test data in a temporary folder."""
    from ..files import project as project_files

    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    project_files.init(folder, "bench")
    bank = folder / ".writenow"
    rng = random.Random(seed)
    n_chars = max(1, files * 3 // 100)
    n_world = max(1, files * 2 // 100)
    n_mem = files - n_chars - n_world
    made: set[Path] = set()
    total_bytes = chinese = 0
    plan: list[tuple[str, int]] = ([("memories", i) for i in range(n_mem)] + [("characters", i) for i in range(n_chars)]
                                    + [("world", i) for i in range(n_world)])
    for section, i in plan:
        zh = rng.random() < 0.1
        chinese += zh
        if section == "memories":
            rel, text = _memory_file(rng, i, zh)
        else:
            rel, text = _card_file(rng, i, section, zh)
        path = bank / section / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        data = text.encode("utf-8")
        with open(path, "wb") as f:
            f.write(data)
        total_bytes += len(data)
    return Corpus(folder, files, n_mem, n_chars, n_world, chinese, total_bytes, time.perf_counter() - started)


# -- figures -----------------------------------------------------------------------------------------


@dataclass
class Row:
    key: str  # stable name for --json comparisons
    what: str
    unit: str  # "ms", "files/s", "MB", "s"
    size: int | None  # files in the corpus it ran on
    samples: list[float] = field(default_factory=list)
    target: float | None = None
    higher_is_better: bool = False
    note: str = ""
    target_text: str = ""

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def median(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None

    @property
    def p95(self) -> float | None:
        """Nearest rank; for a rate (higher is better) the slow end: 95% of runs were at least this fast."""
        if not self.samples:
            return None
        ordered = sorted(self.samples, reverse=self.higher_is_better)
        return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]

    @property
    def met(self) -> bool | None:
        if self.target is None or not self.samples:
            return None
        # rates and sizes are judged on the median (one cold run is one figure); latencies on p95
        figure = self.median if self.unit in ("files/s", "MB") else self.p95
        assert figure is not None
        return figure >= self.target if self.higher_is_better else figure <= self.target

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "what": self.what, "unit": self.unit, "size": self.size, "n": self.n,
                "median": _r(self.median), "p95": _r(self.p95), "min": _r(min(self.samples, default=None)),
                "max": _r(max(self.samples, default=None)), "target": self.target, "targetText": self.target_text,
                "higherIsBetter": self.higher_is_better, "met": self.met, "note": self.note}


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 3)


def _fmt(x: float | None, unit: str) -> str:
    if x is None:
        return "—"
    if unit == "files/s":
        return f"{x:,.0f}"
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _say(quiet: bool, message: str) -> None:
    if not quiet:
        sys.stderr.write(f"[bench {time.strftime('%H:%M:%S')}] {message}\n")
        sys.stderr.flush()


# -- the measurements --------------------------------------------------------------------------------


@dataclass
class Options:
    size: int = 10_000
    large: int = 100_000
    quick: bool = False
    seed: int = SEED
    previews: int = 200
    creates: int = 50
    syncs: int = 20
    one_file: int = 50
    watcher: int = 30
    sidecar: int = 500
    cold_runs: int = 3
    keep: bool = False
    quiet: bool = False
    repo: Path | None = None

    @classmethod
    def quick_run(cls, **kw: Any) -> "Options":
        base = dict(size=2_000, large=10_000, quick=True, previews=100, creates=30, syncs=10, one_file=30,
                    watcher=10, sidecar=200, cold_runs=1)
        base.update({k: v for k, v in kw.items() if v is not None})
        return cls(**base)


@dataclass
class Result:
    rows: list[Row]
    options: Options
    started: str
    took_s: float
    corpus: dict[str, Any]
    machine: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        opts = asdict(self.options)
        opts["repo"] = None
        return {"membank": _version(), "date": self.started, "tookS": round(self.took_s, 1), "quick": self.options.quick,
                "options": opts, "machine": self.machine, "corpus": self.corpus,
                "rows": [r.to_json() for r in self.rows]}


def _version() -> str:
    from .. import __version__
    return __version__


def _machine() -> dict[str, Any]:
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
    import apsw
    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    return {"loadAverage": load, "python": platform.python_version(), "platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(),
            "memoryGiB": mem, "sqlite": apsw.sqlite_lib_version(), "apsw": apsw.apsw_version()}


def _rel_files(corpus: Corpus) -> list[str]:
    base = corpus.root / ".writenow"
    return sorted(p.relative_to(base).as_posix() for p in (base / "memories").rglob("*.md"))


def _open_bank(root: Path) -> Any:
    from ..runtime.project import Bank
    return Bank(root)


def _cold_index(corpus: Corpus, runs: int, quiet: bool) -> tuple[Row, Any, dict[str, Any]]:
    """Delete the index and sync from nothing: reading, parsing, embedding, writing. The model is already loaded."""
    row = Row("cold_index", "cold index (read, parse, embed, write)", "files/s", corpus.files, target=2000,
              higher_is_better=True, target_text="≥ 2,000 files/s")
    bank = None
    report: dict[str, Any] = {}
    for i in range(runs):
        if bank is not None:
            bank.close()
        shutil.rmtree(corpus.root / ".writenow" / ".index", ignore_errors=True)
        gc.collect()
        bank = _open_bank(corpus.root)
        started = time.perf_counter()
        report = bank.sync()
        took = time.perf_counter() - started
        row.samples.append(corpus.files / took)
        _say(quiet, f"cold index {i + 1}/{runs}: {corpus.files} files in {took:.2f} s ({corpus.files / took:,.0f} files/s)")
    return row, bank, report


def _noop_sync(bank: Any, size: int, reps: int) -> Row:
    row = Row("noop_sync", "no-op sync (stat only)", "ms", size, target=250, target_text="≤ 250 ms")
    bank.sync()
    gc.collect()
    for _ in range(reps):
        row.samples.append(_timed(bank.sync))
    return row


def _one_file(bank: Any, corpus: Corpus, reps: int, rng: random.Random) -> tuple[Row, Row]:
    """A memory file edited on disk, then the index brought level: the named file (as the watcher and the
    channels do), and a full sync that has to find it (stat scan + one re-read)."""
    from ..domains.indexing.sync import sync_paths

    named = Row("one_file_sync", "one file changed, then sync (the named file)", "ms", corpus.files, target=20,
                target_text="≤ 20 ms")
    full = Row("one_file_full_sync", "one file changed, then full sync (scan finds it)", "ms", corpus.files,
               note="no target: the watcher and writes sync the named file")
    rels = _rel_files(corpus)
    base = corpus.root / ".writenow"

    def edit(rel: str) -> None:
        path = base / rel
        text = path.read_text("utf-8")
        path.write_text(text.rstrip("\n") + f" {rng.choice(_TOPICS['night'])}.\n", encoding="utf-8")

    gc.collect()
    for i in range(reps):
        rel = rng.choice(rels)
        edit(rel)

        def run() -> None:
            with bank.write_lock:
                report = sync_paths(bank.index, bank.project, [rel], bank.embedder)
            assert report.updated == 1, report
        named.samples.append(_timed(run))
        if i < max(5, reps // 5):
            edit(rng.choice(rels))
            full.samples.append(_timed(bank.sync))
    return named, full


def _dispatch(bank: Any) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    from ..runtime.catalog import Registry, dispatch

    registry = Registry(bank.home)
    registry.banks[bank.info.id] = bank

    def call(channel: str, payload: dict[str, Any]) -> dict[str, Any]:
        envelope = dispatch(registry, channel, payload)
        if not envelope["ok"]:
            raise RuntimeError(f"{channel} failed: {envelope['error']}")
        return envelope["data"]  # type: ignore[no-any-return]
    return call


def _previews(bank: Any, size: int, reps: int, semantic: bool, rng: random.Random, key: str, target: float | None) -> Row:
    """`memory:injection:preview` through the channel table; half with a document, half without."""
    call = _dispatch(bank)
    mode = "semantic" if semantic else "deterministic"
    what = f"injection preview, {mode}" + (" (query embedding included)" if semantic else "")
    row = Row(key, what, "ms", size, target=target, target_text=f"p95 ≤ {target:g} ms" if target else "")
    payloads = []
    for i in range(reps):
        p: dict[str, Any] = {}
        if semantic:
            p["queryText"] = QUERIES[i % len(QUERIES)]
        if i % 2:
            p["documentId"] = f"chapters/ch{rng.randint(1, 40):02d}.md"
        payloads.append(p)
    for p in payloads[:5]:  # warm: the model's first call, the reader's first statements
        call("memory:injection:preview", p)
    gc.collect()
    for p in payloads:
        started = time.perf_counter()
        data = call("memory:injection:preview", p)
        row.samples.append((time.perf_counter() - started) * 1000)
        if data["mode"] != mode:
            raise RuntimeError(f"the preview ran in {data['mode']} mode, not {mode}: {data['diagnostics']['reasons']}")
    return row


def _semantic_after_write(bank: Any, corpus: Corpus, reps: int, rng: random.Random) -> Row:
    """The first semantic preview after a memory file changed: it pays for reloading the in-memory vectors."""
    from ..domains.indexing.sync import sync_paths

    call = _dispatch(bank)
    row = Row("preview_semantic_after_write", "injection preview, semantic, first one after a file changed", "ms",
              corpus.files,
              note="no target of its own: the in-memory vectors are patched after each change (docs/performance.md)")
    rels = _rel_files(corpus)
    base = bank.project.path
    gc.collect()
    for i in range(reps):
        rel = rng.choice(rels)
        path = base / rel
        path.write_text(path.read_text("utf-8").rstrip("\n") + " lantern.\n", encoding="utf-8")
        with bank.write_lock:
            sync_paths(bank.index, bank.project, [rel], bank.embedder)
        started = time.perf_counter()
        data = call("memory:injection:preview", {"queryText": QUERIES[i % len(QUERIES)]})
        row.samples.append((time.perf_counter() - started) * 1000)
        if data["mode"] != "semantic":
            raise RuntimeError("the preview did not run in semantic mode")
    return row


def _creates(bank: Any, size: int, reps: int, rng: random.Random) -> Row:
    call = _dispatch(bank)
    row = Row("memory_create", "memory:create (file fsynced, index updated)", "ms", size, target=15,
              target_text="p95 ≤ 15 ms")
    gc.collect()
    for i in range(reps):
        zh = i % 10 == 9
        topic = rng.choice(list(_TOPICS))
        content = _chinese(rng, topic, 100) if zh else _english(rng, topic, 300)
        payload = {"type": ("preference", "fact", "note")[i % 3], "scope": "project", "content": content,
                   "tags": rng.sample(_TAGS, 2)}
        row.samples.append(_timed(lambda: call("memory:create", payload)))
    return row


def _watcher(bank: Any, size: int, reps: int) -> Row:
    """A file saved (in place, or by rename like vim and VS Code) until a preview through the channel shows it."""
    row = Row("watcher", "watcher: file saved → visible in a preview", "ms", size, target=300,
              target_text="p95 ≤ 300 ms", note="debounce 0.1 s included; native events")
    try:
        from .watch import Watcher
    except ImportError as e:
        row.note = f"not measured: membank.shells.watch is not available ({e})"
        return row
    call = _dispatch(bank)
    changed = threading.Event()
    watcher = Watcher(bank, on_change=lambda sources: changed.set(), debounce=0.1)
    folder = bank.project.path / "memories" / "bench-probe"
    folder.mkdir(parents=True, exist_ok=True)
    document = "chapters/bench-probe.md"
    watcher.start()
    try:
        deadline = time.monotonic() + 120
        while not watcher.idle() and time.monotonic() < deadline:  # the first reconcile (a full sync)
            time.sleep(0.01)
        row.note = f"debounce 0.1 s included; {watcher.status()['mode']} events"
        for i in range(reps):
            marker = f"probe{i:03d}x{time.time_ns() % 1_000_000}"
            text = (f"---\nid: bench-probe\ntype: preference\nscope: document\ndocument: {document}\n"
                    f"updated: 2030-01-01T00:00:00Z\n---\nKeep the probe {marker} in mind.\n")
            path = folder / "probe.md"  # the same file saved again and again, as a writer does
            changed.clear()
            started = time.perf_counter()
            if i % 2:  # save by rename, as vim, VS Code and gedit do
                tmp = folder / ".probe.md.swp"
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            else:
                path.write_text(text, encoding="utf-8")
            seen = False
            limit = time.monotonic() + 5
            while not seen and time.monotonic() < limit:
                changed.wait(0.05)  # the app waits for index:changed, then asks for a preview
                changed.clear()
                items = call("memory:injection:preview", {"documentId": document})["items"]
                seen = any(marker in it["content"] for it in items)
            if not seen:
                raise RuntimeError(f"probe {i} did not show up in a preview within 5 s")
            row.samples.append((time.perf_counter() - started) * 1000)
            time.sleep(0.05)
    finally:
        watcher.stop()
        shutil.rmtree(folder, ignore_errors=True)
        bank.sync()
    return row


def _find_sidecar(repo: Path | None) -> tuple[Callable[..., Any] | None, str]:
    """`benchmarks/sidecar.py` from a checkout: next to the package, or the folder given."""
    candidates = [repo] if repo is not None else [Path(__file__).resolve().parents[2], Path.cwd()]
    for folder in candidates:
        if folder is not None and (folder / "benchmarks" / "sidecar.py").is_file():
            if str(folder) not in sys.path:
                sys.path.insert(0, str(folder))
            try:
                module = importlib.import_module("benchmarks.sidecar")
            except Exception as e:  # a half-written file must not stop the other rows
                return None, f"benchmarks/sidecar.py could not be imported ({e.__class__.__name__}: {e})"
            for name in ("measure", "measure_sidecar", "run"):
                fn = getattr(module, name, None)
                if callable(fn):
                    return fn, ""
            return None, "benchmarks/sidecar.py has no measure() function"
    return None, "not measured: benchmarks/sidecar.py is not here (run from a checkout, or pass --repo)"


def _sidecar(corpus: Corpus, reps: int, repo: Path | None) -> list[Row]:
    rtt = Row("sidecar_rtt", "sidecar round trip (index:status over JSON-RPC, real `membank serve`)", "ms",
              corpus.files, target=2, target_text="p95 ≤ 2 ms")
    rss = Row("sidecar_rss", "sidecar resident memory (model loaded, serving)", "MB", corpus.files, target=250,
              target_text="≤ 250 MB")
    fn, why = _find_sidecar(repo)
    if fn is None:
        rtt.note = rss.note = why
        return [rtt, rss]
    try:
        got = fn(corpus.root, samples=reps)
    except Exception as e:
        rtt.note = rss.note = f"the sidecar measurement failed: {e.__class__.__name__}: {e}"
        return [rtt, rss]
    rtt.samples = [float(x) for x in got.get("samplesMs") or []]
    if not rtt.samples and got.get("p95Ms") is not None:
        rtt.samples = [float(got["medianMs"]), float(got["p95Ms"])]
        rtt.note = "median and p95 as the sidecar measurement reported them"
    if got.get("readyMs") is not None:
        rtt.note = (rtt.note + "; " if rtt.note else "") + f"first answer after start {got['readyMs']:.0f} ms"
    if got.get("rssMb") is not None:
        rss.samples = [float(got["rssMb"])]
        rss.note = "VmRSS after the round trips (watcher running, model loaded by index:status)"
        if got.get("peakRssMb") is not None:
            rss.note += f"; peak (VmHWM) {got['peakRssMb']:.0f} MB"
    return [rtt, rss]


def _pick_rng(seed: int, label: str) -> random.Random:
    return random.Random(f"{seed}:{label}")



# -- the run -----------------------------------------------------------------------------------------

# quality.md's table first, in its order; then figures that explain them
ORDER = ["cold_index", "noop_sync", "one_file_sync", "watcher", "preview_deterministic", "preview_semantic",
         "preview_semantic_large", "memory_create", "sidecar_rtt", "sidecar_rss",
         "one_file_full_sync", "preview_semantic_after_write", "preview_deterministic_large", "cold_index_large", "model_load"]


def run(opts: Options) -> Result:
    """Generate the corpora, measure every row, clean up. The writer's global bank is never touched."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t0 = time.perf_counter()
    load_at_start = _machine()["loadAverage"]
    tmp = Path(tempfile.mkdtemp(prefix="membank-bench-"))
    saved_home = os.environ.get("WRITENOW_HOME")
    os.environ["WRITENOW_HOME"] = str(tmp / "home")
    rows: list[Row] = []
    corpus_info: dict[str, Any] = {}
    say = lambda message: _say(opts.quiet, message)  # noqa: E731
    try:
        from ..index.embed import BUNDLED, load

        rows.append(Row("model_load", "embedding model load (once per process)", "ms", None,
                        [_timed(lambda: load(BUNDLED))], note="not in the cold-index figure"))
        say(f"generating {opts.size:,} files (seed {opts.seed})")
        corpus = generate(tmp / f"project-{opts.size}", opts.size, opts.seed)
        corpus_info[str(opts.size)] = _corpus_json(corpus)
        say(f"generated in {corpus.took_s:.1f} s ({corpus.bytes / 1e6:.1f} MB, {corpus.chinese} in Chinese)")
        cold, bank, report = _cold_index(corpus, opts.cold_runs, opts.quiet)
        rows.append(cold)
        corpus_info[str(opts.size)]["index"] = report
        try:
            say("no-op sync")
            rows.append(_noop_sync(bank, corpus.files, opts.syncs))
            say("one file changed")
            rows.extend(_one_file(bank, corpus, opts.one_file, _pick_rng(opts.seed, "one")))
            say("previews")
            rows.append(_previews(bank, corpus.files, opts.previews, False, _pick_rng(opts.seed, "det"),
                                  "preview_deterministic", 5))
            rows.append(_previews(bank, corpus.files, opts.previews, True, _pick_rng(opts.seed, "sem"),
                                  "preview_semantic", 15))
            rows.append(_semantic_after_write(bank, corpus, max(5, opts.one_file // 2), _pick_rng(opts.seed, "after")))
            say("memory:create")
            rows.append(_creates(bank, corpus.files, opts.creates, _pick_rng(opts.seed, "create")))
            say("watcher")
            rows.append(_watcher(bank, corpus.files, opts.watcher))
        finally:
            bank.close()
        say("sidecar")
        rows.extend(_sidecar(corpus, opts.sidecar, opts.repo))
        if not opts.keep:
            shutil.rmtree(corpus.root, ignore_errors=True)
        if opts.large:
            say(f"generating {opts.large:,} files")
            big = generate(tmp / f"project-{opts.large}", opts.large, opts.seed)
            corpus_info[str(opts.large)] = _corpus_json(big)
            say(f"generated in {big.took_s:.1f} s ({big.bytes / 1e6:.1f} MB)")
            cold_big, bank, report = _cold_index(big, 1, opts.quiet)
            cold_big.key, cold_big.target, cold_big.target_text = "cold_index_large", None, ""
            cold_big.note = "for reference: the target is set at 10,000 files"
            corpus_info[str(opts.large)]["index"] = report
            rows.append(cold_big)
            try:
                say("previews on the large corpus")
                det = _previews(bank, big.files, opts.previews, False, _pick_rng(opts.seed, "det"),
                                "preview_deterministic_large", None)
                det.note = "no target of its own; 10,000 files: p95 ≤ 5 ms"
                rows.append(det)
                rows.append(_previews(bank, big.files, opts.previews, True, _pick_rng(opts.seed, "sem"),
                                      "preview_semantic_large", 60))
            finally:
                bank.close()
    finally:
        if saved_home is None:
            os.environ.pop("WRITENOW_HOME", None)
        else:
            os.environ["WRITENOW_HOME"] = saved_home
        if opts.keep:
            say(f"kept the corpora in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    rows.sort(key=lambda r: ORDER.index(r.key) if r.key in ORDER else len(ORDER))
    machine = _machine()
    machine["loadAverageAtStart"] = load_at_start
    return Result(rows, opts, started_at, time.perf_counter() - t0, corpus_info, machine)


def _corpus_json(c: Corpus) -> dict[str, Any]:
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
        cells = [what, f"{r.size:,}" if r.size else "—", str(r.n), _fmt(r.median, r.unit) + unit,
                 _fmt(r.p95, r.unit) + unit if r.n > 1 else "—", r.target_text or "—", met]
        if before:
            o = old.get(r.key)
            cells.append(f"{_fmt(o['median'], r.unit)} / {_fmt(o['p95'], r.unit)}" if o else "—")
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
    return "\n".join(lines)


def execute(opts: Options, as_json: bool = False, output: Path | None = None, compare: Path | None = None) -> int:
    """Run, print the table (or the JSON), optionally save the JSON. Figures are reported, never asserted."""
    before = json.loads(compare.read_text("utf-8")) if compare is not None else None
    result = run(opts)
    data = result.to_json()
    if output is not None:
        output.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(table(result, before) + "\n")
    sys.stdout.flush()
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m benchmarks` / `python -m membank.shells.bench`: the same options as `membank bench`."""
    import argparse

    parser = argparse.ArgumentParser(prog="membank bench", description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="reduced sizes (2,000 and 10,000 files), under a minute")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON and nothing else")
    parser.add_argument("--output", "-o", type=Path, help="also write the JSON figures to this file")
    parser.add_argument("--compare", type=Path, help="an earlier --output file: show its figures alongside")
    parser.add_argument("--size", type=int, help="files in the main corpus (default 10,000)")
    parser.add_argument("--large", type=int, help="files in the large corpus (default 100,000; 0 skips it)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--keep", action="store_true", help="keep the generated corpora and print where")
    parser.add_argument("--repo", type=Path, help="the repository checkout holding benchmarks/sidecar.py")
    args = parser.parse_args(argv)
    opts = options(args.quick, args.size, args.large, args.seed, args.keep, args.repo)
    return execute(opts, args.json, args.output, args.compare)


def options(quick: bool, size: int | None = None, large: int | None = None, seed: int = SEED, keep: bool = False,
            repo: Path | None = None) -> Options:
    kw: dict[str, Any] = {"size": size, "large": large, "seed": seed, "keep": keep, "repo": repo}
    if quick:
        return Options.quick_run(**kw)
    return Options(**{k: v for k, v in kw.items() if v is not None})


if __name__ == "__main__":
    raise SystemExit(main())
