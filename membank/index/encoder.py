"""A model2vec static model read from its folder and applied with `tokenizers` and numpy, without the
model2vec package: the same arithmetic as model2vec 0.10's `StaticModel.encode` (the text cut to
max_length × the median token length in characters, tokens without special tokens and truncated to
max_length, the unknown token dropped, the token vectors averaged, per length bucket, optionally
normalised), so its vectors are model2vec's to the bit (tests/test_model.py).

Why not model2vec itself: `StaticModel.from_pretrained` takes ~0.35 s (it deep-copies the tokenizer
and imports joblib, tqdm and more), where reading the three files takes ~0.04 s; a cold index and
every CLI command that embeds paid it (docs/performance.md, "Two cores")."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_MAX_LENGTH = 512  # model2vec's, when the config names none
BATCH = 1024  # texts per tokenizer call, as model2vec batches


class StaticEncoder:
    """Token vectors, their tokenizer and the model's settings; `encode` is model2vec's."""

    def __init__(self, folder: Path) -> None:
        from safetensors import safe_open
        from tokenizers import Tokenizer

        with safe_open(str(folder / "model.safetensors"), framework="numpy") as tensors:
            names = set(tensors.keys())
            self.embedding: np.ndarray = tensors.get_tensor("embeddings")
            self.weights: np.ndarray | None = tensors.get_tensor("weights") if "weights" in names else None
            self.mapping: np.ndarray | None = tensors.get_tensor("mapping") if "mapping" in names else None
        config: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.normalize = bool(config.get("normalize", False))
        self.max_length: int | None = config.get("max_length", DEFAULT_MAX_LENGTH)
        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        vocabulary = tokenizer.get_vocab()
        if self.mapping is None and len(vocabulary) != len(self.embedding):
            raise ValueError(f"{len(vocabulary)} tokens but {len(self.embedding)} vectors")
        padding = tokenizer.padding
        if padding is not None:  # keep the pad token, never pad
            tokenizer.enable_padding(pad_id=padding["pad_id"], pad_token=padding["pad_token"],
                                     pad_type_id=padding["pad_type_id"], length=0)
        if self.max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(self.max_length)
        self.tokenizer = tokenizer
        self.unk_token_id = _unknown_id(tokenizer, folder / "tokenizer.json")
        self.median_token_length = int(np.median([len(token) for token in vocabulary]))

    @property
    def dim(self) -> int:
        return int(self.embedding.shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        if self.max_length is not None:
            cut = self.max_length * self.median_token_length
            texts = [text[:cut] for text in texts]
        parts = [self._batch(texts[i:i + BATCH]) for i in range(0, len(texts), BATCH)]
        return np.concatenate(parts, axis=0) if parts else np.zeros((0, self.dim), dtype=np.float32)

    def _tokens(self, texts: list[str]) -> list[list[int]]:
        ids = [encoding.ids for encoding in self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
        unknown = self.unk_token_id
        if unknown is not None:  # word-level models: the unknown token carries nothing
            ids = [[token for token in row if token != unknown] for row in ids]
        return ids

    def _batch(self, texts: list[str]) -> np.ndarray:
        ids = self._tokens(texts)
        dtype = np.dtype(np.float32) if self.embedding.dtype == np.int8 else self.embedding.dtype
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        if self.mapping is None and self.weights is None:
            buckets: dict[int, list[int]] = defaultdict(list)
            for i, row in enumerate(ids):
                if row:
                    buckets[len(row)].append(i)
            for indices in buckets.values():
                out[indices] = self.embedding[np.array([ids[i] for i in indices], dtype=np.int64)].mean(axis=1)
        else:
            for i, row in enumerate(ids):
                if row:
                    vectors = self.embedding[row if self.mapping is None else self.mapping[row]]
                    if self.weights is not None:
                        vectors = vectors * self.weights[row][:, None]
                    out[i] = vectors.mean(axis=0)
        if self.normalize:
            out32 = out.astype(np.float32)
            return (out32 / (np.linalg.norm(out32, axis=1, keepdims=True) + 1e-32)).astype(out.dtype)
        return out


_UNK_ID = re.compile(rb'"unk_id"\s*:\s*(null|[0-9]+)')  # a vocabulary entry is ["piece", score]: never followed by a colon


def _unknown_id(tokenizer: Any, file: Path) -> int | None:
    model = tokenizer.model
    if hasattr(model, "unk_token"):  # WordPiece, BPE, WordLevel
        return None if model.unk_token is None else tokenizer.token_to_id(model.unk_token)
    # Unigram keeps it in the model's JSON; model2vec serialises the whole tokenizer to read it (~60 ms
    # and ~19 MB for the bundled model), the file says it in one place
    found = _UNK_ID.search(file.read_bytes())
    return int(found.group(1)) if found is not None and found.group(1) != b"null" else None
