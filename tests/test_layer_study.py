"""The layer study's vectors (benchmarks/layerstudy.py): its last layer's are the strong model's own vectors
(membank/index/contextual.py's numpy path), so the middle layers it compares come from the same forward pass,
prefix and cut as the shipped one."""

from __future__ import annotations

import numpy as np

from benchmarks.layerstudy import folder, pooled_layers
from membank.index.contextual import ContextualEncoder


def test_the_last_layer_is_the_strong_models_own_vector_and_a_middle_one_another() -> None:
    encoder = ContextualEncoder(folder(), runtime="numpy")
    texts = ["The hero was wounded by an arrow at the ferry.", "沈青崖在渡口被箭射伤了左肩。",
             "Who taught the swordsman to fight, and where, and when did he leave the sect for good? " * 3, ""]
    for query in (False, True):
        layers = pooled_layers(encoder, texts, query, (6, 12))
        assert layers.shape == (4, encoder.layers + 1, encoder.hidden)
        assert np.allclose(np.linalg.norm(layers[:3, [6, 12]], axis=2), 1.0, atol=1e-5)
        assert not layers[:, 11].any() and not layers[3].any()  # a layer not asked, a text with no token
        shipped = encoder.encode(texts, query=query)
        assert np.allclose(layers[:, 12], shipped, atol=1e-6)
        assert (np.sum(layers[:3, 6] * shipped[:3], axis=1) < 0.99).all()
    assert len(encoder.blocks) == encoder.layers  # the encoder it was given keeps its 12 layers
