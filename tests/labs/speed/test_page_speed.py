"""The speed lab page: nothing runs on load (the plan and the paper's figures show), Measure
runs a tiny sweep and the page shows the claims the core chose, the lock says busy, a device the
server lacks is narrowed with a notice."""

import numpy as np
import pytest

from labkit.lock import MEASURE_LOCK
from labs.speed.model import paired_ratio
from tests.apptest_util import assert_claims_shown, figures, open_app
from ui.i18n import t

# Tiny sizes: the sweep 64, 128 at 2 rows takes milliseconds.
TINY = {
    "sweep": "width",
    "d": "128",
    "batch": "2",
    "impl": "numpy",
    "dtype": "float64",
    "repeats": "3",
}
TITLES = {
    "en": "Speed lab: is RMSNorm faster here?",
    "id": "Lab kecepatan: apakah RMSNorm lebih cepat di sini?",
}


@pytest.mark.parametrize("lang", ["en", "id"])
def test_shows_the_plan_and_the_paper_without_measuring(lang):
    at = open_app("speed", lang=lang)
    assert not at.exception
    assert at.title[0].value == TITLES[lang]
    assert not at.get("plotly_chart")
    assert "_speed_result" not in at.session_state
    # What Measure will time: every kernel, the sizes, the pRMSNorm p values.
    assert len(at.table[0].value) == 5
    text = " ".join(m.value for m in at.markdown)
    # Numbers in the page's language: a decimal comma and period grouping in Indonesian.
    pct = {"en": "6.25%", "id": "6,25%"}[lang]
    assert "256 × 64" in text and "256 × 4096" in text and pct in text
    values = [m.value for m in at.metric]
    ratio = "0.36–0.93×" if lang == "en" else "0,36–0,93×"
    assert values[:2] == [ratio, pct]


def test_link_restores_every_control():
    at = open_app("speed", **{**TINY, "impl": "torch", "device": "cpu", "sweep": "batch"})
    assert not at.exception
    assert at.selectbox(key="sweep").value == "batch"
    assert at.select_slider(key="d").value == 128
    assert at.select_slider(key="batch").value == 2
    assert at.segmented_control(key="impl").value == "torch"
    assert at.selectbox(key="device").value == "cpu"
    assert at.selectbox(key="dtype").value == "float64"
    assert at.number_input(key="repeats").value == 3
    assert not at.warning


def test_bad_link_values_give_notices():
    at = open_app("speed", d="100000", repeats="-2", impl="jax")
    assert not at.exception
    notices = at.warning[0].value
    for key in ("`d`", "`repeats`", "`impl`"):
        assert key in notices


def test_a_device_the_server_lacks_is_narrowed_with_a_notice():
    """This server has no GPU: /speed?device=cuda says so, naming the parameter."""
    import torch

    assert not torch.cuda.is_available()
    at = open_app("speed", device="cuda")
    assert not at.exception
    assert "`device`" in at.warning[0].value and "cuda" in at.warning[0].value
    assert at.selectbox(key="device").options == ["cpu"]


@pytest.mark.parametrize(("impl", "lang"), [("numpy", "en"), ("torch", "id")])
def test_measure_shows_the_run(impl, lang):
    at = open_app("speed", lang=lang, **{**TINY, "impl": impl})
    at.button(key="measure").click().run()
    assert not at.exception
    view = at.session_state["_speed_result"]["view"]
    run = view.run
    assert run.complete and run.shapes() == [(2, 64), (2, 128)]
    assert {"time", "bandwidth", "partial"} <= set(figures(at))
    assert_claims_shown(at, view.claims, lang)
    # The headline metric is the median of the round-by-round ratios at the largest size.
    at128 = run.at(2, 128)
    ratio = paired_ratio(at128["rms_composite"], at128["layer_composite"])[0]
    assert float(view.claims["headline_composite"].fields["ratio"]) == ratio
    # The table of every measurement, in its own expander (the charts' Data tables come first).
    (numbers,) = [e for e in at.expander if e.label == t("speed.table_heading", lang)]
    table = numbers.dataframe[0].value
    assert len(table) == len(run.measurements)
    np.testing.assert_array_equal(table.iloc[:, -1], [len(m.samples) for m in run.measurements])
    assert not MEASURE_LOCK.locked()


def test_busy_when_another_run_holds_the_lock():
    at = open_app("speed", **TINY)
    with MEASURE_LOCK:
        at.button(key="measure").click().run()
    assert not at.exception
    assert any("try again" in w.value for w in at.warning)
    assert "_speed_result" not in at.session_state
