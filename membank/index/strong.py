"""The strong tier's encoder: a contextual multilingual model (issue 35, multilingual-e5-small as int8,
built by scripts/build_strong_model.py), loaded from a local folder only, never the network; its
arithmetic is `contextual.ContextualEncoder` (onnxruntime, numpy where it cannot run)."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kernel import heap

if TYPE_CHECKING:
    import numpy as np

STRONG_BUNDLED = Path(__file__).resolve().parents[1] / "model" / "e5-small-int8"
STRONG_FILES = ("config.json", "model.safetensors", "tokenizer.json.gz")
STRONG_PACKAGES = ("numpy", "safetensors", "tokenizers")  # the load's imports; onnxruntime only speeds it up

_cache: dict[tuple[str, int, int], "StrongEncoder"] = {}
_cache_lock = threading.Lock()


class StrongUnavailable(Exception):
    """The strong tier cannot run here; the message says why, in words for the writer."""


QUERY_CACHE = 64  # queries remembered per encoder: a writer's app re-asks with the same selection


class QueryCache:
    """The last `size` query vectors of one encoder, by exact text (thread-safe; `size` 0 remembers none).
    `StrongEncoder.queries` hands out copies, so no caller can change what the next one gets."""

    def __init__(self, size: int = QUERY_CACHE) -> None:
        self.size = size
        self._rows: OrderedDict[str, "np.ndarray"] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, text: str) -> "np.ndarray | None":
        with self._lock:
            found = self._rows.get(text)
            if found is not None:
                self._rows.move_to_end(text)
            return found

    def put(self, text: str, row: "np.ndarray") -> "np.ndarray":
        row = row.copy()
        with self._lock:
            if self.size > 0:
                self._rows[text] = row
                self._rows.move_to_end(text)
                while len(self._rows) > self.size:
                    self._rows.popitem(last=False)
        return row

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()


@dataclass(frozen=True)
class StrongEncoder:
    name: str  # identity recorded in the index: folder name, weights, dimension
    dim: int
    model: Any  # the arithmetic
    # queries already embedded by this encoder (so by this model): a repeat costs a look-up, not ~30 ms
    cache: QueryCache = field(default_factory=QueryCache, compare=False, repr=False)

    def queries(self, texts: list[str]) -> "np.ndarray":
        """Unit-length float32 rows for search queries; a text with no known token is a zero row. A
        query asked lately (the exact text) is not embedded again."""
        import numpy as np

        found = [self.cache.get(t) for t in texts]
        todo = [i for i, row in enumerate(found) if row is None]
        if todo:
            rows = self.model.encode([texts[i] for i in todo], query=True)
            for i, row in zip(todo, rows):
                found[i] = self.cache.put(texts[i], np.asarray(row, np.float32))
        return np.stack(found) if found else np.zeros((0, self.dim), np.float32)

    def passages(self, texts: list[str]) -> "np.ndarray":
        """Unit-length float32 rows for what is searched (memories, cards, entries, passages)."""
        return self.model.encode(texts, query=False)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class StrongInfo:
    """What `describe_strong` tells without loading: the identity a load gives, and how it would run."""
    name: str
    dim: int
    runtime: str  # "onnxruntime", or "numpy" (no onnxruntime or no model.onnx: ~5× slower)


def _check_files(folder: Path) -> None:
    if not folder.is_dir():
        raise StrongUnavailable(f"the strong model folder `{folder.name}` is missing from this installation")
    missing = [name for name in STRONG_FILES if not (folder / name).is_file()]
    if missing:
        raise StrongUnavailable(f"the strong model folder `{folder.name}` is missing {', '.join(missing)}")


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None  # found, not imported
    except (ImportError, ValueError):
        return False


def describe_strong(folder: Path | None = None) -> StrongInfo:
    """The strong model of `folder` (default: the bundled one) as `load_strong` would give it, from its
    files and the packages present, without reading the weights (a millisecond, not the load's ~0.7 s
    and ~100 MB): for `index:status`. Raises StrongUnavailable with the load's words for a missing
    folder, file or package and an unreadable config.json; weights damaged inside are found by the load."""
    folder = STRONG_BUNDLED if folder is None else folder
    _check_files(folder)
    missing = [name for name in STRONG_PACKAGES if not _installed(name)]
    if missing:
        raise StrongUnavailable(f"the strong model needs {missing[0]}, which is not installed")
    try:
        dim = int(json.loads((folder / "config.json").read_text(encoding="utf-8"))["hidden_size"])
        weights = (folder / "model.safetensors").stat().st_size
    except (OSError, ValueError, KeyError, TypeError):
        raise StrongUnavailable(f"the strong model `{folder.name}` could not be loaded: its files are damaged "
                                "(config.json); reinstall membank") from None
    fast = (folder / "model.onnx").is_file() and _installed("onnxruntime")
    return StrongInfo(f"{folder.name}:{weights}:{dim}", dim, "onnxruntime" if fast else "numpy")


def load_strong(folder: Path | None = None) -> StrongEncoder:
    """The strong encoder of `folder` (default: the bundled one), cached per process and thread-safe;
    StrongUnavailable when it cannot run here."""
    folder = STRONG_BUNDLED if folder is None else folder
    _check_files(folder)
    weights = (folder / "model.safetensors").stat()
    key = (str(folder.resolve()), weights.st_size, weights.st_mtime_ns)
    with _cache_lock:  # one load per process, even when threads ask at once
        if key in _cache:
            return _cache[key]
        try:
            from .contextual import ContextualEncoder

            model = ContextualEncoder(folder)
        except ImportError as e:
            raise StrongUnavailable(f"the strong model needs {e.name or 'a package'}, which is not installed") from None
        except MemoryError:
            raise StrongUnavailable(f"there is not enough memory to load the strong model `{folder.name}`") from None
        except Exception as e:  # a damaged folder must not take the bank down
            raise StrongUnavailable(f"the strong model `{folder.name}` could not be loaded: its files are damaged "
                                    f"({e.__class__.__name__}); reinstall membank") from None
        encoder = StrongEncoder(f"{folder.name}:{weights.st_size}:{model.dim}", model.dim, model)
        heap.release()  # the safetensors and tokenizer reads left freed memory resident
        _cache[key] = encoder
        return encoder
