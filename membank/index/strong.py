"""The strong tier's encoder: a contextual multilingual model (issue 35), loaded from a local folder
only, never the network. This is the interface the tier is built against; the model and its
arithmetic land separately (scripts/build_strong_model.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

STRONG_BUNDLED = Path(__file__).resolve().parents[1] / "model" / "e5-small-int8"


class StrongUnavailable(Exception):
    """The strong tier cannot run here; the message says why, in words for the writer."""


@dataclass(frozen=True)
class StrongEncoder:
    name: str  # identity recorded in the index: folder name, weights, dimension
    dim: int
    model: Any  # the arithmetic

    def queries(self, texts: list[str]) -> "np.ndarray":
        """Unit-length float32 rows for search queries; a text with no known token is a zero row."""
        return self.model.encode(texts, query=True)  # type: ignore[no-any-return]

    def passages(self, texts: list[str]) -> "np.ndarray":
        """Unit-length float32 rows for what is searched (memories, cards, entries, passages)."""
        return self.model.encode(texts, query=False)  # type: ignore[no-any-return]


def load_strong(folder: Path | None = None) -> StrongEncoder:
    """The strong encoder of `folder` (default: the bundled one), cached per process and thread-safe;
    StrongUnavailable when it cannot run here."""
    raise StrongUnavailable("the strong model is not bundled in this build")
