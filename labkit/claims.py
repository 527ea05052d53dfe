"""Sentences held to the numbers: a lab computes the condition behind a sentence as a
:class:`Verdict` (whether it holds, the number it looked at, the tolerance) and returns a
:class:`Claim`, the key of the text true in this state with the numbers it quotes; where the
condition fails a different, true sentence is chosen, never none (docs/claims.md)::

    claims["why_offset"] = pick(at_most(abs(mean), tol), "explorer.offset_cancelled",
                                "explorer.offset_left", mean=mean)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Verdict:
    """A condition checked on the numbers: ``holds``, the ``measured`` value and the ``tol``."""

    holds: bool
    measured: float
    tol: float

    def __bool__(self) -> bool:
        return self.holds


def at_most(measured: float, tol: float) -> Verdict:
    """Holds when ``measured <= tol`` (a NaN never holds)."""
    measured = float(measured)
    return Verdict(bool(measured <= tol), measured, float(tol))


def at_least(measured: float, tol: float) -> Verdict:
    """Holds when ``measured >= tol`` (a NaN never holds)."""
    measured = float(measured)
    return Verdict(bool(measured >= tol), measured, float(tol))


def close(a: float, b: float, *, rtol: float, atol: float = 0.0) -> Verdict:
    """Holds when ``|a - b| <= atol + rtol * |b|``; ``measured`` is ``|a - b|``."""
    diff = abs(float(a) - float(b))
    tol = atol + rtol * abs(float(b))
    return Verdict(bool(diff <= tol) and math.isfinite(diff), diff, tol)


def both(*verdicts: Verdict) -> Verdict:
    """All of ``verdicts`` hold; measured and tol come from the first that fails, or the last."""
    for v in verdicts:
        if not v.holds:
            return v
    return verdicts[-1]


@dataclass(frozen=True)
class Claim:
    """A sentence to show: ``key`` names its text, ``fields`` are the numbers it quotes.

    ``noise``: below it a float field is rounding noise and reads ``≈ 0``; one number for every
    field, or a mapping from field name to its own level (fields it leaves out have none).
    Fields whose names end in ``_pct`` are fractions shown as percentages."""

    key: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    noise: float | Mapping[str, float] = 0.0

    def noise_of(self, name: str) -> float:
        """The rounding level of field ``name``."""
        if isinstance(self.noise, Mapping):
            return float(self.noise.get(name, 0.0))
        return float(self.noise)


def pick(
    verdict: Verdict | bool,
    if_true: str,
    if_false: str,
    /,
    *,
    noise: float | Mapping[str, float] = 0.0,
    **fields: Any,
) -> Claim:
    """The claim whose text is true: ``if_true`` when ``verdict`` holds, else ``if_false``."""
    return Claim(if_true if verdict else if_false, fields, noise)
