"""Can near-duplicate CARDS (another name, the same entity) and a FACT WITH ITS TRANSLATION be found at
precision ~1.0? (issue 33.6; the pairs: benchmarks/duplicatepairs.py, written before this was run.)

Cards: the retrieval fixture's 43 cards and world entries, the 8 written twins and 6 look-alikes, the two
real SillyTavern cards (fixtures/cards) and 120 of the bench's generated cards (negatives); every pair
scored by what carries identity apart from the name: the best-matching sentence pairs of summary, state
and body (static vectors, each language's mean removed), their character trigrams, the people they
relate to, the whole card's vector. Translations: every cross-language pair of the fixture's facts, the
8 translations and 6 look-alikes, with the cards each names (the name bridge: names and aliases in both
scripts), their numbers, and the centred cosines of both tiers. `python -m benchmarks.duplicatestudy`
"""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures" / "retrieval"))

from benchmarks.duplicatepairs import (CARD_LOOKALIKES, CARD_TWINS, HLM_NAMES, TRANSLATION_LOOKALIKES,  # noqa: E402
                                       TRANSLATIONS)

def card_texts(card: dict) -> list[str]:
    from membank.domains.story.meaning import sentences

    return [s for f in ("summary", "state", "body", "description", "personality", "scenario")
            for s in sentences(str(card.get(f) or ""))]


def real_cards() -> list[dict]:
    from membank.domains.cards import png

    out = []
    for path in sorted((ROOT / "fixtures" / "cards").glob("*.png")):
        raw = json.loads(base64.b64decode(png.texts(path.read_bytes())["chara"]))
        data = raw.get("data", raw)
        out.append({"name": data["name"], "aliases": [], "description": data.get("description"),
                    "personality": data.get("personality"), "scenario": data.get("scenario")})
    return out


def bench_cards(n: int = 120) -> list[dict]:
    from membank.files.frontmatter import split
    from membank.shells.bench import corpus

    rng = random.Random(11)
    out = []
    for i in range(n):
        _, text = corpus._card_file(rng, i, "characters" if i % 2 else "world", zh=i % 5 == 0)
        doc = split(text)
        out.append({"name": doc.meta["name"], "aliases": doc.meta.get("aliases") or [],
                    "summary": doc.meta.get("summary"), "state": doc.meta.get("state"), "body": doc.body,
                    "relations": doc.meta.get("relations") or []})
    return out


def grams(text: str) -> set[str]:
    flat = re.sub(r"\s+", " ", text.casefold())
    return {flat[i:i + 3] for i in range(max(1, len(flat) - 2))}


