"""The thresholds of near-duplicates by meaning (issue 33.6; membank/domains/story/meaning.py).

Positives: pairs of facts written twice in other words (Chinese, English, across the two, 红楼梦
facts of the public-domain excerpt the project tests against). Negatives: every pair of the retrieval fixture's
facts (one novel: the same names in many different facts, look-alike distractors), and every pair of
positives' texts that are not each other's. Each text is embedded by the static and the strong model,
each language's mean removed over the whole set (as a bank's), and each threshold's precision and
recall printed. `python -m benchmarks.duplicates`
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "fixtures" / "retrieval"))

PAIRS = [
    ("林黛玉自幼体弱多病，常年服用人参养荣丸，身子单薄。", "林黛玉自幼十分体弱多病，常年服用人参养荣丸，身子单薄。"),
    ("林黛玉自幼体弱多病，常年服用人参养荣丸，身子单薄。", "黛玉从小身体就不好，一直吃人参养荣丸，人很瘦弱。"),
    ("林黛玉自幼体弱多病，常年服用人参养荣丸，身子单薄。",
     "Lin Daiyu has been sickly since childhood and takes ginseng pills to nourish her health."),
    ("贾宝玉衔玉而生，那块通灵宝玉从不离身。", "宝玉出生时嘴里含着一块玉，他一直把这块通灵宝玉戴在身上。"),
    ("贾宝玉衔玉而生，那块通灵宝玉从不离身。", "Jia Baoyu was born with a jade in his mouth and never takes it off."),
    ("王熙凤管理荣国府的家务，精明强干，说话爽利。",
     "荣国府的家事由王熙凤掌管，她能干又精明，口齿伶俐。"),
    ("甄士隐的女儿英莲在元宵节看灯时被拐走了。", "元宵节那天，甄士隐带去看花灯的女儿英莲被人拐走。"),
    ("甄士隐的女儿英莲在元宵节看灯时被拐走了。",
     "Zhen Shiyin's daughter Yinglian was kidnapped while watching the lanterns at the Lantern Festival."),
    ("贾雨村寄居在葫芦庙里，靠卖字作文为生。", "贾雨村住在葫芦庙，以卖文写字维持生计。"),
    ("Shen Qingya cannot swim; he grew up on a mountain.",
     "Shen never learned to swim, having been raised in the mountains."),
    ("Shen Qingya cannot swim; he grew up on a mountain.", "沈青崖不会游泳，他是在山上长大的。"),
    ("Ye Zhiqiu hides that her father is the harbour magistrate.",
     "Ye Zhiqiu keeps secret that the harbour magistrate is her father."),
    ("Ye Zhiqiu hides that her father is the harbour magistrate.", "叶知秋隐瞒了自己的父亲是港口知府这件事。"),
    ("Isolde Marrow lost her first ship, the Gannet, to a reef off Egret Harbour.",
     "Captain Marrow's first ship, the Gannet, was wrecked on a reef near Egret Harbour."),
    ("The Tidestone can only be reached on the one night every nine years when the sea draws back.",
     "Once every nine years, for a single night, the sea recedes and the Tidestone can be reached."),
    ("The Tidestone can only be reached on the one night every nine years when the sea draws back.",
     "潮石每九年只有一夜可以取到，那一夜海水退去。"),
    ("Shen whittles small wooden birds when he is anxious.", "When nervous, Shen carves little birds out of wood."),
    ("Shen whittles small wooden birds when he is anxious.", "沈青崖紧张的时候会削小木鸟。"),
]
# facts of the same people that say something else (look-alikes written here, beside the fixture's)
LOOKALIKES = [
    "林黛玉自幼体弱多病，后来病逝于潇湘馆。",
    "林黛玉进贾府时只带了两个人：王嬷嬷和雪雁。",
    "贾宝玉衔玉而生，贾母最疼爱他。",
    "王熙凤是贾琏的妻子，王夫人的内侄女。",
    "Shen Qingya can swim well; he learned in the harbour.",
    "Ye Zhiqiu's father is a fisherman who died at sea.",
    "Lin Daiyu arrives at the Rongguo mansion after her mother dies.",
]


def texts_and_labels() -> tuple[list[str], set[tuple[int, int]]]:
    from corpus_memories import MEMORIES  # the fixture's memories

    texts: list[str] = []
    index: dict[str, int] = {}

    def at(text: str) -> int:
        if text not in index:
            index[text] = len(texts)
            texts.append(text)
        return index[text]

    positive = {tuple(sorted((at(a), at(b)))) for a, b in PAIRS}
    for text in LOOKALIKES:
        at(text)
    for _key, kind, _tags, body in MEMORIES:
        if kind == "fact":
            at(body)
    return texts, positive  # type: ignore[return-value]


def sweep(name: str, unit: np.ndarray, positive: set[tuple[int, int]]) -> None:
    sims = unit @ unit.T
    pairs = list(itertools.combinations(range(len(unit)), 2))
    scores = np.array([sims[i, j] for i, j in pairs])
    truth = np.array([p in positive for p in pairs])
    print(f"{name}: {int(truth.sum())} positives, {int((~truth).sum())} negatives;"
          f" best negative {scores[~truth].max():.3f}, positives {np.round(np.sort(scores[truth]), 3).tolist()}")
    for t in np.arange(0.70, 0.96, 0.02):
        hit = scores >= t
        tp = int((hit & truth).sum())
        fp = int((hit & ~truth).sum())
        print(f"  {t:.2f}: precision {tp / max(tp + fp, 1):.2f} recall {tp / truth.sum():.2f} ({tp} tp, {fp} fp)")


def main() -> None:
    from membank.domains.story import meaning
    from membank.index import embed
    from membank.index.strong import load_strong
    from membank.kernel.text import script_language

    texts, positive = texts_and_labels()
    zh = np.array([script_language(t) == "zh" for t in texts])
    static = embed.load(embed.BUNDLED).encode(texts)
    strong = load_strong().passages(texts)
    sweep("static, raw", static, positive)
    sweep("static, centred", meaning.centred(static, zh), positive)
    sweep("strong, raw", strong, positive)
    sweep("strong, centred", meaning.centred(strong, zh), positive)
    a, b = meaning.centred(static, zh), meaning.centred(strong, zh)
    sims_a, sims_b = a @ a.T, b @ b.T
    pairs = list(itertools.combinations(range(len(texts)), 2))
    truth = np.array([p in positive for p in pairs])
    hit = np.array([sims_a[i, j] >= meaning.STATIC or sims_b[i, j] >= meaning.STRONG for i, j in pairs])
    tp, fp = int((hit & truth).sum()), int((hit & ~truth).sum())
    print(f"either tier at its threshold ({meaning.STATIC}, {meaning.STRONG}): precision {tp / max(tp + fp, 1):.2f}"
          f" recall {tp / truth.sum():.2f} ({tp} tp, {fp} fp)")
    for n, (i, j) in enumerate(pairs):
        if truth[n]:
            print(f"  {'found' if hit[n] else 'missed'} {sims_a[i, j]:.2f} {sims_b[i, j]:.2f}"
                  f" {texts[i][:30]} | {texts[j][:30]}")


if __name__ == "__main__":
    main()
