"""Settings read from the environment: one parser, so every variable behaves the same way."""

from __future__ import annotations

import math
import os


def seconds(name: str, default: float) -> float:
    """A duration in seconds from `$name`; `default` when unset, not a number, negative, NaN or infinite."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 <= value < math.inf else default
