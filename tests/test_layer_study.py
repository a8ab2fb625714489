"""The layer study's vectors (benchmarks/layerstudy.py): its last layer's mean-pooled states are the strong
model's own vector (membank/index/contextual.py's numpy path), so the middle layers it compares come from the
same forward pass, prefix and cut as the shipped one."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.layerstudy import folder, pooled_layers
from membank.index.contextual import ContextualEncoder


@pytest.fixture(scope="module")
def encoder() -> ContextualEncoder:
    return ContextualEncoder(folder(), runtime="numpy")


@pytest.mark.parametrize(("text", "query"), [
    ("The hero was wounded by an arrow at the ferry.", False),
    ("沈青崖在渡口被箭射伤了左肩。", False),
    ("Who taught the swordsman to fight, and where, and when did he leave the sect for good? " * 3, True),
])
def test_the_last_layer_is_the_strong_models_own_vector(encoder: ContextualEncoder, text: str, query: bool) -> None:
    layers = pooled_layers(encoder, text, query)
    assert layers.shape == (encoder.layers + 1, encoder.hidden)
    assert np.allclose(np.linalg.norm(layers, axis=1), 1.0, atol=1e-5)
    shipped = encoder.encode([text], query=query)[0]
    assert float(layers[-1] @ shipped) > 0.99999
    assert float(layers[6] @ shipped) < 0.99  # a middle layer is another vector
