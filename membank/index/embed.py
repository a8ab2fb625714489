"""Embedding text with a local model2vec model: finding, loading and caching it, never the network."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kernel import heap

if TYPE_CHECKING:
    import numpy as np

BUNDLED = Path(__file__).resolve().parents[1] / "model" / "use-multilingual-256-int8"
EARLIER = Path(__file__).resolve().parents[1] / "model" / "minilm-l6-128-int8"  # English only; kept for comparison
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")
# Above this many tokens model2vec averages a very long text into mush; the start carries the topic.
MAX_CHARS = 4000

_cache: dict[tuple[str, int], "Embedder"] = {}
_cache_lock = threading.Lock()


class ModelUnavailable(Exception):
    """No model could be loaded; the message says why, in words for the writer."""


@dataclass(frozen=True)
class Embedder:
    name: str  # identity recorded in the index: folder name, weights size, dimension
    dim: int
    model: Any  # encoder.StaticEncoder: model2vec's arithmetic
    vocabulary: int = 0  # token vectors the model holds

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length float32 rows; text with no known token gives a zero row (never NaN)."""
        import numpy as np  # here: every project open imports this module, few commands embed

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(self.model.encode([t[:MAX_CHARS] for t in texts]), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        ok = norms[:, 0] > 1e-12
        vectors[ok] /= norms[ok]
        vectors[~ok] = 0.0
        return np.nan_to_num(vectors, copy=False)

    def encode_query(self, text: str) -> np.ndarray:
        """`encode([text])[0]`, kept for the last few texts: one prompt asks with the same query for its
        memories and the manuscript's passages. Read-only (the row is shared)."""
        key = (id(self.model), text)
        found = _queries.get(key)
        if found is not None and found[0] is self.model:  # the model kept alive with it: an id is never reused
            return found[1]
        row = self.encode([text])[0]
        row.flags.writeable = False
        if len(_queries) >= QUERIES_KEPT:
            _queries.clear()
        _queries[key] = (self.model, row)
        return row


QUERIES_KEPT = 32  # query vectors kept (`Embedder.encode_query`)
_queries: dict[tuple[int, str], tuple[Any, np.ndarray]] = {}  # (id(model), text) -> (model, its row)


def resolve(setting: str | None, project_root: Path) -> Path:
    """The model folder a setting names: null is the bundled model; relative paths are from the project root."""
    if setting is None:
        return BUNDLED
    path = Path(os.path.expanduser(setting))
    return path if path.is_absolute() else project_root / path


def load(folder: Path) -> Embedder:
    """The model in `folder`, loaded once per process. Raises ModelUnavailable."""
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        # model2vec would take a missing folder for a hub name and try the network
        raise ModelUnavailable(f"the embedding model folder `{folder.name}` is missing {', '.join(missing)}")
    weights = (folder / "model.safetensors").stat().st_size
    key = (str(folder.resolve()), weights)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
        try:
            from .encoder import StaticEncoder

            model = StaticEncoder(folder)
            dim = model.dim
        except Exception as e:  # a broken model folder must not take the bank down
            raise ModelUnavailable(f"the embedding model `{folder.name}` could not be loaded ({e.__class__.__name__})") from None
        embedder = Embedder(f"{folder.name}:{weights}:{dim}", dim, model, int(model.embedding.shape[0]))
        heap.release()  # reading the files left a few MB freed but resident (the tokenizer's JSON and the like)
        _cache[key] = embedder
        return embedder


@dataclass(frozen=True)
class ModelInfo:
    """What a model folder says of itself without loading it: enough for `index:status`."""
    name: str  # the identity `load` would give it
    dim: int
    vocabulary: int


HEADER_LIMIT = 1 << 20  # a safetensors header larger than this is not one membank wrote
_described: dict[tuple[str, int, int], ModelInfo] = {}  # by the weights file's path, size and mtime


def describe(folder: Path) -> ModelInfo:
    """The model's identity, dimension and vocabulary from its files (the safetensors header), in
    about a millisecond instead of the ~0.4 s a load takes. Raises ModelUnavailable as `load` would
    for a missing file or a header that is not a model's."""
    missing = [name for name in REQUIRED_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelUnavailable(f"the embedding model folder `{folder.name}` is missing {', '.join(missing)}")
    path = folder / "model.safetensors"
    try:
        st = path.stat()
        weights = st.st_size
        stamp = (str(path), st.st_size, st.st_mtime_ns)
        if stamp in _described:
            return _described[stamp]
        with path.open("rb") as f:
            size = int.from_bytes(f.read(8), "little")
            if not 0 < size <= HEADER_LIMIT:
                raise ValueError("no header")
            header = json.loads(f.read(size))
        shapes = [v["shape"] for k, v in header.items() if k != "__metadata__" and len(v.get("shape", ())) == 2]
        vocabulary, dim = (int(n) for n in shapes[0])
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        raise ModelUnavailable(f"the embedding model `{folder.name}` could not be read (model.safetensors)") from None
    info = _described[stamp] = ModelInfo(f"{folder.name}:{weights}:{dim}", dim, vocabulary)
    return info


def mismatch(recorded: tuple[str, int] | None, model: Embedder | ModelInfo) -> str | None:
    """Why the index's vectors cannot be compared with `model`'s (the one model-mismatch check), or
    None when they can: no vectors yet, or made by this very model."""
    if recorded is None or recorded == (model.name, model.dim):
        return None
    if recorded[1] != model.dim:
        return f"the index was built with {recorded[1]} dimensions, the model has {model.dim}"
    return f"the index was built with the model `{recorded[0]}`, settings now name `{model.name}`"


class ModelHandle:
    """One project's embedding model: loaded on first use and again only when settings name another
    folder; a model that cannot load is remembered with the reason, so it is not retried per call."""

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._loaded: Embedder | str = "no model"

    def get(self, folder: Path) -> Embedder | None:
        if self._folder != folder:
            try:
                self._loaded = load(folder)
            except ModelUnavailable as e:
                self._loaded = str(e)
            self._folder = folder
        return self._loaded if isinstance(self._loaded, Embedder) else None

    def info(self, folder: Path) -> ModelInfo:
        """The model's identity without loading it (the loaded model's when it is loaded); raises
        ModelUnavailable when it cannot load or its files cannot be read."""
        if self._folder == folder:
            if isinstance(self._loaded, Embedder):
                return ModelInfo(self._loaded.name, self._loaded.dim, self._loaded.vocabulary)
            raise ModelUnavailable(self._loaded)  # tried already: the reason it did not load
        return describe(folder)

    def why(self) -> str:
        """Why the last `get` gave no model."""
        return self._loaded if isinstance(self._loaded, str) else ""
