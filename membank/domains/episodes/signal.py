"""The implicit signal of one skill run (episodes.md, seed 003): pure, with the seed's constants.

What the writer did with the output says how well it served them: kept as it was, lightly edited,
rewritten, rejected, undone. The weights are the seed's; an edit distance between the light and the
heavy bands is weighted in proportion (`edited_weight`), and choosing the same skill for the same
kind of scene again adds `REPEATED_SCENE_SKILL` for each earlier time, up to `REPEAT_CAP` times."""

from __future__ import annotations

from dataclasses import dataclass

DIRECT_ACCEPT = "DIRECT_ACCEPT"
LIGHT_EDIT = "LIGHT_EDIT"
EDITED_ACCEPT = "EDITED_ACCEPT"  # 0.20 ≤ editDistance ≤ 0.60: weighted in proportion
HEAVY_REWRITE = "HEAVY_REWRITE"
FULL_REJECT = "FULL_REJECT"
UNDO_AFTER_ACCEPT = "UNDO_AFTER_ACCEPT"
REPEATED_SCENE_SKILL = "REPEATED_SCENE_SKILL"

WEIGHTS = {DIRECT_ACCEPT: 1.00, LIGHT_EDIT: 0.45, HEAVY_REWRITE: -0.45, FULL_REJECT: -0.80,
           UNDO_AFTER_ACCEPT: -1.00, REPEATED_SCENE_SKILL: 0.15}
LIGHT_BELOW = 0.20  # editDistance under this is a light edit
HEAVY_ABOVE = 0.60  # over this, a heavy rewrite
UNDO_WINDOW_S = 30.0  # an undo this soon after the accept takes the accept back
REPEAT_CAP = 4  # REPEATED_SCENE_SKILL counts at most this many earlier runs (+0.60 in all)
PARTIAL_DISTANCE = 0.30  # a partial accept that gives no edit distance is taken as this much edited


@dataclass(frozen=True)
class Signal:
    name: str  # the run's own signal (DIRECT_ACCEPT … UNDO_AFTER_ACCEPT)
    base: float  # its weight
    weight: float  # the base weight plus the repeat bonus, rounded to 3 places
    repeats: int = 0  # earlier runs of the same skill on the same kind of scene that were counted

    def to_api(self) -> dict[str, object]:
        return {"name": self.name, "base": self.base, "weight": self.weight, "repeats": self.repeats}


def edited_weight(distance: float) -> float:
    """0.20 → +0.45, 0.40 → 0, 0.60 → −0.45: a straight line between the two bands, so a little more
    editing never flips the weight by a jump."""
    span = HEAVY_ABOVE - LIGHT_BELOW
    return WEIGHTS[LIGHT_EDIT] + (distance - LIGHT_BELOW) / span * (WEIGHTS[HEAVY_REWRITE] - WEIGHTS[LIGHT_EDIT])


def base(action: str, edit_distance: float | None) -> tuple[str, float]:
    """The signal of what the writer did, before any repeat bonus."""
    if action == "reject":
        return FULL_REJECT, WEIGHTS[FULL_REJECT]
    if action == "undo":
        return UNDO_AFTER_ACCEPT, WEIGHTS[UNDO_AFTER_ACCEPT]
    distance = edit_distance if edit_distance is not None else (PARTIAL_DISTANCE if action == "partial" else 0.0)
    if distance <= 0:
        return DIRECT_ACCEPT, WEIGHTS[DIRECT_ACCEPT]
    if distance < LIGHT_BELOW:
        return LIGHT_EDIT, WEIGHTS[LIGHT_EDIT]
    if distance > HEAVY_ABOVE:
        return HEAVY_REWRITE, WEIGHTS[HEAVY_REWRITE]
    return EDITED_ACCEPT, edited_weight(distance)


def implicit_signal(action: str, edit_distance: float | None = None, repeats: int = 0) -> Signal:
    """The signal of one run: `action` is accept, partial, reject or undo (an undo within the window;
    see `undo_replaces`); `repeats` the earlier runs of the same skill on the same sceneType. The
    repeat bonus is a preference for the skill, so it is added to accepts and rejects alike, never to
    an undo (which replaces the accept's whole signal with −1.00)."""
    name, weight = base(action, edit_distance)
    counted = 0 if action == "undo" else max(0, min(repeats, REPEAT_CAP))
    return Signal(name, round(weight, 3), round(weight + counted * WEIGHTS[REPEATED_SCENE_SKILL], 3), counted)


def undo_replaces(accepted_at: float, undone_at: float) -> bool:
    """Whether an undo takes the accept back: within UNDO_WINDOW_S seconds of it (times in seconds)."""
    return 0 <= undone_at - accepted_at <= UNDO_WINDOW_S


def importance(weight: float) -> float:
    """How much an episode matters, 0..1, from its signal: a strong signal either way (a clean accept,
    an undo) is worth remembering longer than a lukewarm one."""
    return round(min(1.0, 0.2 + 0.6 * abs(weight)), 3)
