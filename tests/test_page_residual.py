"""App tests for the residual-stream page: the core's numbers and claims, links, the extremes."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.residual import residual_view, simulate_residual
from tests.apptest_util import assert_claims_shown, figures, metric, open_app, trace
from ui.i18n import t


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
    # The offset metric names its trunk, and the other trunk's reading is beside it.
    label = t("residual.metric_offset", lang, layers=10)
    (offset,) = [m for m in at.metric if m.label == label]
    np.testing.assert_allclose(float(offset.value), ref["rms"]["stream_mean"][-1], rtol=1e-3)
    layer_offset = float(ref["layer"]["stream_mean"][-1])
    assert offset.proto.delta == t("residual.vs_layer", lang, value=layer_offset)
    spec = figures(at)["layers_figure"]
    rms = trace(spec, t("residual.rms_trunk", lang))
    np.testing.assert_allclose(rms, ref["rms"]["stream_mean"], rtol=1e-12)


@pytest.mark.parametrize(
    "state",
    [
        dict(layers=24, d=256, drift=0.5, seed=0, eps=1e-5),
        dict(layers=1, d=2, drift=0.0, seed=2**31 - 1, eps=1.0),
        dict(layers=48, d=64, drift=-2.0, seed=5, eps=0.0),
    ],
)
@pytest.mark.parametrize("lang", ["en", "id"])
def test_page_shows_the_claims_the_core_chose(state, lang):
    query = {k: (str(v) if k != "eps" else repr(v)) for k, v in state.items()}
    at = open_page(lang=lang, **query)
    assert_claims_shown(at, residual_view(**state).claims, lang)


def test_offset_reaches_the_projection_only_through_rms_norm():
    at = open_page(lang="en", layers="24", d="128", drift="1")
    table = at.table[0].value
    # RMSNorm's trunk first, as on every page.
    assert list(table.columns) == [t("residual.rms_trunk", "en"), t("residual.layer_trunk", "en")]
    row = t("residual.q_input_cos_ones", "en")
    # LayerNorm's output is orthogonal to 1 (rounding reads as ≈ 0); RMSNorm's points along it.
    assert table.loc[row, t("residual.layer_trunk", "en")] in ("0", "≈ 0")
    assert float(table.loc[row, t("residual.rms_trunk", "en")]) > 0.8
    row = t("residual.q_output_share_offset", "en")
    assert float(table.loc[row, t("residual.layer_trunk", "en")]) < 10 / 128
    assert float(table.loc[row, t("residual.rms_trunk", "en")]) > 0.6


def test_without_drift_the_offset_share_stays_near_chance():
    at = open_page(lang="en", drift="0", d="256")
    assert metric(at, t("residual.metric_out_share", "en")) < 0.05


def test_link_with_every_parameter_restores_every_control():
    at = open_page(lang="id", layers="7", d="33", drift="-0.35", seed="9", eps="0.001")
    assert at.slider(key="layers").value == 7
    assert at.number_input(key="d").value == 33
    assert at.slider(key="drift").value == pytest.approx(-0.35)
    assert at.number_input(key="seed").value == 9
    assert at.select_slider(key="eps").value == 1e-3


def test_widest_stream_gives_a_notice_and_runs():
    at = open_page(lang="en", d="5000")
    assert "`d`" in " ".join(w.value for w in at.warning)
    assert at.number_input(key="d").value == 1024


def test_presenter_view_has_no_sentence_about_controls():
    at = open_page(lang="en", controls="hidden")
    assert "layers_figure" in figures(at)
    assert not at.get("code")  # no share box
    page = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    for hint in ("set the", "Set the", "on the left", "slider"):
        assert hint not in page
