"""One way to write a number, for every page, in the page's language.

- :func:`num`: prose, tables, metrics and captions. Four significant digits; ``1.235e-8`` style
  below 1e-3 and from 1e5 up (one scientific style everywhere, the same one links use); ``0``
  for an exact zero and ``≈ 0`` for a value the caller knows to be rounding noise (``noise``).
- :func:`link`: the short, round-trippable text a link or a ladder widget carries (``1e-5``),
  the same in every language.
- :func:`tex`: the same number for LaTeX (``1.235 \\times 10^{-8}``).
- :func:`pct`: a fraction as a percentage, three significant digits.
- :func:`stacked`: a display formula whose clauses (``a = …,\\quad b = …``) go one per line.
- :func:`parse`: a number typed in the page's language, back to a float.

The marks come from Babel's locale data (English ``1,234.5``, Bahasa Indonesia ``1.234,5``), in
the page's language (``st.session_state["lang"]``, :func:`language`, or ``lang``). Exports and
links never go through here: they keep a decimal point."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from functools import cache, lru_cache

from babel.numbers import NumberFormatError, get_decimal_symbol, get_group_symbol, parse_decimal

from core.inputs import shortest

LANGUAGES = ("en", "id")
DEFAULT_LANGUAGE = "en"
_LANG: ContextVar[str | None] = ContextVar("normlab_number_language", default=None)


@contextmanager
def language(lang: str) -> Iterator[None]:
    """Write numbers in ``lang`` inside the block (outside a page, or to override it)."""
    token = _LANG.set(lang if lang in LANGUAGES else DEFAULT_LANGUAGE)
    try:
        yield
    finally:
        _LANG.reset(token)


def current_language() -> str:
    """The language numbers are written in now: :func:`language`'s, else the page's."""
    lang = _LANG.get()
    if lang is not None:
        return lang
    import streamlit as st  # only here: ui.fmt needs no Streamlit outside a page

    lang = st.session_state.get("lang", DEFAULT_LANGUAGE)
    return lang if lang in LANGUAGES else DEFAULT_LANGUAGE


@cache
def marks(lang: str) -> tuple[str, str]:
    """The decimal mark and the digit group separator of ``lang`` (Babel's CLDR data)."""
    return get_decimal_symbol(lang), get_group_symbol(lang)


def localise(text: str, lang: str | None = None) -> str:
    """``text``, a number written with a point and no grouping (``-12345.6``, ``1.5e-8``), in
    ``lang``: its decimal mark, and its integer part grouped by thousands."""
    decimal, group = marks(lang or current_language())
    mantissa, e, exponent = text.partition("e")
    sign = mantissa[:1] if mantissa[:1] in ("-", "−") else ""
    whole, point, frac = mantissa[len(sign) :].partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()):  # a name such as 0.ln_1 stays
        return text
    if len(whole) > 3:
        head = len(whole) % 3 or 3
        whole = group.join([whole[:head]] + [whole[i : i + 3] for i in range(head, len(whole), 3)])
    return f"{sign}{whole}{decimal if point else ''}{frac}{e}{exponent}"


def parse(text: str, lang: str | None = None) -> float:
    """A number typed in ``lang`` (``1,5`` in Indonesian, ``1.5`` in English; ``1e-5`` in both),
    as a float. Raises ``ValueError`` for text that is not one number in that language."""
    body = text.strip().replace("−", "-").replace("\u2212", "-")
    mantissa, e, exponent = body.replace("E", "e").partition("e")
    lang = lang or current_language()
    try:
        value = parse_decimal(mantissa, locale=lang, strict=True)
    except NumberFormatError as err:
        raise ValueError(f"{text!r} is not a number in {lang}") from err
    if e:
        if not exponent.lstrip("+-").isdigit():
            raise ValueError(f"{text!r} is not a number in {lang}")
        value = value.scaleb(int(exponent))
    return float(Decimal(value))


SIG = 4
# Below 1e-3 and from 1e5 up a number reads better as mantissa and power of ten.
_SCI_BELOW = 1e-3
_SCI_FROM = 1e5


def _sci(value: float, sig: int) -> tuple[str, int]:
    """Mantissa text (trailing zeros dropped) and exponent of ``value`` at ``sig`` digits."""
    mantissa, exponent = f"{value:.{sig - 1}e}".split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return mantissa, int(exponent)


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return None


def num(value: float | int, *, sig: int = SIG, noise: float = 0.0, lang: str | None = None) -> str:
    """``value`` for a reader in ``lang`` (default: the page's): 4 significant digits,
    ``≈ 0`` at or below ``noise`` (not 0)."""
    return localise(_plain(value, sig, noise), lang)


