"""The guided lesson's numbers: one worked example per step, and the answer the numbers make true.

``lesson_step(step_id)`` runs a step's computation with the rest of ``core`` and returns its
options in the order shown (an option's letter is its position), the numbers and arrays the page
shows, ``correct`` (the option the measured numbers make true, None if none does) and the claims.
The answer key is a measurement, so a change in the norms that broke a claim would change what
the page says. Most steps use ``lesson_vector()``: width 8, standard-normal draws plus a common
offset, so that its mean is plainly not zero. The steps are computed in
``labs.lesson.geometry`` and ``labs.lesson.numerics``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from labkit.claims import Claim, pick
from labs.lesson.example import NOISE, Measured
from labs.lesson.geometry import GEOMETRY_STEPS
from labs.lesson.numerics import NUMERIC_STEPS
from labs.lesson.options import EXPLAINED, LETTERS, OPTIONS, STEP_IDS, letter
from labs.lesson.words import chart_words


@dataclass(frozen=True)
class StepResult:
    """What one lesson step shows.

    ``options`` are the option ids in the order they are shown, the first under the letter A;
    ``correct`` is the option id whose statement the numbers make true (None: no option is);
    ``numbers`` are plain floats the question, the options and the caption quote; ``arrays`` are
    what the figure draws; ``rows`` are table rows; ``claims`` are the sentences that state facts
    about the numbers (slots ``answer``, ``caption``, ``explain``, the figure's summary
    ``figure_*`` of ``labs.lesson.words`` and step-specific ones)."""

    step_id: str
    options: tuple[str, ...]
    correct: str | None
    numbers: dict[str, float]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    rows: list[dict[str, object]] = field(default_factory=list)
    claims: dict[str, Claim] = field(default_factory=dict)

    def letter(self, option: str) -> str:
        """The letter ``option`` is shown under."""
        return LETTERS[self.options.index(option)]


_BUILDERS: dict[str, Callable[[], Measured]] = {**GEOMETRY_STEPS, **NUMERIC_STEPS}


def _claims(step_id: str, m: Measured) -> dict[str, Claim]:
    """The answer, the caption and the explanation, then the step's own claims."""
    answer = (
        Claim("lesson.answer", {"letter": letter(step_id, m.correct), "option": m.correct})
        if m.correct is not None
        else Claim("lesson.answer_none", {})
    )
    explain = pick(
        m.correct == EXPLAINED[step_id],
        f"lesson.{step_id}_explain",
        "lesson.explain_other",
        noise=NOISE,
        **m.numbers,
    )
    caption = Claim(f"lesson.{step_id}_caption", m.numbers, NOISE)
    figure = {f"figure_{slot}": c for slot, c in chart_words(step_id, m.arrays, m.numbers).items()}
    return {"answer": answer, "caption": caption, "explain": explain, **m.claims, **figure}


def lesson_step(step_id: str) -> StepResult:
    """Run the computation behind step ``step_id`` (one of ``STEP_IDS``)."""
    if step_id not in STEP_IDS:
        raise ValueError(f"step_id must be one of {', '.join(STEP_IDS)}; got {step_id!r}")
    m = _BUILDERS[step_id]()
    claims = _claims(step_id, m)
    return StepResult(step_id, OPTIONS[step_id], m.correct, m.numbers, m.arrays, m.rows, claims)
