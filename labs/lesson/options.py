"""The guided lesson's steps and their options: the ids, the order the options are shown in
(the letter of an option is its position), and the option each step's explanation is written for.

The numbers that decide each step's answer are ``labs.lesson.model``'s."""

from __future__ import annotations

STEP_IDS: tuple[str, ...] = (
    "centre",
    "identity",
    "rescale",
    "scales",
    "shift",
    "sweep",
    "plane",
    "recenter",
    "table",
    "eps",
    "precision",
    "gradient",
    "residual",
    "gain",
)

# Every step's options, by id, in the order the page shows them: the letter a reader sees is the
# position (A, B, C, D). The order is fixed per step, so a link, a class and a printout all name
# the same letter, and it spreads the answers the numbers give over the letters: no letter is
# right in more than MOST_PER_LETTER steps, so a reader who always picks one letter learns nothing.
# "Which norm ignores the change?" steps share the ids both / rms / layer / neither.
OPTIONS: dict[str, tuple[str, ...]] = {
    "centre": ("zero", "one", "mean", "ratio"),
    "identity": ("var", "rms2", "both", "neither"),
    "rescale": ("rms", "layer", "both", "neither"),
    "scales": ("keep_cancel", "keep_move", "flip_move", "flip_cancel"),
    "shift": ("layer", "rms", "both", "neither"),
    "sweep": ("back", "zero", "ones"),
    "plane": ("both_square", "layer_on_x", "both_on_x", "rms_on_x"),
    "recenter": ("both", "neither", "rms", "layer"),
    "table": ("rms", "both", "neither", "layer"),
    "eps": ("yes", "no"),
    "precision": ("identical", "ulps", "visible"),
    "gradient": ("layer", "neither", "both", "rms"),
    "residual": ("rms", "layer", "alike", "apart"),
    "gain": ("nearly", "shorter", "flipped"),
}
LETTERS = "ABCD"
# What a class store checks answers against: for step k (from 1), the ids of its options.
LESSON: tuple[tuple[str, ...], ...] = tuple(OPTIONS[s] for s in STEP_IDS)
MOST_PER_LETTER = 5
# The option each step's explanation is written for. Where the numbers make another option true,
# the page shows ``lesson.explain_other`` instead of an explanation that would then be false.
EXPLAINED: dict[str, str] = {
    "centre": "ratio",
    "identity": "rms2",
    "rescale": "both",
    "scales": "flip_move",
    "shift": "layer",
    "sweep": "ones",
    "plane": "rms_on_x",
    "recenter": "neither",
    "table": "layer",
    "eps": "yes",
    "precision": "ulps",
    "gradient": "layer",
    "residual": "rms",
    "gain": "flipped",
}


def letter(step_id: str, option: str) -> str:
    """The letter option ``option`` of step ``step_id`` is shown under."""
    return LETTERS[OPTIONS[step_id].index(option)]
