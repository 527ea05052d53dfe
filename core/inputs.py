"""Input vectors and gain vectors for the lessons, made reproducibly from a seed.

Every vector the app shows comes from here, so a link carrying ``d``, ``dist``, ``seed``,
``offset`` and ``scale`` (or a typed ``x``) reproduces the same numbers on any machine:
``x = scale * z + offset * 1`` where ``z`` is drawn from ``dist`` with
``np.random.default_rng(seed)``."""

from __future__ import annotations

import math
import re

import numpy as np

# The widest vector a lesson draws: wide enough for real hidden sizes (Llama-3 8B uses 4096,
# 70B uses 8192) and small enough to plot and recompute on every interaction.
MAX_WIDTH = 8192
MIN_WIDTH = 2
# Largest magnitude accepted in a typed vector. Squares of larger values overflow float64's
# sum of squares long before they teach anything.
MAX_ABS_VALUE = 1e150

DISTRIBUTIONS: tuple[str, ...] = ("normal", "uniform", "spike", "laplace", "ramp", "constant")
GAIN_PATTERNS: tuple[str, ...] = ("constant", "ramp", "random", "alternating")

# Uniform on [-sqrt(3), sqrt(3)] and Laplace with scale 1/sqrt(2) have unit variance, so every
# distribution starts from the same second moment and only ``scale`` and ``offset`` move it.
_UNIFORM_HALF_WIDTH = math.sqrt(3.0)
_LAPLACE_SCALE = 1.0 / math.sqrt(2.0)


def _check_width(d: int) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise ValueError(f"d must be a whole number from {MIN_WIDTH} to {MAX_WIDTH} (got {d!r})")
    if not MIN_WIDTH <= d <= MAX_WIDTH:
        raise ValueError(f"d must be from {MIN_WIDTH} to {MAX_WIDTH} (got {d})")
    return int(d)


def _check_finite(name: str, value: float) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number (got {value!r})")
    return float(value)


def base_vector(d: int, dist: str, seed: int) -> np.ndarray:
    """The standardised draw ``z`` of width ``d`` (mean about 0, second moment about 1)."""
    d = _check_width(d)
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"dist must be one of {', '.join(DISTRIBUTIONS)} (got {dist!r})")
    rng = np.random.default_rng(seed)
    if dist == "normal":
        return rng.standard_normal(d)
    if dist == "uniform":
        return rng.uniform(-_UNIFORM_HALF_WIDTH, _UNIFORM_HALF_WIDTH, d)
    if dist == "laplace":
        return rng.laplace(0.0, _LAPLACE_SCALE, d)
    if dist == "spike":
        # One-hot at a seeded position, scaled so that mean(z^2) = 1 like the others.
        z = np.zeros(d)
        z[rng.integers(d)] = math.sqrt(d)
        return z
    if dist == "ramp":
        return np.linspace(-_UNIFORM_HALF_WIDTH, _UNIFORM_HALF_WIDTH, d)
    return np.ones(d)


def make_input(
    d: int, *, dist: str = "normal", seed: int = 0, offset: float = 0.0, scale: float = 1.0
) -> np.ndarray:
    """``x = scale * z + offset * 1`` with ``z = base_vector(d, dist, seed)``; shape (d,)."""
    offset = _check_finite("offset", offset)
    scale = _check_finite("scale", scale)
    return scale * base_vector(d, dist, seed) + offset


def gain_vector(
    d: int, *, pattern: str = "constant", value: float = 1.0, seed: int = 0
) -> np.ndarray:
    """The per-coordinate gain ``g`` of width ``d``, shape (d,).

    constant: ``g_i = value``; ramp: from ``0.5 value`` to ``1.5 value``; random:
    ``value (1 + 0.25 z_i)`` with ``z ~ N(0, 1)`` from ``seed``; alternating: ``value (-1)^i``."""
    d = _check_width(d)
    value = _check_finite("gain", value)
    if pattern not in GAIN_PATTERNS:
        raise ValueError(
            f"gain_pattern must be one of {', '.join(GAIN_PATTERNS)} (got {pattern!r})"
        )
    if pattern == "constant":
        return np.full(d, value)
    if pattern == "ramp":
        return value * np.linspace(0.5, 1.5, d)
    if pattern == "random":
        # A different stream from the input's so that gain and x are not correlated.
        rng = np.random.default_rng([seed, 1])
        return value * (1.0 + 0.25 * rng.standard_normal(d))
    return value * np.where(np.arange(d) % 2 == 0, 1.0, -1.0)


