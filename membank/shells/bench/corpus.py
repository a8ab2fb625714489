"""The benchmark's corpus: a project of memory, character and world files generated from a seed.

Every run with the same seed writes the same files: a mix of topics (so semantic queries have real
neighbours), a tenth in Chinese, most files as membank writes them and a quarter by hand (fewer
keys, comments, sometimes no id), a few keys membank does not know.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

SEED = 20261121

# Topic clusters: each memory mostly draws from one, so semantic queries have real neighbours.
TOPICS: dict[str, list[str]] = {
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
TAGS = ["style", "tone", "pacing", "dialogue", "plot", "continuity", "character", "setting", "lore", "voice",
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
    pool = TOPICS[topic]
    return [rng.choice(pool) if rng.random() < 0.6 else rng.choice(_COMMON) for _ in range(n)]


def english(rng: random.Random, topic: str, chars: int) -> str:
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


def chinese(rng: random.Random, topic: str, chars: int) -> str:
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


def _memory_file(rng: random.Random, i: int, zh: bool) -> tuple[str, str]:
    """(path under memories/, file text) for memory number `i`."""
    mtype = rng.choices([t for t, _ in _TYPE_WEIGHTS], [w for _, w in _TYPE_WEIGHTS])[0]
    topic = rng.choice(list(TOPICS))
    length = rng.randint(180, 420)  # ~300 characters on average
    body = chinese(rng, topic, length) if zh else english(rng, topic, length)
    folder = rng.choice(_FOLDERS[mtype])
    rel = f"{folder}/{topic}-{i:06d}.md"
    created_t, created = _stamp(rng)
    _, updated = _stamp(rng, created_t, 3_000_000)
    tags = rng.sample(TAGS, rng.randint(0, 3))
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


def _card_file(rng: random.Random, i: int, section: str, zh: bool) -> tuple[str, str]:
    topic = rng.choice(list(TOPICS))
    if section == "characters":
        base = rng.choice(_ZH_NAMES if zh else _EN_NAMES)
        name, kind = f"{base} {i}", "character"
        rel = f"{'cast' if i % 2 else 'minor'}/person-{i:06d}.md"
    else:
        name, kind = f"{rng.choice(['Saltmere', 'Harrowby', 'Greyreach', '齿岩', '听潮'])} {i}", \
            rng.choice(["place", "rule", "item", "faction", "lore", "style", "other"])
        rel = f"{kind}/entry-{i:06d}.md"
    text = chinese if zh else english
    summary = text(rng, topic, 40 if not zh else 15)
    body = text(rng, topic, rng.randint(200, 400))
    others = rng.sample(_ZH_NAMES + _EN_NAMES, 2)
    lines = ["---", f"name: {name}", f"kind: {kind}", f"aliases: [{others[0]}]", "keys: []", "include: auto",
             f"summary: {json.dumps(summary, ensure_ascii=False)}"]
    if section == "characters":
        ch = rng.randint(1, 40)
        lines += [f"state: {json.dumps(text(rng, topic, 30 if not zh else 10), ensure_ascii=False)}",
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
    from ...files import project as project_files

    started = time.perf_counter()
    folder.mkdir(parents=True, exist_ok=True)
    project_files.init(folder, "bench")
    bank = folder / ".writenow"
    rng = random.Random(seed)
    n_chars = max(1, files * 3 // 100)
    n_world = max(1, files * 2 // 100)
    n_mem = files - n_chars - n_world
    made: set[Path] = set()
    total_bytes = in_chinese = 0
    plan: list[tuple[str, int]] = ([("memories", i) for i in range(n_mem)] + [("characters", i) for i in range(n_chars)]
                                    + [("world", i) for i in range(n_world)])
    for section, i in plan:
        zh = rng.random() < 0.1
        in_chinese += zh
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
    return Corpus(folder, files, n_mem, n_chars, n_world, in_chinese, total_bytes, time.perf_counter() - started)
