"""App tests for the invariance lab: the table equals the paper, the page shows the core's claims,
links restore, the transform select shows names while the link carries the id."""

from __future__ import annotations

import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from labs.invariance.model import invariance_lab
from labs.invariance.table import TRANSFORMS, invariance_table
from tests.apptest_util import assert_claims_shown, decode, figures, metric, open_app, trace
from tests.claims.invariance import EXPECTED, PAPER_ROWS, TRANSFORM_IDS
from ui.i18n import t

# Table 1 of Zhang & Sennrich (2019): (LayerNorm invariant, RMSNorm invariant).
PAPER = {t: EXPECTED[t] for t in TRANSFORM_IDS[:PAPER_ROWS]}


def open_page(**query: str) -> AppTest:
    """The invariance page opened from a link with ``query``; it must run without an exception."""
    at = open_app("invariance", **query)
    assert not at.exception, [e.value for e in at.exception]
    return at


def verdicts(cell: str, lang: str) -> bool:
    """The verdict a table cell such as ``✓ yes (≈ 0)`` shows."""
    yes, no = t("invariance.mark_yes", lang), t("invariance.mark_no", lang)
    assert cell.startswith((yes, no)), cell
    return cell.startswith(yes)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_measured_table_equals_the_paper_in_both_languages(lang):
    at = open_page(lang=lang, size="3", seed="5")
    table = at.table[0].value
    assert list(table.index) == [t(f"invariance.t_{tid}", lang) for tid in TRANSFORMS]
    col = {k: t(f"invariance.col_{k}", lang) for k in ("layer", "rms", "match")}
    # RMSNorm first, as on every page.
    assert list(table.columns) == [col["rms"], col["layer"], col["match"]]
    for tid, (layer, rms) in PAPER.items():
        row = table.loc[t(f"invariance.t_{tid}", lang)]
        assert (verdicts(row[col["layer"]], lang), verdicts(row[col["rms"]], lang)) == (layer, rms)
        assert row[col["match"]] == t("invariance.yes", lang)
    shift = table.loc[t("invariance.t_shift_ones", lang)]
    assert (verdicts(shift[col["layer"]], lang), verdicts(shift[col["rms"]], lang)) == (True, False)
    assert shift[col["match"]] == t("invariance.not_in_paper", lang)


@pytest.mark.parametrize(
    "state",
    [
        dict(transform="weight_matrix_recenter", size=2.0, seed=0, c_max=20.0),
        dict(transform="negative_rescale", size=0.1, seed=7, c_max=1.0),
        dict(transform="dataset_rescale", size=10.0, seed=2**31 - 1, c_max=1000.0),
    ],
)
@pytest.mark.parametrize("lang", ["en", "id"])
def test_page_shows_the_claims_the_core_chose(state, lang):
    query = {k: str(int(v) if k == "seed" else v) for k, v in state.items()}
    at = open_page(lang=lang, **query)
    assert_claims_shown(at, invariance_lab(**state).claims, lang)


@pytest.mark.parametrize("transform", ["weight_matrix_recenter", "single_case_rescale"])
def test_case_residuals_are_the_cores(transform):
    at = open_page(lang="en", transform=transform, size="0.5", seed="2")
    row = next(r for r in invariance_table(size=0.5, seed=2) if r.id == transform)
    for norm in ("layer", "rms"):
        expected = getattr(row, f"{norm}_residual")
        label = t(f"invariance.metric_res_{norm}", "en")
        shown = [m.value for m in at.metric if m.label == label]
        if expected < 1e-9:
            assert shown in (["0"], ["≈ 0"])  # exact, or rounding noise: not a number to read
        else:
            np.testing.assert_allclose(float(shown[0]), expected, rtol=1e-3)


def test_negative_rescale_flips_both_outputs_on_the_page():
    at = open_page(lang="en", transform="negative_rescale", size="3")
    spec = figures(at)["before_after"]
    # Three panels of (before, after) lines; the legend's own entries draw no data.
    series = [tr for tr in spec["data"] if tr.get("mode") == "lines+markers"]
    assert len(series) == 6
    # Panels 2 and 3 (RMSNorm, LayerNorm): the after line is minus the before line.
    for k in (2, 4):
        y0, y1 = (decode(series[k + j]["y"]) for j in (0, 1))
        np.testing.assert_allclose(y1, -y0, rtol=1e-12, atol=1e-14)


