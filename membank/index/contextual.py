"""The strong tier's arithmetic: multilingual-e5-small's 12-layer BERT encoder from the int8 folder
scripts/build_strong_model.py writes (tokenizer.json.gz, model.safetensors, model.onnx, config.json).

Every input is `query: ` or `passage: ` + the text, cut to MAX_TOKENS tokens (with <s> and </s>; a
query to MAX_QUERY_TOKENS after its prefix), so a 20 MB memory costs what its first page costs; the token states are mean-pooled and L2-normalised. A
text with no known token (empty, only spaces, only characters the vocabulary lacks) is a zero row.

The tokens' embeddings are looked up with numpy (4-bit blocks times their scales); the 12 layers run in
onnxruntime (`model.onnx`: int8 products, ~5× faster than numpy's float32 ones). Queries and passages
have a session each: a query (on the caller's path) runs on up to QUERY_THREADS threads, the
background's batches of passages on one (sessions run at once: neither waits for the other). Without
onnxruntime (`runtime="numpy"`, or the package missing) the same layers run in numpy with the int8
matrices dequantised once at load (~85 MB): same vectors to cosine ~0.995, slower.
`encode` holds no state between calls, so threads may share one encoder."""

from __future__ import annotations

import gzip
import json
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

MAX_TOKENS = 256  # per input, <s> and </s> included
# A query is on the caller's path and costs ~1 ms a token on one busy core (20 tokens 25 ms, 85 tokens
# 109 ms, 256 tokens 254 ms measured): a prompt's default query (instruction + selection) is cut here,
# so the strong tier keeps within its 35 ms rows; a question is rarely longer.
MAX_QUERY_TOKENS = 32
MAX_CHARS = 4 * MAX_TOKENS * 4  # the text is cut before tokenising: ~4 characters a token at most, 4× margin
QUERY_THREADS = 2  # a query's session: both cores of a small machine for ~30 ms; passages keep one
BATCH_TOKENS = 2048  # padded tokens per forward pass: bounds the activations (~25 MB at most)
_SQRT_HALF = 0.7071067811865476