class VectorParseError(ValueError):
    """A typed vector could not be read.

    ``code`` says what went wrong (``empty``, ``too_many``, ``too_few``, ``not_number``,
    ``not_finite``, ``too_large``); ``token`` and ``position`` (counting values from 1) point at the
    bad value, ``count`` and ``limit`` at the broken limit, so a page can say it in any language."""

    _MESSAGES = {
        "empty": "x is empty: type {limit} numbers or fewer, separated by commas",
        "too_many": "x has {count} values; at most {limit} are allowed",
        "too_few": "x has {count} value; at least {limit} are needed",
        "not_number": "x: value {position} ({token!r}) is not a number",
        "not_finite": "x: value {position} ({token!r}) is not finite: only finite numbers",
        "too_large": "x: value {position} ({token!r}) is larger in size than {limit}",
    }

    def __init__(
        self, code: str, *, token: str = "", position: int = 0, count: int = 0, limit: float = 0
    ) -> None:
        self.code, self.token, self.position = code, token[:20], position
        self.count, self.limit = count, limit
        super().__init__(
            self._MESSAGES[code].format(
                token=self.token, position=position, count=count, limit=f"{limit:g}"
            )
        )


# A number written with a decimal comma: digits grouped by periods or not (``1.234,5``,
# ``1234,5``), an exponent in either case (``1,5e-3``).
_COMMA_NUMBER = re.compile(r"[+-]?(?:\d{1,3}(?:\.\d{3})+|\d*)(?:,\d*)?(?:[eE][+-]?\d+)?")
DECIMAL_MARKS = (".", ",")


def _number(token: str, decimal: str) -> float:
    """One typed number; ``ValueError`` when ``token`` is not one with this decimal mark."""
    if decimal == "," and not ("inf" in token.lower() or "nan" in token.lower()):
        if not _COMMA_NUMBER.fullmatch(token) or not any(c.isdigit() for c in token):
            raise ValueError(token)
        token = token.replace(".", "").replace(",", ".")
    return float(token)


def split_vector(text: str, *, decimal: str = ".") -> list[str]:
    """The numbers of a typed vector as written. With a decimal point (``decimal="."``, English
    and links) numbers are separated by commas, semicolons or whitespace; with a decimal comma
    (Indonesian) by semicolons or whitespace, since a comma is part of a number."""
    if decimal not in DECIMAL_MARKS:
        raise ValueError(f"decimal must be one of {DECIMAL_MARKS} (got {decimal!r})")
    text = text.replace("\u2212", "-").replace(";", " ")
    if decimal == ".":
        text = text.replace(",", " ")
    return text.split()


def parse_vector(text: str, *, decimal: str = ".", max_width: int = MAX_WIDTH) -> np.ndarray:
    """Read ``"1, -2.5, 3e-2"`` (``decimal="."``) or ``"1; -2,5; 3e-2"`` (``decimal=","``) into a
    float64 array, its numbers split as :func:`split_vector` splits them.

    Raises ``VectorParseError`` naming the bad token and its position, or the limit broken."""
    tokens = split_vector(text, decimal=decimal)
    if not tokens:
        raise VectorParseError("empty", limit=max_width)
    if len(tokens) > max_width:
        raise VectorParseError("too_many", count=len(tokens), limit=max_width)
    values = np.empty(len(tokens))
    for i, token in enumerate(tokens):
        try:
            value = _number(token, decimal)
        except ValueError:
            raise VectorParseError("not_number", token=token, position=i + 1) from None
        if not math.isfinite(value):
            raise VectorParseError("not_finite", token=token, position=i + 1)
        if abs(value) > MAX_ABS_VALUE:
            raise VectorParseError("too_large", token=token, position=i + 1, limit=MAX_ABS_VALUE)
        values[i] = value
    if len(values) < MIN_WIDTH:
        raise VectorParseError("too_few", count=len(values), limit=MIN_WIDTH)
    return values


def other_reading(text: str, *, decimal: str) -> np.ndarray | None:
    """``text`` read with the other decimal mark, where that reads and gives another vector
    than ``decimal`` does (``"1,5; 2,5"`` is 1.5 and 2.5 with a decimal comma, 1, 5, 2 and 5 with
    a point): the reading a page offers beside its own. None where there is no such reading."""
    other = DECIMAL_MARKS[1 - DECIMAL_MARKS.index(decimal)]
    try:
        theirs = parse_vector(text, decimal=other)
    except VectorParseError:
        return None
    try:
        ours = parse_vector(text, decimal=decimal)
    except VectorParseError:
        return theirs
    return None if np.array_equal(ours, theirs) else theirs


def link_vector(values: np.ndarray) -> str:
    """``values`` as a link writes them, the same in every language: point decimals, commas
    between, each number's shortest text that reads back to it exactly (``1.5,-0.5,1e-15``)."""
    return ",".join(shortest(float(v)) for v in values)


def shortest(value: float) -> str:
    """``value``'s shortest text with a decimal point that reads back to it exactly (``1.5``,
    ``2``, ``1e-15``)."""
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text