def study_cards(static) -> None:
    from corpus_cards import CHARACTERS, WORLD
    from membank.domains.story import meaning
    from membank.kernel.text import script_language

    cards = [dict(c) for c in CHARACTERS + WORLD]
    by_name = {c["name"]: n for n, c in enumerate(cards)}
    positive = set()
    for original, twin in CARD_TWINS:
        positive.add((by_name[original], len(cards)))
        cards.append(dict(twin))
    cards += [dict(c) for c in CARD_LOOKALIKES] + real_cards() + bench_cards()
    names = {}
    for n, c in enumerate(cards):
        for name in [c["name"], *(c.get("aliases") or [])]:
            names[str(name).casefold()] = n
    sents = meaning.untemplated([card_texts(c) for c in cards])
    flat = [s for ss in sents for s in ss]
    owner = np.array([n for n, ss in enumerate(sents) for _ in ss])
    zh = np.array([script_language(s) == "zh" for s in flat])
    unit = meaning.centred(static.encode(flat), zh)
    whole_text = [" ".join(ss) for ss in sents]
    whole = meaning.centred(static.encode(whole_text), np.array([script_language(t) == "zh" for t in whole_text]))
    rel = [{names.get(str(r.get("to", "")).casefold(), str(r.get("to"))) for r in c.get("relations") or []}
           for c in cards]
    g = [grams(t) for t in whole_text]
    sims = unit @ unit.T
    rows = []
    for a, b in itertools.combinations(range(len(cards)), 2):
        ia, ib = np.flatnonzero(owner == a), np.flatnonzero(owner == b)
        if not len(ia) or not len(ib):
            continue
        block = sims[np.ix_(ia, ib)]
        short = block.max(axis=1) if len(ia) <= len(ib) else block.max(axis=0)
        top = np.sort(block.ravel())[::-1]
        rows.append(dict(pair=(a, b), truth=(a, b) in positive, max=float(top[0]),
                         top2=float(top[:2].mean()), first=float(short.mean()),
                         cover=meaning.cover(unit[ia], unit[ib]),
                         whole=float(whole[a] @ whole[b]),
                         tri=len(g[a] & g[b]) / max(1, len(g[a] | g[b])),
                         rel=len(rel[a] & rel[b]) / max(1, len(rel[a] | rel[b])) if rel[a] or rel[b] else 0.0))
    report("cards", rows, ["max", "top2", "first", "cover", "whole", "tri", "rel"], cards)
    truth = np.array([r["truth"] for r in rows])
    hit = np.array([r["cover"] >= meaning.COVER for r in rows])
    print(f"  cover >= {meaning.COVER} (shipped): {int((hit & truth).sum())} of {int(truth.sum())} twins,"
          f" {int((hit & ~truth).sum())} of {int((~truth).sum())} others")
    for r in rows:
        if r["truth"]:
            a, b = r["pair"]
            print(f"   + cover {r['cover']:.2f} top2 {r['top2']:.2f} whole {r['whole']:.2f} tri {r['tri']:.2f}"
                  f" rel {r['rel']:.2f} {label(cards[a])} | {label(cards[b])}")
    # what the index stores: one vector per card, names and aliases included (files/intake.py embed_text)
    stored_text = ["\n".join(str(p) for p in [c["name"], *(c.get("aliases") or []), *sents[n]] if p)
                   for n, c in enumerate(cards)]
    stored = meaning.centred(static.encode(stored_text), np.array([script_language(t) == "zh" for t in stored_text]))
    near = stored @ stored.T
    np.fill_diagonal(near, -np.inf)
    for a, b in sorted(positive):
        rank = min(int((near[a] > near[a, b]).sum()), int((near[b] > near[b, a]).sum()))
        print(f"   stored vectors: {label(cards[a])} | {label(cards[b])}: {near[a, b]:.2f}, rank {rank + 1}")
    fixture = [r for r in rows if r["pair"][1] < len(CHARACTERS + WORLD) + len(CARD_TWINS) + len(CARD_LOOKALIKES)]
    report("cards, the fixture's, twins and look-alikes only", fixture, ["cover", "top2", "whole", "tri"], cards)


def report(title: str, rows: list[dict], keys: list[str], items: list, show: int = 6) -> None:
    truth = np.array([r["truth"] for r in rows])
    print(f"== {title}: {int(truth.sum())} positives, {int((~truth).sum())} negatives")
    for key in keys:
        scores = np.array([r[key] for r in rows])
        neg = np.sort(scores[~truth])[::-1]
        pos = np.sort(scores[truth])
        above = int((pos > neg[0]).sum())
        print(f"  {key}: positives {np.round(pos, 3).tolist()}; best negatives {np.round(neg[:5], 3).tolist()}"
              f" -> {above}/{len(pos)} above every negative")
        order = np.argsort(-scores)
        for n in [k for k in order if not truth[k]][:2]:
            a, b = rows[n]["pair"]
            print(f"     top negative {scores[n]:.3f}: {label(items[a])} | {label(items[b])}")


def label(item) -> str:
    return (item["name"] if isinstance(item, dict) else str(item))[:40]


