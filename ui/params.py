"""Link parameters: the URL is the state a teacher shares, so every value in it is checked.

A page declares its controls as a tuple of ``Param`` objects whose ``key`` is both the widget key
and the query-parameter name (widgets use ``bind="query-params"``). Before the widgets are drawn,
``apply_link_params`` reads the raw URL, and for every value that is malformed, out of range or
unknown it replaces the raw value, in the URL and in ``st.session_state``, with the valid one the
page uses, and returns a notice naming the parameter (put into words in the page's language
when shown). Streamlit on its own would silently ignore such values; a teacher who typed
``d=10000`` deserves to be told that the width was clamped to 8192, and the address then says
``d=8192``, so a link copied from it shows the same view. (A bound widget leaves a value equal to
its default out of the URL; the view is the same without it.)"""

from __future__ import annotations

import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import streamlit as st

from ui import fmt
from ui.i18n import t
from ui.st_private import set_query_param

# Longest raw value echoed back in a notice; a hostile link can be megabytes long.
ECHO_LIMIT = 40


def echo(raw: str) -> str:
    """A visitor's raw text made safe to show inside Markdown: a code span, cut short."""
    flat = " ".join(raw.split()).replace("`", "'")
    if len(flat) > ECHO_LIMIT:
        flat = flat[: ECHO_LIMIT - 1] + "…"
    return f"`{flat}`" if flat else "`(empty)`"


@dataclass(frozen=True)
class Problem:
    """What was wrong with a raw value: a text key plus the fields it needs."""

    code: str
    fields: dict[str, str]


@dataclass(frozen=True)
class Notice:
    """A link value that was corrected: which parameter, its raw text, and what was wrong.

    Kept as data and put into words only when shown, in the page's language at that moment
    (``text``): ``app.py`` checks the link before the page knows its language, and a visitor may
    switch languages while the notice is still on the page."""

    key: str
    raw: str
    problem: Problem

    def text(self, lang: str) -> str:
        """The sentence that tells a visitor which parameter changed and why."""
        # Limits and values are written in the page's language (the raw text is echoed as it
        # was), but whole numbers as the link writes them (d = 8192, as every sentence writes d).
        fields = {
            k: v if v.lstrip("-").isdigit() else fmt.localise(v, lang)
            for k, v in self.problem.fields.items()
        }
        return t(
            f"common.param_{self.problem.code}", lang, key=self.key, raw=echo(self.raw), **fields
        )


@dataclass(frozen=True)
class Param(ABC):
    """One link parameter. Subclasses define how a raw string becomes a valid value."""

    key: str
    default: object

    @abstractmethod
    def parse(self, raw: str) -> tuple[object, Problem | None]:
        """The value to use for ``raw`` and, if it had to change, what was wrong."""

    def serialise(self, value: object) -> str:
        return str(value)


def _parse_finite(raw: str) -> float | None:
    try:
        value = float(raw.strip())
    except (ValueError, OverflowError):
        return None
    return value


def _unreadable(code: str, default: float, lo: float, hi: float, spell=fmt.link) -> Problem:
    """A value that is no (finite) number: the default used, and the range the parameter takes,
    spelt as the link spells the parameter's numbers (``str`` for whole numbers)."""
    return Problem(code, {"value": spell(default), "lo": spell(lo), "hi": spell(hi)})


@dataclass(frozen=True)
class FloatParam(Param):
    """A number in [lo, hi]; with a ``step``, one of lo, lo + step, ... hi (the slider's stops)."""

    lo: float = -math.inf
    hi: float = math.inf
    step: float | None = None

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        value = _parse_finite(raw)
        if value is None or not math.isfinite(value):
            code = "not_number" if value is None else "not_finite"
            return self.default, _unreadable(code, self.default, self.lo, self.hi)
        if value > self.hi:
            return self.hi, Problem("above", {"limit": fmt.link(self.hi)})
        if value < self.lo:
            return self.lo, Problem("below", {"limit": fmt.link(self.lo)})
        stop = self.nearest(value)
        if not math.isclose(value, stop, rel_tol=0.0, abs_tol=1e-9):
            return stop, Problem("snapped", {"value": fmt.link(stop)})
        return stop, None

    @property
    def decimals(self) -> int:
        """Decimals of the step (0.05 has 2): what a stop is written with."""
        return 0 if self.step is None else max(0, -math.floor(math.log10(self.step) + 1e-9))

    def stops(self) -> tuple[float, ...]:
        """lo, lo + step, ... hi, rounded to the step's decimals (``0.3``, never
        ``0.30000000000000004``); () without a step."""
        return _stops(self.lo, self.hi, self.step, self.decimals) if self.step else ()

    def nearest(self, value: float) -> float:
        """``value`` itself without a step, else the stop nearest it."""
        if not self.step:
            return value
        i = min(max(round((value - self.lo) / self.step), 0), len(self.stops()) - 1)
        return self.stops()[i]

    def serialise(self, value: object) -> str:
        return fmt.link(float(value))


