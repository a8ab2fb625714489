"""The cross-language map study (scripts/build_alignment.py, benchmarks/alignstudy.py): the maps it fits are
the ones asked for, and a map that changes nothing ranks as the shipped rule does."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import alignstudy
from benchmarks.usestudy import gated, standardised
from scripts.build_alignment import centred_units, procrustes, ridge


def test_procrustes_finds_the_rotation_between_two_languages_and_ridge_the_linear_map() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 12))
    rotation, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    w = procrustes(x, x @ rotation.T)
    assert np.allclose(w, rotation, atol=1e-9)
    assert np.allclose(w @ w.T, np.eye(12), atol=1e-9)
    linear = rng.normal(size=(12, 12))
    assert np.allclose(ridge(x, x @ linear.T, 1e-9), linear, atol=1e-5)


def test_pairs_are_centred_by_their_own_mean_and_made_unit_length() -> None:
    rows = centred_units(np.array([[1.0, 0.0], [3.0, 0.0], [2.0, 5.0]]))
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert np.allclose(rows[0], [-1 / np.sqrt(1 + (5 / 3) ** 2), -(5 / 3) / np.sqrt(1 + (5 / 3) ** 2)])


def test_the_identity_map_ranks_every_question_as_the_shipped_rule_does(tmp_path) -> None:
    rng = np.random.default_rng(5)
    queries, memories = rng.normal(size=(6, 8)), rng.normal(size=(20, 8))
    zh = np.arange(20) % 3 == 0
    qzh = [bool(i % 2) for i in range(6)]
    cen = queries @ memories.T
    static = rng.normal(size=(6, 20))
    bridge = np.zeros((6, 20))
    path = tmp_path / "maps.npz"
    np.savez(path, counts=json.dumps({"sentences": 1}), **{"procrustes sentences": np.eye(8, dtype=np.float32)})
    shipped = gated(0.7 * standardised(cen, zh) + 0.3 * standardised(static, zh), zh, qzh)
    seen: list[tuple[str, list[list[int]]]] = []

    def measure(name, rank, pools=None) -> None:
        seen.append((name, [rank(qi) for qi in range(6)]))

    alignstudy.rows(measure, path, lambda transform: cen, cen, static, zh, qzh, bridge)
    assert seen and all(ranks == [shipped(qi) for qi in range(6)] for name, ranks in seen if "gate" not in name)


def test_with_the_plain_gate_shut_no_other_language_memory_competes_however_the_map_scores_it() -> None:
    zh = np.array([False, False, True, True])
    plain = np.array([[2.0, 0.0, 0.5, 0.1]])  # the Chinese pool's best is 1.5 below the English best
    mapped = np.array([[2.0, 0.0, 3.0, 2.5]])
    assert alignstudy.opened(plain, mapped, zh, [False])(0) == [0, 1, 2, 3]
    opened = np.array([[2.0, 0.0, 1.9, 0.1]])
    assert alignstudy.opened(opened, mapped, zh, [False])(0) == [2, 3, 0, 1]


def test_the_plain_scores_in_the_maps_order_move_only_which_other_language_memory_holds_each_place() -> None:
    zh = np.array([False, False, True, True, True])
    plain = np.array([[1.0, 0.2, 0.9, 0.1, -0.5], [0.3, 0.8, 2.0, 0.0, 1.0]])
    mapped = np.array([[5.0, 5.0, -1.0, 3.0, 0.0], [9.0, -9.0, 0.0, 0.0, 0.0]])
    out = alignstudy.reordered(plain, mapped, zh, [False, True])
    assert out[0].tolist() == [1.0, 0.2, -0.5, 0.9, 0.1]  # English question: the Chinese pool's values, the map's order
    assert out[1].tolist() == [0.8, 0.3, 2.0, 0.0, 1.0]  # Chinese question: the English pool's
    for qi in range(2):
        assert sorted(out[qi]) == sorted(plain[qi])


def test_a_bank_in_one_language_is_ranked_by_its_scores_under_either_variant() -> None:
    zh = np.array([False, False, False])
    plain = np.array([[0.1, 0.9, 0.5]])
    assert alignstudy.opened(plain, plain, zh, [False])(0) == [1, 2, 0]
    assert alignstudy.opened(plain, plain, ~zh, [False])(0) == [1, 2, 0]
    assert alignstudy.reordered(plain, -plain, zh, [False]).tolist() == plain.tolist()


def test_the_held_out_check_finds_every_translation_once_the_map_undoes_a_rotation() -> None:
    from scripts.build_alignment import held_out

    rng = np.random.default_rng(11)
    zh = rng.normal(size=(100, 10))
    rotation, _ = np.linalg.qr(rng.normal(size=(10, 10)))
    found = held_out(zh, zh @ rotation.T)
    assert found["a 1.0"] == 1.0 and found["no map"] < 1.0


def test_a_blended_rotation_moves_same_language_cosines_so_its_everywhere_rows_are_measured(tmp_path) -> None:
    """(1 - a) I + a W is orthogonal only at a = 1: below it, a Chinese question's cosine to a Chinese memory
    moves, so `everywhere` is not `cross only` and is measured; at a = 1 it is the same numbers, skipped."""
    rng = np.random.default_rng(7)
    w, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    x, y = rng.normal(size=(2, 8))
    half = 0.5 * np.eye(8) + 0.5 * w
    cos = lambda a, b: float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))  # noqa: E731
    assert abs(cos(half @ x, half @ y) - cos(x, y)) > 1e-3 and abs(cos(w @ x, w @ y) - cos(x, y)) < 1e-9
    path = tmp_path / "maps.npz"
    np.savez(path, counts=json.dumps({"sentences": 1}), **{"procrustes sentences": w.astype(np.float32)})
    zh = np.arange(6) % 2 == 0
    cen = rng.normal(size=(2, 6))
    labels: list[str] = []
    alignstudy.rows(lambda name, *_: labels.append(name), path, lambda transform: cen, cen,
                    rng.normal(size=(2, 6)), zh, [True, False], np.zeros((2, 6)))
    everywhere = {label for label in labels if label.endswith("everywhere, + shipped")}
    assert everywhere == {f"map procrustes sentences, a {a}, everywhere, + shipped" for a in (0.25, 0.5, 0.75)}
