"""App tests for the residual-stream page: the core's numbers and claims, links, the extremes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hst
from streamlit.testing.v1 import AppTest

from labs.residual.model import residual_view, simulate_residual
from labs.residual.trained import TRAINED_NORMS, TRAINED_QUANTITIES, trained_view
from tests import test_fuzz_pages as fuzz
from tests.apptest_util import (
    assert_claims_shown,
    decode,
    figures,
    metric,
    open_app,
    shown_number,
    trace,
)
from tests.hypothesis_util import examples
from ui import fmt
from ui.i18n import t


def decode_matrix(values: object) -> np.ndarray:
    """A heat map's z as Plotly sends it: typed arrays carry their shape as text, "4, 48"."""
    if isinstance(values, dict) and isinstance(values.get("shape"), str):
        shape = tuple(int(n) for n in values["shape"].split(","))
        return decode({k: v for k, v in values.items() if k != "shape"}).reshape(shape)
    return decode(values)


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
    np.testing.assert_allclose(
        shown_number(offset.value, lang), ref["rms"]["stream_mean"][-1], rtol=1e-3
    )
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
    assert at.select_slider(key="drift").value == pytest.approx(-0.35)
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


# --- Trained mode: the shipped checkpoints ----------------------------------------------------


@pytest.mark.parametrize("lang", ["en", "id"])
def test_trained_mode_shows_the_cores_readings(lang):
    at = open_page(lang=lang, mode="trained", trained_seed="1", prompt="code")
    view = trained_view(seed=1, text="code")
    assert at.button_group(key="mode").value == "trained"
    assert at.slider(key="trained_seed").value == 1
    assert at.selectbox(key="prompt").value == "code"
    assert view.prompt.strip() in [c.value for c in at.code]  # the text the models read
    spec = figures(at)["trained_figure"]
    for norm in TRAINED_NORMS:
        name = t(f"residual.trained_{norm}", lang)
        for index, quantity in enumerate(TRAINED_QUANTITIES):
            axis = "y" if index == 0 else f"y{index + 1}"
            shown = [tr for tr in spec["data"] if tr["name"] == name and tr["yaxis"] == axis]
            np.testing.assert_allclose(decode(shown[0]["y"]), view.readings[norm][quantity])
    heat = figures(at)["coordinates_figure"]
    for norm, trace_ in zip(TRAINED_NORMS, heat["data"], strict=True):
        np.testing.assert_allclose(decode_matrix(trace_["z"]), view.relative_magnitude[norm])
    table = at.table[-1].value
    assert list(table.columns) == [t(f"residual.trained_{n}", lang) for n in TRAINED_NORMS]
    row = table.loc[t("residual.q_stream_mean", lang)]
    np.testing.assert_allclose(
        [fmt.parse(v, lang) for v in row],  # written in the page's language
        [view.last[n]["stream_mean"] for n in TRAINED_NORMS],
        rtol=1e-3,
    )
    dims = at.table[-2].value
    top = dims.loc["3", t("residual.trained_rms", lang)]
    assert top == ", ".join(str(int(i)) for i in view.outlier_dims["rms"][-1])
    assert_claims_shown(at, view.claims, lang)


@pytest.mark.parametrize(
    "seed, prompt, lang", [(0, "docs", "en"), (2, "docs_id", "id"), (1, "docs", "id")]
)
def test_trained_mode_shows_the_claims_the_core_chose(seed, prompt, lang):
    at = open_page(lang=lang, mode="trained", trained_seed=str(seed), prompt=prompt)
    assert_claims_shown(at, trained_view(seed=seed, text=prompt).claims, lang)


