"""The pure decisions of episodes: the implicit signal (seed 003's constants), decay and ranking."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest
from hypothesis import given, strategies as st

from membank.domains.episodes import decay, signal
from membank.domains.episodes.rank import rank
from membank.domains.episodes.candidates import Candidates

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def test_the_seeds_constants() -> None:
    assert signal.WEIGHTS == {"DIRECT_ACCEPT": 1.0, "LIGHT_EDIT": 0.45, "HEAVY_REWRITE": -0.45, "FULL_REJECT": -0.8,
                              "UNDO_AFTER_ACCEPT": -1.0, "REPEATED_SCENE_SKILL": 0.15}


@pytest.mark.parametrize("action, distance, name, weight", [
    ("accept", None, "DIRECT_ACCEPT", 1.0),
    ("accept", 0.0, "DIRECT_ACCEPT", 1.0),
    ("accept", 0.15, "LIGHT_EDIT", 0.45),  # MS1-R2-S1
    ("accept", 0.2, "EDITED_ACCEPT", 0.45),  # the proportionate band meets the light one
    ("accept", 0.4, "EDITED_ACCEPT", 0.0),
    ("accept", 0.5, "EDITED_ACCEPT", -0.225),
    ("accept", 0.6, "EDITED_ACCEPT", -0.45),  # … and the heavy one
    ("accept", 0.61, "HEAVY_REWRITE", -0.45),
    ("partial", None, "EDITED_ACCEPT", 0.225),
    ("reject", None, "FULL_REJECT", -0.8),
    ("undo", None, "UNDO_AFTER_ACCEPT", -1.0),  # MS1-R2-S2
])
def test_implicit_signal(action: str, distance: float | None, name: str, weight: float) -> None:
    got = signal.implicit_signal(action, distance)
    assert (got.name, got.weight, got.repeats) == (name, weight, 0)


def test_repeats_add_up_to_a_cap_and_never_to_an_undo() -> None:
    assert [signal.implicit_signal("accept", 0.1, n).weight for n in range(6)] == [0.45, 0.6, 0.75, 0.9, 1.05, 1.05]
    assert signal.implicit_signal("reject", None, 2).weight == -0.5
    assert signal.implicit_signal("undo", None, 3).weight == -1.0


def test_undo_window() -> None:
    assert signal.undo_replaces(100.0, 130.0) and not signal.undo_replaces(100.0, 130.5)
    assert not signal.undo_replaces(100.0, 99.0)


@given(st.floats(0.2, 0.6))
def test_the_edited_band_is_monotone_and_inside_its_neighbours(distance: float) -> None:
    weight = signal.edited_weight(distance)
    assert -0.45 - 1e-9 <= weight <= 0.45 + 1e-9
    assert signal.edited_weight(min(0.6, distance + 0.01)) <= weight + 1e-12


def test_decay_levels_over_time() -> None:
    assert decay.score(0.5, "2026-11-25T12:00:00.000000Z", None, 0, NOW) == 1.0  # fresh, middling importance
    assert decay.level(decay.score(0.5, "2026-08-25T12:00:00Z", None, 0, NOW)) == "to_compress"  # 92 days
    assert decay.level(decay.score(0.5, "2026-11-10T12:00:00Z", None, 0, NOW)) == "active"  # 15 days
    assert decay.level(decay.score(0.5, "2026-10-11T12:00:00Z", None, 0, NOW)) == "decaying"  # 45 days
    assert decay.level(decay.score(0.5, "2026-05-01T12:00:00Z", None, 0, NOW)) == "to_evict"
    recalled = decay.score(0.5, "2026-05-01T12:00:00Z", "2026-11-20T12:00:00Z", 2, NOW)
    assert decay.level(recalled) == "active"  # a recall restarts the clock
    assert decay.score(0.0, "2026-05-01T12:00:00Z", None, 0, NOW, pinned=True) == 1.0


@given(st.floats(0, 1), st.integers(0, 400), st.integers(0, 20), st.booleans())
def test_the_vectorised_decay_equals_the_scalar_one(importance: float, days: int, recalls: int, pinned: bool) -> None:
    since = NOW.timestamp() - days * 86400
    iso = datetime.fromtimestamp(since, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    one = decay.score(importance, iso, None, recalls, NOW, pinned)
    many = decay.scores(np.array([importance]), np.array([since]), np.array([recalls]), np.array([int(pinned)]),
                        NOW.timestamp())
    assert abs(float(many[0]) - one) < 1e-9


def _candidates(rows: list[tuple[str, str | None, int]]) -> Candidates:
    """(id, sceneType, days old) with importance 0.5, never recalled."""
    return Candidates([r[0] for r in rows], [r[1] for r in rows],
                      np.array([NOW.timestamp() - r[2] * 86400 for r in rows]), np.zeros(len(rows)),
                      np.full(len(rows), 0.5), np.zeros(len(rows), dtype=np.int64),
                      [f"2026-{r[2]:04d}" for r in rows])


def test_the_asked_scene_comes_first_then_similarity_times_decay() -> None:  # MS1-R2-S3
    found = _candidates([("a", "action", 0), ("d1", "dialogue", 40), ("d2", "dialogue", 0), ("d3", "dialogue", 5),
                         ("x", None, 0), ("d4", "dialogue", 0)])
    sims = np.array([0.99, 0.9, 0.2, 0.8, 0.95, 0.8])
    ranked = rank(found, sims, "dialogue", NOW.timestamp(), 5)
    assert [r.id for r in ranked] == ["d4", "d3", "d1", "d2", "a"]
    assert all(r.scene_match for r in ranked[:4]) and not ranked[4].scene_match
    assert ranked[0].reason("dialogue")["detail"] == "sceneType dialogue · similarity 0.80 × decay 1.00"
    assert [r.id for r in rank(found, None, None, NOW.timestamp(), 3)] == ["a", "d2", "d4"]  # decay, then newest, id
    assert rank(_candidates([]), None, "dialogue", NOW.timestamp(), 5) == []


def test_an_evicted_episodes_row_left_in_place_is_never_ranked() -> None:
    """The table keeps an evicted episode's row, marked dead, until it is read whole again: the ranking
    is the one without the row, whatever the limit (fewer live rows than it included)."""
    from dataclasses import replace

    rows = [("a", "action", 0), ("d1", "dialogue", 40), ("d2", "dialogue", 0), ("d3", "dialogue", 5),
            ("x", None, 0), ("d4", "dialogue", 0)]
    sims = np.array([0.99, 0.9, 0.2, 0.8, 0.95, 0.8])
    dead = {"d4", "a"}
    alive = np.array([r[0] not in dead for r in rows])
    marked = replace(_candidates(rows), alive=alive)
    without = _candidates([r for r in rows if r[0] not in dead])
    for limit in (1, 2, 3, 4, 5, 6, 10):
        for scene, similarity in (("dialogue", sims), (None, None)):
            got = rank(marked, similarity, scene, NOW.timestamp(), limit)
            want = rank(without, None if similarity is None else sims[alive], scene, NOW.timestamp(), limit)
            assert got == want and not dead & {r.id for r in got}
    everyone = replace(_candidates(rows), alive=np.zeros(len(rows), dtype=bool))
    assert everyone.live == 0 and rank(everyone, sims, "dialogue", NOW.timestamp(), 5) == []
