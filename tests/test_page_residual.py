"""App tests for the residual-stream page: the core's numbers, link round-trips, bad links."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.residual import simulate_residual
from tests.apptest_util import figures, metric, open_app, trace
from ui.i18n import t

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGE = "pages/residual.py"


def open_page(**query: str) -> AppTest:
    """The residual page opened from a link with ``query``; it must run without an exception."""
    at = open_app("residual", **query)
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize("lang", ["en", "id"])
def test_page_shows_the_cores_numbers(lang):
    at = open_page(lang=lang, layers="10", d="64", drift="0.8", seed="3", eps="0")
    ref = simulate_residual(layers=10, d=64, drift=0.8, seed=3, eps=0.0).readings
    shown = metric(at, t("residual.metric_cos", lang))
    np.testing.assert_allclose(shown, ref["rms"]["input_cos_ones"][-1], rtol=1e-3)
    shown = metric(at, t("residual.metric_out_share", lang))
    np.testing.assert_allclose(shown, ref["rms"]["output_share_offset"][-1], rtol=1e-3)
    spec = figures(at)["layers_figure"]
    rms = trace(spec, t("residual.rms_trunk", lang))
    np.testing.assert_allclose(rms, ref["rms"]["stream_mean"], rtol=1e-12)


def test_offset_reaches_the_projection_only_through_rms_norm():
    at = open_page(lang="en", layers="24", d="128", drift="1")
    table = at.table[0].value
    row = t("residual.q_input_cos_ones", "en")
    # LayerNorm's output is orthogonal to 1 (printed as 0); RMSNorm's points along it.
    assert table.loc[row, t("residual.layer_trunk", "en")] == "0"
    assert float(table.loc[row, t("residual.rms_trunk", "en")]) > 0.8
    row = t("residual.q_output_share_offset", "en")
    assert float(table.loc[row, t("residual.layer_trunk", "en")]) < 10 / 128
    assert float(table.loc[row, t("residual.rms_trunk", "en")]) > 0.6


def test_without_drift_the_trunks_read_alike():
    at = open_page(lang="en", drift="0", d="256")
    assert metric(at, t("residual.metric_out_share", "en")) < 0.05


def test_link_with_every_parameter_restores_every_control():
    at = open_page(lang="id", layers="7", d="33", drift="-0.35", seed="9", eps="0.001")
    assert at.slider(key="layers").value == 7
    assert at.number_input(key="d").value == 33
    assert at.slider(key="drift").value == pytest.approx(-0.35)
    assert at.number_input(key="seed").value == 9
    assert at.select_slider(key="eps").value == 1e-3


@pytest.mark.parametrize(
    "key, raw", [("layers", "500"), ("d", "x"), ("drift", "inf"), ("seed", "1.5"), ("eps", "-2")]
)
def test_bad_link_values_give_a_notice_naming_the_parameter(key, raw):
    at = open_page(lang="en", **{key: raw})
    warnings = " ".join(w.value for w in at.warning)
    assert f"`{key}`" in warnings


@pytest.mark.parametrize("lang", ["en", "id"])
def test_runs_through_the_router_in_both_languages(lang):
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == t("residual.title", lang)