def test_switching_modes_keeps_each_modes_settings():
    at = open_page(lang="en", layers="7", d="33")
    at.button_group(key="mode").set_value("trained").run()
    assert not at.exception
    assert "trained_figure" in figures(at) and "layers_figure" not in figures(at)
    assert not at.slider(key="trained_seed").disabled
    at.slider(key="trained_seed").set_value(2).run()
    at.selectbox(key="prompt").set_value("docs_id").run()
    assert_claims_shown(at, trained_view(seed=2, text="docs_id").claims, "en")
    at.button_group(key="mode").set_value("synthetic").run()
    assert at.slider(key="layers").value == 7 and at.number_input(key="d").value == 33
    assert "layers_figure" in figures(at)
    at.button_group(key="mode").set_value("trained").run()
    assert (
        at.slider(key="trained_seed").value == 2 and at.selectbox(key="prompt").value == "docs_id"
    )


def test_bad_trained_link_values_are_replaced_with_notices():
    at = open_page(lang="en", mode="trained", trained_seed="7", prompt="<b>hi</b>")
    notices = " ".join(w.value for w in at.warning)
    assert "`trained_seed`" in notices and "`prompt`" in notices
    assert at.slider(key="trained_seed").value == 2 and at.selectbox(key="prompt").value == "docs"
    at = open_page(lang="en", mode="both")
    assert "`mode`" in " ".join(w.value for w in at.warning)
    assert at.button_group(key="mode").value == "synthetic"


def test_a_page_interaction_loads_no_checkpoint_again(monkeypatch):
    import labs.training.store
    from labs.training.activations import read_shipped

    loads = []
    original = labs.training.store.load_checkpoint
    monkeypatch.setattr(
        labs.training.store, "load_checkpoint", lambda path: loads.append(path) or original(path)
    )
    read_shipped.cache_clear()
    at = open_page(lang="en", mode="trained")
    # At most every norm and seed once for this text (none if the page's cache holds the view).
    assert len(loads) in (0, 9)
    opened = len(loads)
    for seed in (1, 2, 0):
        at.slider(key="trained_seed").set_value(seed).run()
    at.button_group(key="lang").set_value("id").run()
    at.button_group(key="mode").set_value("synthetic").run()
    at.button_group(key="mode").set_value("trained").run()
    assert not at.exception and at.session_state["lang"] == "id"
    assert len(loads) == opened
    for prompt in ("code", "docs_id", "docs", "code"):
        at.selectbox(key="prompt").set_value(prompt).run()
        assert len(loads) in (opened, opened + 9, opened + 18)  # a new text is read once
    assert len(loads) % 9 == 0 and len(loads) <= opened + 18  # each other text at most once


def test_trained_presenter_view_shows_figures_and_explanations_only():
    at = open_page(lang="en", mode="trained", controls="hidden")
    assert {"trained_figure", "coordinates_figure"} <= set(figures(at))
    assert not [b for b in at.get("button_group") if b.key == "mode"]
    # The one code block is the text the models read: no share box.
    assert [c.value for c in at.code] == [trained_view(seed=0, text="docs").prompt.strip()]
    assert_claims_shown(at, trained_view(seed=0, text="docs").claims, "en")


def test_indonesian_trained_mode_shows_no_english():
    from tests.test_glossary import english_on_page

    for prompt in ("docs", "code"):
        at = open_page(lang="id", mode="trained", prompt=prompt, trained_seed="2")
        assert not english_on_page(at), english_on_page(at)


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=hst.data())
def test_hostile_links_in_trained_mode(data):
    """The page fuzz (tests/test_fuzz_pages.py) with the mode held at ``trained``, which the
    page fuzz reaches only by chance."""
    kinds = fuzz.PARAMS["residual.py"]
    keys = data.draw(hst.lists(hst.sampled_from(("trained_seed", "prompt", "seed")), min_size=1))
    query = {key: data.draw(fuzz.values_for(*kinds[key]), label=key) for key in set(keys)}
    lang = data.draw(hst.sampled_from(["en", "id"]))
    at = fuzz.open_page("residual.py", lang, {"mode": "trained", **query})
    fuzz.check_page(at, lang, query, kinds)
    assert "trained_figure" in figures(at)