def _plain(value: float | int, sig: int, noise: float) -> str:
    """:func:`num` with a decimal point and no grouping."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    value = float(value)
    special = _special(value)
    if special is not None:
        return special
    if value == 0:
        return "0"
    if abs(value) <= noise:
        return "≈ 0"
    mantissa, exponent = _sci(value, sig)
    if _SCI_BELOW <= abs(float(f"{mantissa}e{exponent}")) < _SCI_FROM:
        # Fixed notation with the same significant digits (12.35, 0.001235, 12350).
        decimals = sig - 1 - exponent
        text = f"{round(value, decimals):.{max(decimals, 0)}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    return f"{mantissa}e{exponent}"


def column(values: object, lang: str | None = None) -> list:
    """A table's column as the page writes it: every number by :func:`num` in ``lang``, anything
    else (a name, a label) as it is; one language lookup for the whole column."""
    lang = lang or current_language()
    return [
        num(value, lang=lang)
        if isinstance(value, numbers.Real) and not isinstance(value, bool)
        else value
        for value in values  # type: ignore[attr-defined]
    ]


def link(value: float) -> str:
    """Short, round-trippable text for a link or a ladder label: ``1e-5``, ``0.25``, ``-3``."""
    if value == 0:
        return "0"
    text = f"{value:.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def tex(value: float, *, sig: int = SIG, noise: float = 0.0, lang: str | None = None) -> str:
    """:func:`num` for LaTeX: ``1e-5`` becomes ``10^{-5}``, ``3e-8`` ``3 \\times 10^{-8}``; a
    comma in braces (``1{,}5``), which TeX would otherwise space as punctuation."""
    text = num(value, sig=sig, noise=noise, lang=lang).replace(",", "{,}")
    if text == "≈ 0":
        return r"\approx 0"
    if text in ("∞", "-∞"):
        return text.replace("∞", r"\infty")
    if "e" not in text or text == "NaN":
        return text
    mantissa, exponent = text.split("e")
    power = f"10^{{{int(exponent)}}}"
    if mantissa in ("1", "-1"):
        return power if mantissa == "1" else f"-{power}"
    return rf"{mantissa} \times {power}"


def pct(fraction: float, *, sig: int = 3, noise: float = 0.0, lang: str | None = None) -> str:
    """``fraction`` as a percentage: ``0.4213`` -> ``42.1%`` (``42,1%`` in Indonesian: CLDR's
    percent pattern, ``#,##0%``, in both languages, as the charts' axes write it)."""
    return f"{num(100.0 * float(fraction), sig=sig, noise=100.0 * noise, lang=lang)}%"


# Clause separators of a display formula, the longer first.
_CLAUSE_BREAKS = (r",\qquad", r",\quad")


@lru_cache(maxsize=256)
def stacked(formula: str) -> str:
    r"""``formula`` with every top-level ``,\quad`` or ``,\qquad`` (outside braces and
    ``\left … \right``) as a line break, the lines centred (``gathered``): a formula with a
    clause beside it (``y = …,\quad \tilde{x} = …``) then fits a phone's width. A formula
    without such a clause comes back unchanged."""
    lines, depth, start, i = [], 0, 0, 0
    while i < len(formula):
        for word, step in ((r"\left", 1), (r"\right", -1)):
            end = i + len(word)
            if formula.startswith(word, i) and not formula[end : end + 1].isalpha():
                depth += step
                i = end
                break
        else:
            char = formula[i]
            depth += (char == "{") - (char == "}")
            brk = next((b for b in _CLAUSE_BREAKS if formula.startswith(b, i)), None)
            if depth == 0 and brk is not None:
                lines.append(formula[start:i] + ",")
                i = start = i + len(brk)
            else:
                i += 1
    if not lines:
        return formula
    lines.append(formula[start:])
    return r"\begin{gathered}" + r" \\ ".join(x.strip() for x in lines) + r"\end{gathered}"


# Between the numbers of a vector written out: a comma in English, a semicolon where the comma
# is the decimal mark (Indonesian), as ``core.inputs.parse_vector`` reads them back.
_LIST_SEPARATORS = {".": ", ", ",": "; "}


def vector(values: object, lang: str | None = None, *, exact: bool = False, most: int = 0) -> str:
    """Numbers of a vector written in ``lang``: ``1.5, 2.5, -0.5`` or ``1,5; 2,5; -0,5``.

    ``exact``: each number's shortest text that reads back to it (for a text box a person
    edits), never grouped; otherwise :func:`num`'s four digits. ``most`` > 0 writes the first
    ``most`` numbers and an ellipsis."""
    decimal = marks(lang or current_language())[0]
    items = [float(v) for v in values]  # type: ignore[attr-defined]
    shown = items[:most] if most and len(items) > most else items
    if exact:
        texts = [shortest(v).replace(".", decimal) for v in shown]
    else:
        texts = [num(v, lang=lang) for v in shown]
    tail = [] if len(shown) == len(items) else ["…"]
    return _LIST_SEPARATORS[decimal].join(texts + tail)
