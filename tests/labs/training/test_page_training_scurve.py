"""The training lab's S-curve view (``/training?view=scurve``): a figure per norm layer with its
fitted tanh, the α and R² table, the words in both languages, the seed and the model from the
link, a hostile link corrected, and the default view untouched."""

from __future__ import annotations

import numpy as np
import pytest

from labs.training.scurve import FIT_FORMS
from labs.training.scurve_view import scurve_view
from tests.apptest_util import assert_claims_shown, decode, figures, open_app, shown_number
from ui import fmt
from ui.i18n import translator

LAYERS = [f"blocks.{i}.ln_{j}" for i in range(3) for j in (1, 2)] + ["ln_f"]
NAMES = {"rms": "RMSNorm", "layer": "LayerNorm"}


def shown(claims: dict, norm: str) -> dict:
    """The claims the view draws with ``norm``'s model layer by layer: every claim of that
    model's layers (the table's cells aside), and those about both models."""
    other = "layer" if norm == "rms" else "rms"
    return {
        slot: claim
        for slot, claim in claims.items()
        if not slot.endswith("_cell") and not any(slot.startswith(f"{other}_{n}_") for n in LAYERS)
    }


@pytest.mark.parametrize(("lang", "seed", "norm"), [("en", 0, "rms"), ("id", 2, "layer")])
def test_a_figure_per_layer_the_table_and_the_words(lang: str, seed: int, norm: str) -> None:
    query = {"view": "scurve", "trained_seed": str(seed), "norm": norm}
    at = open_app("training", lang=lang, **query)
    assert not at.exception, [e.value for e in at.exception]
    view = scurve_view(seed=seed)
    charts = figures(at)
    # One chart per norm layer of the chosen model, and the R² chart; no chart of the runs.
    assert set(charts) == {"scurve_r2"} | {f"scurve_{norm}_{name}" for name in LAYERS}
    tr = translator(lang)
    for curve in view.curves[norm]:
        spec = charts[f"scurve_{norm}_{curve.name}"]
        traces = {t["name"]: t for t in spec["data"]}
        assert set(traces) == {tr("scurve.points"), *FIT_FORMS}
        points = traces[tr("scurve.points")]
        assert points["type"] == "scattergl"
        np.testing.assert_array_equal(decode(points["x"]), curve.x[curve.sample])
        np.testing.assert_array_equal(decode(points["y"]), curve.y[curve.sample])
        fit = curve.fit
        np.testing.assert_allclose(
            decode(traces[FIT_FORMS[0]]["y"]),
            fit.amplitude * np.tanh(fit.alpha * curve.x[curve.sample]),
            rtol=1e-12,
        )
    # The table: α, A and R² of every layer of that model, in the page's language.
    frame = at.table[0].value
    assert list(frame.index) == LAYERS
    assert [shown_number(v, lang) for v in frame["α"]] == [
        shown_number(fmt.num(c.fit.alpha, lang=lang), lang) for c in view.curves[norm]
    ]
    r2 = frame[tr("scurve.col_r2")]
    assert list(r2) == [fmt.num(c.fit.r2, lang=lang) for c in view.curves[norm]]
    cells = list(frame[tr("scurve.col_shape")])
    assert cells == [tr.claim(view.claims[f"{norm}_{n}_cell"]) for n in LAYERS]
    assert_claims_shown(at, shown(view.claims, norm), lang)
    heading = tr("scurve.layers_heading", norm=NAMES[norm])
    assert heading in [s.value for s in at.subheader]


def test_the_view_is_a_choice_above_the_page_bound_to_the_link() -> None:
    at = open_app("training", lang="en")
    control = at.button_group(key="view")
    assert control.label == "View" and control.value == "runs"
    assert "scurve_r2" not in figures(at)  # the runs' view by default
    control.set_value("scurve").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "scurve_r2" in figures(at) and "shipped_step" not in figures(at)
    assert at.query_params["view"] == "scurve"
    at.selectbox(key="norm").set_value("layer").run()
    assert "scurve_layer_ln_f" in figures(at) and at.query_params["norm"] == "layer"


def test_a_hostile_link_is_corrected_with_notices() -> None:
    at = open_app("training", lang="en", view="curves", trained_seed="7", norm="batch")
    assert not at.exception
    notices = "\n".join(w.value for w in at.warning)
    for key in ("view", "trained_seed", "norm"):
        assert f"`{key}`" in notices, key
    at = open_app("training", lang="en", view="SCURVE", trained_seed="-3")
    assert not at.exception
    assert at.session_state["trained_seed"] == 0 and "scurve_rms_ln_f" in figures(at)


def test_the_presenter_view_shows_the_figures_without_the_switch_or_the_code() -> None:
    at = open_app("training", lang="en", view="scurve", controls="hidden")
    assert not at.exception
    assert [g.key for g in at.button_group] == ["lang"]  # no switch of views
    assert "scurve_rms_ln_f" in figures(at)
    # The code section is an expander that draws its code when opened; the presenter has none.
    assert translator("en")("common.code_heading") not in [e.label for e in at.expander]