_DIGITS = re.compile(r"\d+")
_ZH_NUM = re.compile(r"[零一二三四五六七八九十百千两]+")
_EN_NUM = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                      "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
_EN_NUM.update({"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "hundred": 100})


def zh_number(text: str) -> int | None:
    digits = dict(zip("零一二两三四五六七八九", [0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9]))
    total, current = 0, 0
    for ch in text:
        if ch in digits:
            current = digits[ch]
        elif ch in "十百千":
            unit = {"十": 10, "百": 100, "千": 1000}[ch]
            total += (current or 1) * unit
            current = 0
    return total + current or None


def numbers(text: str) -> frozenset[int]:
    out = {int(d) for d in _DIGITS.findall(text)}
    out |= {n for n in (zh_number(m) for m in _ZH_NUM.findall(text)) if n is not None and n > 1}
    words = re.findall(r"[a-z]+(?:-[a-z]+)?", text.casefold())
    for w in words:
        parts = w.split("-")
        if all(p in _EN_NUM for p in parts):
            out.add(sum(_EN_NUM[p] for p in parts))
    return frozenset(n for n in out if n > 1)


def named(text: str, cards: list[tuple[str, list[str]]]) -> frozenset[str]:
    found = set()
    folded = text.casefold()
    for name, aliases in cards:
        for alias in [name, *aliases]:
            a = alias.casefold()
            if re.search("[\u4e00-\u9fff]", a):
                if a in folded:
                    found.add(name)
            elif re.search(rf"(?<![\w']){re.escape(a)}(?![\w])", folded):
                found.add(name)
    return frozenset(found)


def study_translations(static, strong) -> None:
    from corpus_cards import CHARACTERS, WORLD
    from corpus_memories import MEMORIES
    from membank.domains.story import meaning
    from membank.kernel.text import script_language

    from benchmarks.duplicates import PAIRS

    facts = [body for _k, kind, _t, body in MEMORIES if kind == "fact"]
    texts = list(facts)
    positive = set()
    for at, other in TRANSLATIONS:
        positive.add((at, len(texts)))
        texts.append(other)
    texts += TRANSLATION_LOOKALIKES
    index = {t: n for n, t in enumerate(texts)}
    for a, b in PAIRS:  # the earlier study's pairs, the cross-language ones counted
        for t in (a, b):
            if t not in index:
                index[t] = len(texts)
                texts.append(t)
        if (script_language(a) == "zh") != (script_language(b) == "zh"):
            positive.add(tuple(sorted((index[a], index[b]))))
    cards = [(c["name"], list(c.get("aliases") or [])) for c in CHARACTERS + WORLD] + HLM_NAMES
    zh = np.array([script_language(t) == "zh" for t in texts])
    a_s = meaning.centred(static.encode(texts), zh)
    a_t = meaning.centred(strong.passages(texts), zh) if strong is not None else a_s
    sim_s, sim_t = a_s @ a_s.T, a_t @ a_t.T
    who = [named(t, cards) for t in texts]
    nums = [numbers(t) for t in texts]
    rows = []
    for a, b in itertools.combinations(range(len(texts)), 2):
        if zh[a] == zh[b]:
            continue
        same_names = bool(who[a]) and who[a] == who[b]
        overlap = len(who[a] & who[b]) / max(1, len(who[a] | who[b]))
        num_j = len(nums[a] & nums[b]) / max(1, len(nums[a] | nums[b])) if nums[a] or nums[b] else 0.5
        rows.append(dict(pair=(a, b), truth=(a, b) in positive, static=float(sim_s[a, b]),
                         strong=float(sim_t[a, b]), names=overlap, nums=num_j,
                         gated=float(sim_t[a, b]) if same_names else -1.0,
                         evidence=float(sim_t[a, b]) + 0.3 * overlap + 0.3 * num_j,
                         evidence_s=float(sim_s[a, b]) + 0.3 * overlap + 0.3 * num_j,
                         both=float(sim_t[a, b] + sim_s[a, b]) / 2 + 0.3 * overlap + 0.3 * num_j))
    strict = [dict(r, strict=r["strong"] if r["names"] == 1.0 and r["nums"] == 1.0 else -1.0) for r in rows]
    report("translations, the same cards and the same numbers, then strong", strict, ["strict"], texts)
    report("translations (cross-language pairs only)", rows,
           ["static", "strong", "names", "nums", "gated", "evidence", "evidence_s", "both"], texts)
    for r in rows:
        if r["truth"]:
            a, b = r["pair"]
            print(f"   + {r['static']:.2f} {r['strong']:.2f} names {r['names']:.2f} nums {r['nums']:.2f}"
                  f" {texts[a][:24]} | {texts[b][:24]}")


def main() -> None:
    from membank.index import embed
    from membank.index.strong import load_strong

    static = embed.load(embed.BUNDLED)
    try:
        strong = load_strong()
    except Exception as e:  # the strong model not installed
        print("strong model:", e)
        strong = None
    study_cards(static)
    study_translations(static, strong)


if __name__ == "__main__":
    main()