class ContextualEncoder:
    """The model of one folder; `encode(texts, query=...)` gives unit-length float32 rows."""

    def __init__(self, folder: Path, runtime: str = "auto") -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config["layer_norm_eps"])
        self.query_prefix = str(config["query_prefix"])
        self.passage_prefix = str(config["passage_prefix"])
        self.bos, self.pad = int(config["bos_token_id"]), int(config["pad_token_id"])
        self.eos, self.unk = int(config["eos_token_id"]), int(config["unk_token_id"])
        # first: the small file fails fast (gzipped JSON, a quarter of its 3.1 MB on disk)
        tokenizer = Tokenizer.from_str(gzip.decompress((folder / "tokenizer.json.gz").read_bytes()).decode("utf-8"))
        t = load_file(str(folder / "model.safetensors"))
        # the word embeddings as 4-bit blocks of 32 (nibbles: weight j of a block low in byte j, j+16 high;
        # one fp16 scale per block): a text turns only its own rows into float32
        self.word = t["embeddings.word.q4"]
        self.word_scale = t["embeddings.word.d"]
        if self.word.shape[1] * 2 != self.hidden or self.word_scale.shape != (len(self.word), self.hidden // 32):
            raise ValueError("the word embeddings do not match config.json")
        self.position = t["embeddings.position"].astype(np.float32) + t["embeddings.type"][0].astype(np.float32)
        self.max_tokens = min(MAX_TOKENS, len(self.position))
        self.norm = (t["embeddings.norm.weight"], t["embeddings.norm.bias"])
        threads = max(1, min(QUERY_THREADS, os.cpu_count() or 1))
        query_session: Any = _session(folder, threads) if runtime in ("auto", "onnxruntime") else None
        if query_session is None and runtime == "onnxruntime":
            raise ImportError("onnxruntime", name="onnxruntime")
        self.runtime = "onnxruntime" if query_session is not None else "numpy"
        # the passages' session is made at the first batch (a process that only asks makes one session)
        self.sessions: dict[bool, Any] = {True: query_session} if threads > 1 else {True: query_session,
                                                                                   False: query_session}
        self.folder = folder
        self._sessions_lock = threading.Lock()
        self.blocks = [] if query_session is not None else [self._layer(t, i) for i in range(self.layers)]
        if tokenizer.get_vocab_size() != len(self.word):
            raise ValueError(f"{tokenizer.get_vocab_size()} tokens but {len(self.word)} embeddings")
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self.tokenizer = tokenizer
        boundary = tokenizer.token_to_id("\u2581")
        self.meaningless = {self.unk} | ({boundary} if boundary is not None else set())
        # Metaspace splits at spaces: "query: text" is the tokens of "query:", then those of " text"
        self.prefix_tokens = {query: len(self._ids([self._prefix(query).strip()])[0]) for query in (True, False)}

    @property
    def dim(self) -> int:
        return self.hidden

    def _layer(self, t: dict[str, np.ndarray], i: int) -> dict[str, np.ndarray]:
        p = f"layers.{i}."

        def matrix(name: str) -> np.ndarray:  # stored [inputs, outputs], one scale per output
            return np.asarray(t[p + name + ".weight"].astype(np.float32) * t[p + name + ".scale"][None, :])

        qkv = np.concatenate([matrix("q"), matrix("k"), matrix("v")], axis=1)
        block = {"qkv": qkv, "qkv_b": np.concatenate([t[p + "q.bias"], t[p + "k.bias"], t[p + "v.bias"]]),
                 "ao": matrix("ao"), "fi": matrix("fi"), "fo": matrix("fo")}
        for name in ("ao.bias", "aln.weight", "aln.bias", "fi.bias", "fo.bias", "oln.weight", "oln.bias"):
            block[name] = t[p + name].astype(np.float32)
        return block

    def _prefix(self, query: bool) -> str:
        return self.query_prefix if query else self.passage_prefix

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]

    def encode(self, texts: list[str], query: bool) -> np.ndarray:
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        prefix, skip = self._prefix(query), self.prefix_tokens[query]
        rows = self._ids([prefix + _utf8(t[:MAX_CHARS]) for t in texts])
        known = [i for i, row in enumerate(rows) if any(tok not in self.meaningless for tok in row[skip:])]
        cut = min(self.max_tokens, MAX_QUERY_TOKENS + skip) if query else self.max_tokens
        inputs = {i: [self.bos] + rows[i][:cut - 2] + [self.eos] for i in known}
        order = sorted(known, key=lambda i: len(inputs[i]))  # similar lengths together: little padding
        start = 0
        while start < len(order):
            longest, end = len(inputs[order[start]]), start
            while end < len(order) and len(inputs[order[end]]) * (end - start + 1) <= max(BATCH_TOKENS, longest):
                end += 1
            group = order[start:end]
            out[group] = self._forward([inputs[i] for i in group], query)
            start = end
        return out

    def _session_for(self, query: bool) -> Any:
        if self.runtime != "onnxruntime":
            return None
        found = self.sessions.get(query)
        if found is None:
            with self._sessions_lock:
                found = self.sessions.get(query)
                if found is None:
                    found = self.sessions[query] = _session(self.folder, 1)
        return found

    def _words(self, ids: np.ndarray) -> np.ndarray:
        """The embeddings of token ids [batch, tokens] as float32 [batch, tokens, hidden]."""
        nibbles = self.word[ids].reshape(*ids.shape, -1, 16)
        values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1).astype(np.int8) - np.int8(8)
        scaled = values.astype(np.float32) * self.word_scale[ids].astype(np.float32)[..., None]
        return scaled.reshape(*ids.shape, self.hidden)

    def _forward(self, rows: list[list[int]], query: bool) -> np.ndarray:
        b, n, h = len(rows), max(len(r) for r in rows), self.hidden
        ids = np.full((b, n), self.pad, dtype=np.int64)
        mask = np.zeros((b, n), dtype=np.float32)
        for i, r in enumerate(rows):
            ids[i, :len(r)] = r
            mask[i, :len(r)] = 1.0
        x = self._words(ids) + self.position[:n]
        x = _layer_norm(x, *self.norm, self.eps)
        heads, size = self.heads, h // self.heads
        session = self._session_for(query)
        if session is not None:
            x = session.run(None, {"x": x, "mask": mask.astype(np.int32)})[0]  # 0: a padded key, not attended
        bias = np.asarray(((1.0 - mask) * -1e9)[:, None, None, :], dtype=np.float32)  # the numpy layers' mask
        for blk in self.blocks:
            qkv = (x @ blk["qkv"] + blk["qkv_b"]).reshape(b, n, 3, heads, size).transpose(2, 0, 3, 1, 4)
            scores = (qkv[0] @ qkv[1].transpose(0, 1, 3, 2)) * (1.0 / np.sqrt(size)) + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ qkv[2]).transpose(0, 2, 1, 3).reshape(b, n, h)
            x = _layer_norm(x + context @ blk["ao"] + blk["ao.bias"], blk["aln.weight"], blk["aln.bias"], self.eps)
            mid = _gelu(x @ blk["fi"] + blk["fi.bias"])
            x = _layer_norm(x + mid @ blk["fo"] + blk["fo.bias"], blk["oln.weight"], blk["oln.bias"], self.eps)
        pooled = (x * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return np.asarray(np.where(norms > 1e-12, pooled / np.maximum(norms, 1e-12), 0.0), dtype=np.float32)


def _utf8(text: str) -> str:
    """The text as the tokenizer takes it: a lone surrogate (JSON's "\\ud800" decodes to one) becomes `?`
    (the tokenizer raises TypeError on it)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _session(folder: Path, threads: int) -> Any:
    """An onnxruntime session over the folder's model.onnx on `threads` threads, or None without
    onnxruntime or the graph."""
    if not (folder / "model.onnx").is_file():
        return None
    try:
        import onnxruntime
    except ImportError:
        return None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    options.enable_cpu_mem_arena = False  # the arena keeps a batch's peak (+180 MB measured) resident
    # idle threads sleep rather than spin: a query's second thread must not hold a core between queries
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(folder / "model.onnx"), options, providers=["CPUExecutionProvider"])


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    return np.asarray(centred / np.sqrt(var + eps) * weight + bias, dtype=np.float32)


def _gelu(x: np.ndarray) -> np.ndarray:
    """0.5·x·(1 + erf(x/√2)), erf by Abramowitz & Stegun 7.1.26 (error < 1.5e-7; numpy has no erf)."""
    z = np.abs(x) * _SQRT_HALF
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-z * z)
    return np.asarray(0.5 * x * (1.0 + np.sign(x) * erf), dtype=np.float32)
