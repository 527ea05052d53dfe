"""The backward-pass page: runs in both languages, restores links, shows the true Jacobian."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from streamlit.testing.v1 import AppTest

from core.inputs import make_input
from labs.backward.model import backward_view
from tests.apptest_util import (
    APP,
    TIMEOUT,
    assert_claims_shown,
    decode,
    figures,
    open_app,
    page_params,
)

LINK = {"d": "6", "offset": "-1.5", "eps": "0.01", "seed": "7", "grad": "ones"}


def open_page(query: dict[str, str]) -> AppTest:
    """The backward page opened from a link with ``query``; it must run without an exception."""
    at = open_app("backward", **query)
    assert not at.exception
    return at


def heatmap_values(z: object, d: int) -> np.ndarray:
    """A heatmap's z as sent to the browser: nested lists or a typed array (shape as text)."""
    if isinstance(z, dict):
        z = {key: value for key, value in z.items() if key != "shape"}
    return decode(z).reshape(d, d)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_runs_through_the_router_in_both_languages(lang):
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.query_params["lang"] = lang
    at.run()
    at.switch_page("pages/backward.py")
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 4
    assert at.title[0].value.startswith("The backward" if lang == "en" else "Propagasi balik")


def test_link_restores_every_control():
    at = open_page(LINK)
    assert at.number_input(key="d").value == 6
    assert at.select_slider(key="offset").value == -1.5
    assert at.select_slider(key="eps").value == 0.01
    assert at.number_input(key="seed").value == 7
    assert at.selectbox(key="grad").value == "ones"
    assert not at.warning


def test_controls_open_at_their_link_defaults():
    at = open_page({})
    assert at.number_input(key="d").value == 8
    assert at.select_slider(key="offset").value == 1.0
    assert at.select_slider(key="eps").value == 1e-5
    assert at.number_input(key="seed").value == 0
    assert at.selectbox(key="grad").value == "random"


def test_bad_link_values_give_notices():
    at = open_page({"d": "500", "eps": "abc", "grad": "sideways"})
    notices = at.warning[0].value
    for key in ("`d`", "`eps`", "`grad`"):
        assert key in notices
    assert at.number_input(key="d").value == 64


def test_displayed_jacobians_match_autograd():
    at = open_page(LINK)
    spec = figures(at)["jacobians"]
    heatmaps = [trace for trace in spec["data"] if trace["type"] == "heatmap"]
    x = torch.tensor(make_input(6, seed=7, offset=-1.5), dtype=torch.float64)
    expected = [
        torch.autograd.functional.jacobian(lambda v: F.rms_norm(v, (6,), eps=0.01), x),
        torch.autograd.functional.jacobian(lambda v: F.layer_norm(v, (6,), eps=0.01), x),
    ]
    assert len(heatmaps) == 2
    for trace, reference in zip(heatmaps, expected, strict=True):
        # The figure carries float64 values through JSON: round-trip exact to ~1e-15.
        np.testing.assert_allclose(
            heatmap_values(trace["z"], 6), reference.numpy(), rtol=1e-12, atol=1e-14
        )


def test_ones_gradient_is_removed_by_layernorm_only():
    at = open_page(LINK)
    table = at.table[0].value
    # Rows: g, through RMSNorm, through LayerNorm; columns: along 1, along x, length.
    rms_ones = float(table.iloc[1, 0])
    # LayerNorm's input gradient is rounding noise, shown as such.
    assert table.iloc[2, 0] == "≈ 0" and table.iloc[2, 2] == "≈ 0"
    x = make_input(6, seed=7, offset=-1.5)
    r = np.sqrt(np.mean(x**2) + 0.01)
    along = np.sum(x) / np.sqrt(6)
    np.testing.assert_allclose(rms_ones, (1 - along**2 / (6 * r**2)) / r, rtol=1e-3)


def test_eps_zero_shows_exact_zeros():
    at = open_page({"eps": "0", "grad": "x", "d": "5"})
    table = at.table[0].value
    # g along x: both input gradients along x are rounding noise, shown as "≈ 0".
    assert table.iloc[0, 1] == "1"
    for row in (1, 2):
        assert table.iloc[row, 1] == "≈ 0"


@pytest.mark.parametrize(
    ("lang", "query"),
    [
        ("en", {}),
        ("id", {"d": "2", "eps": "0", "offset": "-20"}),
        ("en", {"d": "2", "eps": "1", "grad": "x"}),
        ("id", {"d": "64", "eps": "0.3", "offset": "20", "grad": "ones", "seed": "5"}),
    ],
)
def test_page_shows_the_claims_the_core_chose(lang, query):
    at = open_page({"lang": lang, **query})
    state = {p.key: p.default for p in page_params("backward")}
    state.update({k: type(state[k])(v) for k, v in query.items()})
    assert_claims_shown(at, backward_view(**state).claims, lang)


def test_gradient_choice_is_translated_and_the_link_keeps_its_value():
    at = open_page({"lang": "id"})
    control = at.selectbox(key="grad")
    assert control.options == ["vektor satu", "searah x", "acak"]
    control.set_value("x").run()
    assert not at.exception
    assert at.query_params["grad"] == "x"
    assert at.selectbox(key="grad").value == "x"


def test_large_eps_says_damped_not_flattened():
    """d = 8, eps = 1: the audit's state. The eigenvalue along x is eps/r^3, not 1/r."""
    at = open_page({"d": "8", "eps": "1"})
    text = " ".join(m.value for m in at.markdown)
    assert "only damped, not flattened" in text
    x = make_input(8, seed=0, offset=1.0)
    r = np.sqrt(np.mean(x**2) + 1.0)
    assert f"ε/r³ = {1 / r**3:.4g}" in text


@pytest.mark.parametrize(
    "state",
    [(8, 1.0, 1e-5, 0, "random"), (2, 1.0, 1e-5, 0, "random"), (3, 5.0, 1e-5, 0, "random"),
     (2, -3.0, 1e-5, 0, "x"), (2, 0.0, 1e-5, 0, "ones")],
)  # fmt: skip
def test_component_labels_never_cover_a_bar(state) -> None:
    """Tiny components (-2.3e-6 beside -0.73) kept their labels over the next bar: each bar now
    has a row of its own, its label past its end in that row, and the axis has room for it."""
    from labs.backward.figures import components_figure

    lesson = backward_view(*state).lesson
    kinds = ("upstream", "rms", "layer")
    parts = {k: (lesson.parts[k].ones, lesson.parts[k].radial) for k in kinds}
    labels = {k: k for k in ("along_ones", "along_x", "upstream", "rms", "layer", "component")}
    fig = components_figure(parts, labels, lambda v: f"{v:.4g}")
    values = [v for pair in parts.values() for v in pair]
    assert any(0 < abs(v) < 1e-3 * max(map(abs, values)) for v in values)  # a tiny bar is there
    for bar in fig.data:
        assert (bar.orientation, bar.textposition, bar.textangle) == ("h", "outside", 0)
        assert bar.cliponaxis is False and len(bar.text) == len(bar.x) == 2
    lo, hi = min(0.0, *values), max(0.0, *values)
    left, right = fig.layout.xaxis.range
    assert left <= lo - 0.5 * (hi - lo) and right >= hi + 0.5 * (hi - lo)