def test_shift_collapse_shrinks_like_one_over_c():
    near = open_page(lang="en", c_max="10")
    far = open_page(lang="en", c_max="1000")
    label = t("invariance.metric_dist_rms", "en", c="{c}")
    d_near = metric(near, label.format(c="10"))
    d_far = metric(far, label.format(c="1,000"))
    # 100 times the offset, about 1/100 of the distance (within 10 %: the offset is not yet
    # infinitely dominant at c = 10).
    np.testing.assert_allclose(d_far * 100, d_near, rtol=0.1)
    layer = t("invariance.metric_dist_layer", "en", c="{c}")
    np.testing.assert_allclose(
        metric(near, layer.format(c="10")), metric(far, layer.format(c="1,000")), rtol=1e-3
    )


def test_sweep_figure_lines_follow_the_math():
    at = open_page(lang="en", c_max="50")
    charts = figures(at)
    assert {"before_after", "sweep", "collapse", "pair"} <= set(charts)
    layer = trace(charts["sweep"], t("invariance.layer_cos", "en"))
    energy = trace(charts["sweep"], t("invariance.energy", "en"))
    np.testing.assert_allclose(layer, 1.0, atol=1e-9)
    assert energy[-1] > 0.99 and math.isclose(float(np.max(energy)), energy[-1], rel_tol=0.01)


def test_log_axes_label_whole_numbers():
    at = open_page(lang="en", c_max="20")
    layout = figures(at)["collapse"]["layout"]
    for axis in ("xaxis", "yaxis"):
        labels = layout[axis]["ticktext"]
        values = layout[axis]["tickvals"]
        # Each label reads as the number it marks: no bare "2" standing for 20.
        np.testing.assert_allclose([float(s) for s in labels], values, rtol=1e-9)
        assert len(labels) <= 8


def test_transform_select_shows_names_and_the_link_carries_the_id():
    at = open_page(lang="id", transform="dataset_recenter")
    box = at.selectbox(key="transform")
    assert box.value == "dataset_recenter"
    assert t("invariance.t_dataset_recenter", "id") in box.options
    assert not any(tid in box.options for tid in TRANSFORMS)
    box.set_value("shift_ones").run()
    assert at.query_params["transform"] == "shift_ones"
    at.selectbox(key="transform").set_value("weight_matrix_recenter").run()
    assert "transform" not in at.query_params  # the default needs no parameter


def test_link_with_every_parameter_restores_every_control():
    at = open_page(lang="id", transform="dataset_recenter", size="0.25", seed="42", c_max="300")
    assert at.selectbox(key="transform").value == "dataset_recenter"
    assert at.select_slider(key="size").value == 0.25
    assert at.number_input(key="seed").value == 42
    assert at.select_slider(key="c_max").value == 300.0


def test_a_bad_transform_gives_a_notice_and_the_default():
    at = open_page(lang="en", transform="weight_matrix_recentre")
    assert "`transform`" in " ".join(w.value for w in at.warning)
    assert at.selectbox(key="transform").value == "weight_matrix_recenter"


def test_presenter_view_keeps_figures_and_explanations():
    at = open_page(lang="en", controls="hidden")
    assert {"before_after", "sweep", "collapse", "pair"} <= set(figures(at))
    assert not at.get("code")  # no share box
    # and no code section (drawn only when opened, so its code block alone would not tell)
    assert t("common.code_heading", "en") not in [e.label for e in at.expander]


@pytest.mark.parametrize("lang", ["en", "id"])
def test_charts_say_constant_where_layernorm_cancels_the_offset_not_rounding_extremes(lang):
    """Under an offset LayerNorm cancels, its moves are float64 rounding (about 1e-16) and its
    cosine and distances are constant: the charts' words say ≈ 0 or one value at every position
    drawn, instead of quoting rounding as extremes at positions ("by 0 to 1.221e-15 (most at
    coordinate 6)", "from 1 (c = −20) to 1 (c = −16.8)")."""
    at = open_page(lang=lang, transform="shift_ones", size="2", seed="0", c_max="20")
    lab = invariance_lab(transform="shift_ones", size=2.0, seed=0, c_max=20.0)
    words = {c: lab.claims[f"{c}_words"] for c in ("before_after", "sweep", "collapse")}
    assert all(claim.key.endswith("_layer_flat") for claim in words.values()), words
    assert_claims_shown(at, words, lang)
    # The moves read as rounding, not as numbers: "≈ 0", with no exponent of rounding's size.
    moved = assert_shown_once(at, words["before_after"], lang)
    assert "≈ 0" in moved and "e-1" not in moved and "⁻¹" not in moved, moved


def assert_shown_once(at: AppTest, claim, lang: str) -> str:
    """The claim's sentence, which the page shows."""
    from ui.i18n import translator

    sentence = translator(lang).claim(claim)
    assert_claims_shown(at, {"words": claim}, lang)
    return sentence
