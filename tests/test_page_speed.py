"""The speed lab page: nothing runs on load, Measure runs a tiny sweep, the lock says busy."""

from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from core.speedlab import MEASURE_LOCK, saving
from tests.apptest_util import APP, TIMEOUT, open_app

PAGE_FILE = str(Path(APP).parent / "pages" / "speed.py")
# Tiny sizes: the sweep 64, 128 at 2 rows takes milliseconds.
TINY = {
    "sweep": "width",
    "d": "128",
    "batch": "2",
    "impl": "numpy",
    "dtype": "float64",
    "repeats": "3",
}


def open_page_alone(query: dict[str, str]) -> AppTest:
    """Run the page script alone, as a visitor following a link to it would.

    Not ``open_app``: AppTest makes ``app.py`` look like a pages-directory app on every run, so
    ``ui.frame.ensure_router`` reruns each time and the rerun drops a button's click before
    ``st.button("measure")`` can return True (a real server reruns once per process).
    """
    at = AppTest.from_file(PAGE_FILE, default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    return at


TITLES = {
    "en": "Speed lab: is RMSNorm faster here?",
    "id": "Lab kecepatan: apakah RMSNorm lebih cepat di sini?",
}


@pytest.mark.parametrize("lang", ["en", "id"])
def test_runs_through_the_router_without_measuring(lang):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    at.switch_page("pages/speed.py")
    at.run()
    assert not at.exception
    assert at.title[0].value == TITLES[lang]
    assert not at.get("plotly_chart")
    assert "_speed_result" not in at.session_state


def test_link_restores_every_control():
    at = open_app("speed", **{**TINY, "impl": "torch", "device": "cpu", "sweep": "batch"})
    assert not at.exception
    assert at.segmented_control(key="sweep").value == "batch"
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


@pytest.mark.parametrize("impl", ["numpy", "torch"])
def test_measure_shows_the_run(impl):
    at = open_page_alone({**TINY, "impl": impl})
    at.button(key="measure").click().run()
    assert not at.exception
    run = at.session_state["_speed_result"]["run"]
    assert run.complete and run.shapes() == [(2, 64), (2, 128)]
    assert len(at.get("plotly_chart")) == 2
    # The metric shows the saving computed from the stored medians at the largest size.
    at128 = run.at(2, 128)
    measured = 100 * saving(at128["rms"].median_s, at128["layer"].median_s)
    shown = [m.value for m in at.metric]
    assert shown[1] == f"{measured:.0f} %"
    assert shown[0] == "7–64 %"
    table = at.dataframe[0].value
    assert len(table) == len(run.measurements)
    np.testing.assert_allclose(
        table.iloc[:, 4].astype(float), [float(f"{m.gb_per_s:.3g}") for m in run.measurements]
    )
    assert not MEASURE_LOCK.locked()


def test_busy_when_another_run_holds_the_lock():
    at = open_page_alone(TINY)
    with MEASURE_LOCK:
        at.button(key="measure").click().run()
    assert not at.exception
    assert any("try again" in w.value for w in at.warning)
    assert "_speed_result" not in at.session_state