@functools.cache
def _stops(lo: float, hi: float, step: float, decimals: int) -> tuple[float, ...]:
    count = round((hi - lo) / step)
    return tuple(round(lo + i * step, decimals) + 0.0 for i in range(count + 1))  # + 0.0: no -0


@dataclass(frozen=True)
class IntParam(Param):
    lo: int = 0
    hi: int = 2**31 - 1

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        text = raw.strip()
        try:
            value = int(text)
        except ValueError:
            number = _parse_finite(text)
            if number is None or not math.isfinite(number):
                return self.default, _unreadable("not_number", self.default, self.lo, self.hi, str)
            if number != int(number):
                value = round(number)
                clamped = min(max(value, self.lo), self.hi)
                return clamped, Problem("not_integer", {"value": str(clamped)})
            value = int(number)
        if value > self.hi:
            return self.hi, Problem("above", {"limit": str(self.hi)})
        if value < self.lo:
            return self.lo, Problem("below", {"limit": str(self.lo)})
        return value, None


@dataclass(frozen=True)
class ChoiceParam(Param):
    choices: tuple[str, ...] = ()

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        value = raw.strip()
        if value in self.choices:
            return value, None
        lowered = value.lower()
        if lowered in self.choices:
            return lowered, None
        return self.default, Problem(
            "unknown_choice", {"allowed": ", ".join(self.choices), "value": str(self.default)}
        )


@dataclass(frozen=True)
class BoolParam(Param):
    """On or off (a checkbox): ``true`` or ``false`` in the link, as Streamlit writes them."""

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        value = raw.strip().lower()
        if value in ("true", "false"):
            return value == "true", None
        return self.default, Problem(
            "unknown_choice", {"allowed": "true, false", "value": self.serialise(self.default)}
        )

    def serialise(self, value: object) -> str:
        return "true" if value else "false"


@dataclass(frozen=True)
class LadderParam(Param):
    """A number chosen from a fixed ladder of values (a log-scale select slider)."""

    options: tuple[float, ...] = ()

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        value = _parse_finite(raw)
        if value is None or not math.isfinite(value):
            code = "not_number" if value is None else "not_finite"
            low, high = min(self.options), max(self.options)
            return self.default, _unreadable(code, self.default, low, high)
        for option in self.options:
            if math.isclose(value, option, rel_tol=1e-9, abs_tol=0.0):
                return option, None
        nearest = self.nearest(value)
        return nearest, Problem("snapped", {"value": fmt.link(nearest)})

    def nearest(self, value: float) -> float:
        positive = [o for o in self.options if o > 0]
        if value <= 0 or not positive:
            return min(self.options, key=lambda o: abs(o - value))
        return min(positive, key=lambda o: abs(math.log10(o) - math.log10(value)))

    def serialise(self, value: object) -> str:
        return fmt.link(float(value))


@dataclass(frozen=True)
class TextParam(Param):
    max_len: int = 200_000

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        if len(raw) > self.max_len:
            return raw[: self.max_len], Problem("too_long", {"limit": str(self.max_len)})
        return raw, None


def read_link_value(param: Param) -> tuple[object, Problem | None, str | None]:
    """``param``'s value from the URL: (value, what was wrong or None, the raw text or None).

    The one check every link parameter goes through, widget or not: a malformed, out-of-range or
    unknown value is replaced, and a repeated parameter takes its last value, with a notice."""
    raws = st.query_params.get_all(param.key)
    if not raws:
        return param.default, None, None
    raw = raws[-1]
    value, problem = param.parse(raw)
    if len(raws) > 1 and problem is None:
        problem = Problem("repeated", {"count": str(len(raws))})
    return value, problem, raw


def apply_link_params(params: Sequence[Param]) -> list[Notice]:
    """Validate the raw query parameters for ``params``; fix bad ones; return notices.

    Must run before the widgets with these keys are created. A value that needs no change is
    left for Streamlit's own binding to apply. Any other is replaced, in the URL too, by the value
    the page uses, spelt as the page writes it: a clamped, snapped or defaulted value with a
    notice; another spelling of a valid value (``EN``, ``1e-3`` for ``0.001``), which Streamlit
    would reject, without one."""
    notices: list[Notice] = []
    for param in params:
        value, problem, raw = read_link_value(param)
        if raw is None:
            continue
        if problem is None and (isinstance(param, TextParam) or param.serialise(value) == raw):
            continue
        set_query_param(param.key, param.serialise(value))
        st.session_state[param.key] = value
        if problem is not None:
            notices.append(Notice(param.key, raw, problem))
    return notices


def share_query(params: Iterable[Param], lang: str, extra: dict[str, str] | None = None) -> str:
    """The query string that reproduces the current view: every value that differs from its
    default, plus the language (always, since the default depends on the viewer's browser)."""
    pairs: dict[str, str] = {}
    for param in params:
        value = st.session_state.get(param.key, param.default)
        if value != param.default:
            pairs[param.key] = param.serialise(value)
    pairs.update(extra or {})
    pairs["lang"] = lang
    return urlencode(pairs)
