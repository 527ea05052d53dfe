"""The precision lesson, driven by links and widget keys; numbers checked against the core."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from apptest_util import figures, open_app, trace

from core.inputs import make_input
from core.precision import output_norm_vs_scale, reduction_error

pytest.importorskip("torch")


@pytest.mark.parametrize("lang", ["en", "id"])
def test_renders_in_both_languages(lang: str) -> None:
    at = open_app("precision", lang=lang)
    assert not at.exception
    assert at.title[0].value == {"en": "Epsilon and precision", "id": "Epsilon dan presisi"}[lang]
    assert {"norm_sweep", "error_sweep", "running_sum"} <= set(figures(at))


def test_norm_sweep_is_the_core_sweep_and_flat_at_sqrt_d() -> None:
    at = open_app("precision", d="100", seed="3", placement="outside")
    spec = figures(at)["norm_sweep"]
    line = trace(spec, "ε = 1e-06 · outside")
    scales = trace(spec, "ε = 1e-06 · outside", axis="x")
    expected = output_norm_vs_scale(100, scales, [1e-6], placement="outside", seed=3)[0]
    np.testing.assert_allclose(line, expected, rtol=1e-12)
    np.testing.assert_allclose(line[-1], math.sqrt(100), rtol=1e-6)
    assert not any("inside" in tr["name"] for tr in spec["data"])


def test_link_restores_every_control() -> None:
    at = open_app("precision", d="256", seed="9", placement="inside", scale="300", eps="1e-5")
    assert not at.exception
    assert at.number_input(key="d").value == 256
    assert at.number_input(key="seed").value == 9
    assert at.segmented_control(key="placement").value == "inside"
    assert at.select_slider(key="scale").value == 300.0
    assert at.select_slider(key="eps").value == 1e-5


def test_float16_overflow_shows_in_table_and_warning() -> None:
    at = open_app("precision", d="256", scale="300")
    table = at.table[0].value
    assert table.loc["float16"].iloc[3] == "yes"
    assert table.loc["bfloat16"].iloc[3] == "no"
    x = 300 * make_input(256, seed=0)
    expected = reduction_error(x[None, :], ["float32"], eps=1e-6)["float32"].output_error[0]
    assert table.loc["float32"].iloc[2] == f"{expected:.3g}"
    # The running float16 sum passes 65504 long before the last coordinate.
    assert any("65504" in w.value for w in at.warning)


def test_moving_the_scale_widget_updates_the_table() -> None:
    at = open_app("precision", d="64")
    assert at.table[0].value.loc["float16"].iloc[3] == "no"
    at.select_slider(key="scale").set_value(1e4).run()
    assert not at.exception
    assert at.table[0].value.loc["float16"].iloc[3] == "yes"


def test_bad_link_values_give_notices() -> None:
    at = open_app("precision", d="99999", placement="sideways", scale="abc")
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    for key in ("`d`", "`placement`", "`scale`"):
        assert key in text
    assert at.number_input(key="d").value == 4096


def test_without_torch_the_page_says_so_and_hides_half(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    at = open_app("precision", d="32", scale="3e-1")
    assert not at.exception
    assert any("PyTorch" in i.value and "bfloat16" in i.value for i in at.info)
    assert list(at.table[0].value.index) == ["float64", "float32"]
