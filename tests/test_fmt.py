"""ui.fmt.stacked: a display formula's clauses one per line, and nothing else changed."""

from __future__ import annotations

import pytest

from core import LAYER_JACOBIAN_FORMULA, PRESETS
from ui.fmt import localise, stacked


def test_each_top_level_clause_goes_on_a_line_of_its_own() -> None:
    shown = stacked(r"y = a + b,\quad a = 1,\qquad b = 2")
    assert shown == r"\begin{gathered}y = a + b, \\ a = 1, \\ b = 2\end{gathered}"


@pytest.mark.parametrize(
    "formula",
    [
        r"y = \frac{a}{b}",  # no clause
        r"\left(a,\quad b\right) = c",  # inside \left ... \right
        r"f_{a,\quad b}(x)",  # inside braces
    ],
)
def test_a_formula_without_top_level_clauses_is_unchanged(formula: str) -> None:
    assert stacked(formula) == formula


def test_arrows_are_not_delimiters() -> None:
    assert stacked(r"a \leftarrow b,\quad c \rightarrow d") == (
        r"\begin{gathered}a \leftarrow b, \\ c \rightarrow d\end{gathered}"
    )


@pytest.mark.parametrize(
    "formula", [LAYER_JACOBIAN_FORMULA, *(p.formula for p in PRESETS.values())]
)
def test_the_shipped_formulas_keep_every_symbol(formula: str) -> None:
    shown = stacked(formula)
    strip = str.maketrans("", "", " ")
    body = shown.removeprefix(r"\begin{gathered}").removesuffix(r"\end{gathered}")
    assert body.replace(r"\\", r"\quad").translate(strip) == formula.replace(
        r"\qquad", r"\quad"
    ).translate(strip)


@pytest.mark.parametrize(
    ("text", "shown"),
    [("0.25", "0,25"), ("-12345.6", "-12.345,6"), ("1.5e-8", "1,5e-8"), ("0.ln_1", "0.ln_1"),
     ("ln_f", "ln_f"), ("2.ln_2_out", "2.ln_2_out")],
)  # fmt: skip
def test_a_tick_is_written_the_indonesian_way_only_when_it_is_a_number(text, shown) -> None:
    assert localise(text, "id") == shown
