"""One way to write a number, for every page.

- :func:`num`: prose, tables, metrics and captions. Four significant digits; ``1.235e-8`` style
  below 1e-3 and from 1e5 up (one scientific style everywhere, the same one links use); ``0``
  for an exact zero and ``≈ 0`` for a value the caller knows to be rounding noise (``noise``).
- :func:`link`: the short, round-trippable text a link or a ladder widget carries (``1e-5``).
- :func:`tex`: the same number for LaTeX (``1.235 \\times 10^{-8}``).
- :func:`pct`: a fraction as a percentage, three significant digits.
- :func:`stacked`: a display formula whose clauses (``a = …,\\quad b = …``) go one per line.

The translator (``ui.i18n.Translator``) formats every float it substitutes with :func:`num`, so a
page passes numbers, not strings.
"""

from __future__ import annotations

import math
import numbers

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


def num(value: float | int, *, sig: int = SIG, noise: float = 0.0) -> str:
    """``value`` for a reader: 4 significant digits, ``≈ 0`` at or below ``noise`` (not 0)."""
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


def link(value: float) -> str:
    """Short, round-trippable text for a link or a ladder label: ``1e-5``, ``0.25``, ``-3``."""
    if value == 0:
        return "0"
    text = f"{value:.6g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}e{int(exponent)}"
    return text


def tex(value: float, *, sig: int = SIG, noise: float = 0.0) -> str:
    """:func:`num` for LaTeX: ``1e-5`` becomes ``10^{-5}``, ``3e-8`` ``3 \\times 10^{-8}``."""
    text = num(value, sig=sig, noise=noise)
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


def pct(fraction: float, *, sig: int = 3, noise: float = 0.0) -> str:
    """``fraction`` as a percentage: ``0.4213`` -> ``42.1 %``."""
    return f"{num(100.0 * float(fraction), sig=sig, noise=100.0 * noise)} %"


# Clause separators of a display formula, the longer first.
_CLAUSE_BREAKS = (r",\qquad", r",\quad")


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
