"""The explorer, driven as a person would: links, widgets by key, and what the math says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core import layer_norm, rms_norm
from core.inputs import gain_vector, make_input
from tests.apptest_util import (
    assert_claims_shown,
    figures,
    open_app,
    open_page_alone,
    open_share,
    trace,
)
from ui import fmt
from ui.i18n import t


def outputs(at) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    spec = figures(at)["coords"]
    return trace(spec, "x"), trace(spec, "RMSNorm(x)"), trace(spec, "LayerNorm(x)")


def notices(at) -> str:
    return " ".join(w.value for w in at.warning)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_renders_in_both_languages_without_exception(lang: str) -> None:
    at = open_app(lang=lang)
    assert not at.exception
    expected = {
        "en": "RMSNorm and LayerNorm, side by side",
        "id": "RMSNorm dan LayerNorm, berdampingan",
    }[lang]
    assert at.title[0].value == expected
    assert {"coords", "plane"} <= set(figures(at))


def test_shows_what_the_core_computes() -> None:
    at = open_app(
        d="32",
        seed="7",
        offset="1.5",
        scale="2",
        eps="0.01",
        gain="1.5",
        gain_pattern="ramp",
        bias="0.5",
        dist="laplace",
    )
    x, y_rms, y_layer = outputs(at)
    expected_x = make_input(32, dist="laplace", seed=7, offset=1.5, scale=2.0)
    g = gain_vector(32, pattern="ramp", value=1.5, seed=7)
    # The chart carries float32 (what its pixels and 5-digit hover can show).
    np.testing.assert_array_equal(x, expected_x.astype(np.float32))
    np.testing.assert_array_equal(y_rms, rms_norm(expected_x, g, eps=0.01).astype(np.float32))
    np.testing.assert_array_equal(
        y_layer, layer_norm(expected_x, g, np.full(32, 0.5), eps=0.01).astype(np.float32)
    )


def test_raising_offset_moves_rmsnorm_and_leaves_layernorm() -> None:
    at = open_app(d="64", eps="0")
    _, rms_before, layer_before = outputs(at)
    at.select_slider(key="offset").set_value(5.0).run()
    assert not at.exception
    _, rms_after, layer_after = outputs(at)
    # LayerNorm subtracts the mean first, so a common offset cancels (to rounding).
    np.testing.assert_allclose(layer_after, layer_before, rtol=0, atol=1e-6)
    # RMSNorm carries it: the output's mean moves towards the offset's sign.
    assert np.max(np.abs(rms_after - rms_before)) > 0.5
    assert np.mean(rms_after) > np.mean(rms_before) + 0.5


@pytest.mark.parametrize("gain", [1.0, -2.5, 0.35])
def test_eps_zero_gives_output_norm_sqrt_d_times_gain(gain: float) -> None:
    d = 50
    at = open_app(d=str(d), eps="0", gain=str(gain), offset="0.7")
    _, y_rms, y_layer = outputs(at)
    expected = math.sqrt(d) * abs(gain)
    np.testing.assert_allclose(np.linalg.norm(y_rms), expected, rtol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(y_layer), expected, rtol=1e-6)
    # The plane view's circle has that radius too.
    plane = figures(at)["plane"]
    circle = plane["data"][0]
    from tests.apptest_util import decode

    radius = np.hypot(decode(circle["x"]), decode(circle["y"]))
    np.testing.assert_allclose(radius, expected, rtol=1e-12)


def test_eps_pulls_outputs_inside_the_circle() -> None:
    at = open_app(d="8", scale="0.1", eps="0.01")
    _, y_rms, y_layer = outputs(at)
    assert np.linalg.norm(y_rms) < math.sqrt(8) * 0.99
    assert np.linalg.norm(y_layer) < math.sqrt(8) * 0.99


FULL_LINK = {
    "d": "300",
    "dist": "uniform",
    "seed": "42",
    "offset": "-2.5",
    "scale": "3",
    "eps": "1e-3",
    "gain": "0.5",
    "gain_pattern": "alternating",
    "bias": "-1.25",
    "backend": "torch",
    "device": "cpu",
    "dtype": "float32",
    "lang": "id",
}


def test_a_link_with_every_parameter_restores_every_control() -> None:
    at = open_app(**FULL_LINK)
    assert not at.exception
    assert not at.warning
    assert at.number_input(key="d").value == 300
    assert at.selectbox(key="dist").value == "uniform"
    assert at.number_input(key="seed").value == 42
    assert at.select_slider(key="offset").value == -2.5
    assert at.select_slider(key="scale").value == 3.0
    assert at.select_slider(key="eps").value == 1e-3
    assert at.select_slider(key="gain").value == 0.5
    assert at.selectbox(key="gain_pattern").value == "alternating"
    assert at.select_slider(key="bias").value == -1.25
    assert at.session_state["backend"] == "torch"
    assert at.selectbox(key="device").value == "cpu"
    assert at.selectbox(key="dtype").value == "float32"
    assert at.session_state["lang"] == "id"
    x, _, _ = outputs(at)
    expected = make_input(300, dist="uniform", seed=42, offset=-2.5, scale=3.0)
    # Computed in float32 by torch, shown in float64.
    np.testing.assert_allclose(x, expected.astype(np.float32), rtol=0, atol=0)


def test_the_share_link_reproduces_the_view() -> None:
    at = open_share(open_page_alone("explorer", **FULL_LINK))
    link = shared_code(at)[0]
    query = dict(pair.split("=", 1) for pair in link.split("?", 1)[1].split("&"))
    again = open_app(**query)
    np.testing.assert_array_equal(outputs(again)[1], outputs(at)[1])
    assert query["lang"] == "id"


def test_a_typed_vector_overrides_width_and_distribution() -> None:
    at = open_app(x="1, 2, 3, 10", d="99")
    x, y_rms, y_layer = outputs(at)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0, 10.0])
    np.testing.assert_allclose(y_rms, rms_norm(x, np.ones(4), eps=1e-5), rtol=1e-7)
    assert at.number_input(key="d").disabled


@pytest.mark.parametrize(
    ("typed", "fragment"),
    [
        ("1, 2, abc, 4", "value 3"),
        ("1, inf", "value 2"),
        ("5", "at least 2"),
        ("1," * 9000, "at most 8,192"),
    ],
)
def test_a_bad_typed_vector_names_the_problem_and_keeps_the_text(typed: str, fragment: str):
    at = open_app(x=typed)
    assert not at.exception
    message = " ".join(e.value for e in at.error)
    assert "`x`" in message and fragment in message
    assert at.text_input(key="x_typed").value == typed
    # The page still shows a computed view (the generated vector).
    assert len(outputs(at)[0]) == 16


@pytest.mark.parametrize(
    ("key", "raw", "widget", "expected"),
    [
        ("d", "99999", "number_input", 8192),
        ("d", "1", "number_input", 2),
        ("d", "abc", "number_input", 16),
        ("d", "7.5", "number_input", 8),
        ("d", "1" * 60, "number_input", 8192),
        ("offset", "nan", "select_slider", 0.0),
        ("offset", "-1e308", "select_slider", -20.0),
        ("offset", "inf", "select_slider", 0.0),
        ("eps", "0.00002", "select_slider", 1e-5),
        ("eps", "-1", "select_slider", 0.0),
        ("scale", "", "select_slider", 1.0),
        ("dist", "<script>alert(1)</script>", "selectbox", "normal"),
        ("gain_pattern", "zigzag", "selectbox", "constant"),
    ],
)
def test_bad_link_values_are_corrected_with_a_notice(key, raw, widget, expected) -> None:
    at = open_app(**{key: raw})
    assert not at.exception
    assert getattr(at, widget)(key=key).value == expected
    text = notices(at)
    assert f"`{key}`" in text
    assert "<script>" not in text.replace("`<script>alert(1)</script>`", "")


def test_values_equal_to_an_offered_value_need_no_notice() -> None:
    at = open_app(eps="0.00001", scale="1.0", lang="EN")
    assert not at.warning
    assert at.select_slider(key="eps").value == 1e-5
    assert at.session_state["lang"] == "en"


def test_zero_vector_with_eps_zero_is_defined_and_explained() -> None:
    at = open_app(scale="0", eps="0")
    assert not at.exception
    _, y_rms, y_layer = outputs(at)
    assert np.all(y_rms == 0) and np.all(y_layer == 0)
    assert "0/0" in notices(at)


def test_float16_overflow_is_reported() -> None:
    at = open_app(backend="torch", dtype="float16", scale="1000", d="256")
    assert not at.exception
    assert "overflow" in notices(at)


def test_three_dimensional_view_appears_for_d_equal_three() -> None:
    assert "sphere" not in figures(open_app(d="4"))
    at = open_app(d="3", eps="0")
    spec = figures(at)["sphere"]
    rms_point = [tr for tr in spec["data"] if tr.get("name") == "RMSNorm(x)"][0]
    from tests.apptest_util import decode

    tip = np.array([decode(rms_point[a])[-1] for a in ("x", "y", "z")])
    np.testing.assert_allclose(np.linalg.norm(tip), math.sqrt(3), rtol=1e-12)


@pytest.mark.parametrize("link", [{}, {"offset": "3"}, {"scale": "0.001", "offset": "0.5"}])
def test_three_dimensional_ticks_stay_clear_of_the_corners(link: dict) -> None:
    """Five automatic ticks per axis reached the cube's corners, where two axes' end labels
    ("-4", "-4") lay on each other, and the bottom ticks were cut off: now three ticks each,
    distinct, well inside the range, and the camera far enough out to frame them."""
    scene = figures(open_app(d="3", **link))["sphere"]["layout"]["scene"]
    for axis in ("xaxis", "yaxis", "zaxis"):
        lo, hi = scene[axis]["range"]
        ticks = scene[axis]["tickvals"]
        assert len(ticks) == len(set(ticks)) == 3 and 0.0 in ticks
        assert all(abs(t) <= 0.75 * hi for t in ticks) and max(ticks) > 0.3 * hi
        assert lo == -hi
    eye = scene["camera"]["eye"]
    assert math.hypot(eye["x"], eye["y"], eye["z"]) > 1.5 * math.hypot(1.45, 1.1, 0.55)


def test_wide_vectors_use_webgl_and_envelopes_one_svg_line() -> None:
    # Every coordinate of a wide vector: WebGL markers. An envelope: one SVG line per trace,
    # which redraws without a fresh WebGL canvas on every slider move.
    at = open_app(d="1000")
    assert not at.exception
    data = figures(at)["coords"]["data"]
    assert {(tr["type"], tr["mode"]) for tr in data} == {("scattergl", "markers")}
    at = open_app(d="8192")
    assert not at.exception
    data = figures(at)["coords"]["data"]
    assert {(tr["type"], tr["mode"]) for tr in data} == {("scatter", "lines")}


def _styles(at) -> str:
    """The page's CSS (its style elements; the language script is not CSS)."""
    return " ".join(el.proto.body for el in at.get("html") if el.proto.body.startswith("<style"))


def test_presenter_link_hides_controls_and_enlarges_text() -> None:
    plain = open_app()
    assert "stSidebar" not in _styles(plain)
    at = open_app(controls="hidden", text="large", d="8")
    assert not at.exception and not at.warning
    styles = _styles(at)
    assert 'section[data-testid="stSidebar"]' in styles and "font-size: 22px" in styles
    # The figures still follow the link.
    assert len(outputs(at)[0]) == 8
    # The page's experiment stays in the page, beside the chart: one offset slider, not hidden.
    assert [s.key for s in at.main.select_slider] == ["offset"]
    assert "offset" not in [s.key for s in at.sidebar.select_slider]


def test_presenter_builder_makes_the_link() -> None:
    at = open_page_alone("explorer", d="8")
    assert not shared_code(at)  # nothing of the dialog is drawn until it is opened
    open_share(at)
    present = shared_code(at)[-1]
    assert "d=8" in present and "controls=hidden" in present and "text=large" in present
    open_share(at, _present_large=False, _present_embed=True)
    present = [c for c in shared_code(at) if "controls=hidden" in c][0]
    assert "text=large" not in present and "embed=true" in present
    assert any("<iframe" in c for c in shared_code(at))


def shared_code(at) -> list[str]:
    """The share dialog's code blocks (links, HTML), not the page's Python snippet."""
    return [c.value for c in at.code if c.language != "python"]


def test_an_unknown_view_option_gets_a_notice() -> None:
    at = open_app(controls="<i>x</i>")
    assert "`controls`" in notices(at)
    assert "stSidebar" not in _styles(at)


def test_downloads_are_offered() -> None:
    at = open_page_alone("explorer", d="5")
    assert not at.get("download_button") and not at.get("file_uploader")
    open_share(at)
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == [
        "Diagram of the plane of 1 and x⊥ (CSV)",  # the chart data (ui.chart)
        "Coordinates (CSV)",
        "Statistics (CSV)",
        "Whole view (JSON)",
        "Figure (HTML, works offline)",
    ]


def test_without_torch_the_page_runs_on_numpy_and_says_what_it_hid(monkeypatch) -> None:
    import core

    monkeypatch.setattr(core, "torch_available", lambda: False)
    at = open_app(backend="torch", dtype="float16", d="12")
    assert not at.exception
    info = " ".join(i.value for i in at.info)
    assert "PyTorch is not installed" in info and "backend=torch" in info
    assert not [w for w in at.sidebar if getattr(w, "key", None) in ("backend", "dtype")]
    _, y_rms, _ = outputs(at)
    # Computed in float64 by numpy, whatever the link asked for (the chart carries float32).
    exact = rms_norm(make_input(12), np.ones(12), eps=1e-5)
    np.testing.assert_array_equal(y_rms, exact.astype(np.float32))


def test_typed_values_that_overflow_once_scaled_are_refused() -> None:
    at = open_app(x="1e150, -1e150, 3", scale="10000")
    assert not at.exception
    assert "`x`" in " ".join(e.value for e in at.error)
    assert at.text_input(key="x_typed").value == "1e150, -1e150, 3"
    assert np.all(np.isfinite(outputs(at)[1]))


def core_view(**link: str):
    """The core's view for a link, as the page computes it (numbers parsed like the link)."""
    from labs.explorer import explore
    from pages.explorer import PARAMS

    values = {p.key: p.parse(link[p.key])[0] if p.key in link else p.default for p in PARAMS}
    x = make_input(
        values["d"], dist=values["dist"], seed=values["seed"], offset=values["offset"],
        scale=values["scale"],
    )  # fmt: skip
    settings = ("eps", "gain", "gain_pattern", "seed", "bias", "rms_bias", "partial")
    return explore(x, **{k: values[k] for k in settings}, backend=values["backend"],
                   device="cpu", dtype=values["dtype"])  # fmt: skip


CLAIM_LINKS = [
    {},
    {"d": "3", "eps": "0.1", "gain": "-1.5"},
    {"offset": "0", "dist": "ramp", "partial": "0.0625"},
    {"d": "300", "gain_pattern": "alternating", "rms_bias": "0.5", "scale": "0.01", "eps": "1"},
    {"d": "16", "dist": "constant", "scale": "0", "offset": "0.1", "eps": "0", "backend": "torch",
     "dtype": "float32"},
    {"d": "64", "backend": "torch", "dtype": "bfloat16", "offset": "3"},
    # eps is negligible against mean(x²) = 24.74, not against Var(x) = 0.0077: LayerNorm's only.
    {"eps": "0.001", "scale": "0.1", "offset": "5"},
]  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "id"])
@pytest.mark.parametrize("link", CLAIM_LINKS, ids=lambda link: "&".join(link) or "default")
def test_the_page_shows_exactly_the_sentences_the_core_chose(link: dict, lang: str) -> None:
    at = open_app(lang=lang, **link)
    assert not at.exception
    assert_claims_shown(at, core_view(**link).claims, lang)


def test_negative_gain_reflects_rmsnorm_and_the_plane_shows_the_lower_half() -> None:
    at = open_app(gain="-2", eps="0")
    text = " ".join(m.value for m in at.markdown)
    assert "ray opposite to x" in text and "points exactly opposite to x" in text
    plane = figures(at)["plane"]
    assert plane["layout"]["yaxis"]["range"][0] < -1.0
    rms_point = trace(plane, "RMSNorm(x)", "y")
    assert rms_point[0] < 0


def test_wide_vector_chart_is_an_envelope_that_says_so() -> None:
    from labs.explorer import CHART_BUCKETS

    at = open_app(d="4096", seed="5")
    spec = figures(at)["coords"]
    x_shown, rms_shown = trace(spec, "x"), trace(spec, "RMSNorm(x)")
    index = trace(spec, "x", "x").astype(int)
    assert len(x_shown) <= 2 * CHART_BUCKETS < 4096
    exact = make_input(4096, seed=5)
    # Every point is an exact coordinate (to float32) at its own index; the extremes are kept.
    np.testing.assert_array_equal(x_shown, exact[index].astype(np.float32))
    assert x_shown.max() == np.float32(exact.max()) and x_shown.min() == np.float32(exact.min())
    assert len(rms_shown) <= 2 * CHART_BUCKETS
    width = 7  # 4096 coordinates in groups of ceil(4096 / CHART_BUCKETS)
    notes = [a["text"] for a in spec["layout"]["annotations"]]
    assert f"Envelope, groups of {width}" in notes
    caption = " ".join(c.value for c in at.caption)
    assert f"4,096 coordinates: a line runs between each group of {width}'s" in caption
    at = open_app(d="1200", seed="5")  # every coordinate shown: no envelope, and none said
    assert len(trace(figures(at)["coords"], "x")) == 1200
    assert not any("nvelope" in a["text"] for a in figures(at)["coords"]["layout"]["annotations"])
    assert "envelope" not in " ".join(c.value for c in at.caption)


def test_partial_rmsnorm_and_rms_bias_follow_the_link() -> None:
    at = open_app(d="64", partial="0.0625", rms_bias="0.5", seed="2")
    assert not at.exception
    assert at.select_slider(key="partial").value == 0.0625
    assert at.select_slider(key="rms_bias").value == 0.5
    x = make_input(64, seed=2)
    expected = rms_norm(x, np.ones(64), np.full(64, 0.5), eps=1e-5, partial=0.0625)
    np.testing.assert_array_equal(outputs(at)[1], expected.astype(np.float32))
    text = " ".join(m.value for m in at.markdown)
    assert "k = 4 of 64" in text and "6.25%" in text
    assert "Zhang and Sennrich" in text


def test_presenter_view_says_nothing_about_hidden_controls() -> None:
    plain = " ".join(m.value for m in open_app(d="4").markdown)
    assert "First move" in plain
    at = open_app(controls="hidden", d="4")
    shown = " ".join(t for kind in ("markdown", "caption", "info") for t in
                     (e.value for e in at.get(kind)))  # fmt: skip
    for hidden in ("First move", "Set d = 3", "Move the offset", "controls"):
        assert hidden not in shown


def test_indonesian_page_shows_no_english_core_notes() -> None:
    at = open_app(lang="id", backend="torch", dtype="float16", partial="0.5")
    shown = " ".join(t for kind in ("markdown", "caption", "warning", "info", "expander")
                     for t in (getattr(e, "value", "") or "" for e in at.get(kind)))  # fmt: skip
    for english in ("given explicitly", "the default", "pRMSNorm: the RMS comes"):
        assert english not in shown


def test_constant_float32_vector_names_layernorm_rounding_noise() -> None:
    at = open_app(dist="constant", scale="0", offset="0.1", eps="0", backend="torch",
                  dtype="float32")  # fmt: skip
    warnings = " ".join(w.value for w in at.warning)
    assert "rounding noise" in warnings and "float32" in warnings
    layer = outputs(at)[2]
    assert np.max(np.abs(layer)) > 0.5  # the noise the sentence speaks of


def test_a_vector_too_large_for_float16_is_computed_in_float64_with_a_notice() -> None:
    at = open_app(x="1e5, 2, 3", backend="torch", dtype="float16")
    assert not at.exception
    assert "largest finite float16" in " ".join(w.value for w in at.warning)
    np.testing.assert_array_equal(outputs(at)[0], [1e5, 2, 3])


@pytest.mark.parametrize("link", [{"d": "3", "gain": "-1.5"}, {"d": "4096", "offset": "2"}])
def test_every_figure_passes_plotly_validation(link: dict) -> None:
    """The builders skip Plotly's validation at run time; here every property is checked."""
    import plotly.graph_objects as go

    from labs.explorer.figures import coordinates_figure, plane_figure, sphere_figure

    v = core_view(**link)
    names = {k: k for k in ("input", "outputs", "x", "rms", "layer", "coordinate", "value",
                            "axis_a", "axis_b", "circle", "ray", "x_short", "sphere", "plane",
                            "circle3d", "ones")}  # fmt: skip
    series = {k: (s.index, s.values) for k, s in v.chart.items()}
    means = {k: s.mean for k, s in v.chart.items()}
    built = [
        coordinates_figure(series, means, names, d=v.d, note="envelope"),
        plane_figure(v.plane.point, v.plane.rms, v.plane.layer, v.plane.radius, names),
    ]
    if v.sphere is not None:
        s = v.sphere
        built.append(sphere_figure(s.plane, s.circle, s.sphere, (s.point, s.rms, s.layer), names))
    for fig in built:
        go.Figure(fig.to_dict())  # raises ValueError on any invalid property


@pytest.mark.parametrize("lang", ["en", "id"])
def test_eps_named_against_the_moment_it_is_not_negligible_to(lang: str) -> None:
    """mean(x²) = 24.74 dwarfs ε = 0.001 (RMSNorm's radius × 0.99998), Var(x) = 0.0077 does not."""
    link = {"eps": "0.001", "scale": "0.1", "offset": "5"}
    claim = core_view(**link).claims["plane_eps"]
    assert claim.key == "explorer.plane_eps_visible_layer"
    assert claim.fields["f_rms_pct"] > 0.9999 > 0.99 > claim.fields["f_layer_pct"]
    at = open_app(lang=lang, **link)
    assert not at.exception
    assert_claims_shown(at, {"plane_eps": claim}, lang)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_torch_setting_under_numpy_is_named_not_silently_dropped(lang: str) -> None:
    """``dtype=float16`` with the numpy backend: the page computes float64 and says so, and the
    link keeps the setting for when the visitor picks torch."""
    at = open_app(lang=lang, dtype="float16")
    assert not at.exception
    notice = t("explorer.torch_only", lang, setting="`dtype=float16`")
    assert [i.value for i in at.info if "float16" in i.value] == [notice]
    assert at.query_params["dtype"] == "float16"
    assert not [i for i in open_app(lang=lang).info if "backend=torch" in i.value]


FORMULA_LINKS = [
    {"backend": "torch", "dtype": "float16", "offset": "20", "scale": "1000", "d": "64",
     "eps": "1e-8"},
    {"backend": "torch", "dtype": "bfloat16", "d": "2", "scale": "100", "eps": "1", "seed": "4"},
    {"backend": "torch", "dtype": "float32", "d": "8", "offset": "0.3"},
    {"d": "16", "eps": "0.01", "partial": "0.5"},
]  # fmt: skip


@pytest.mark.parametrize("lang", ["en", "id"])
@pytest.mark.parametrize("link", FORMULA_LINKS, ids=lambda link: link.get("dtype", "numpy"))
def test_each_root_in_the_formulas_is_one_precision_and_says_which(link: dict, lang: str) -> None:
    """Both sides of √(mean(x²) + ε) = … in float64, from exact sums over the x the norms saw
    (tests.claims.explorer.Ref); a reduced dtype's denominator follows under its name, with a
    caption (a float64 left side once stood beside a float16 ∞)."""
    from pages.explorer import PARAMS
    from tests.claims.explorer import Ref

    state = {p.key: p.parse(link[p.key])[0] if p.key in link else p.default for p in PARAMS}
    r = Ref({**state, "typed": None, "torch": state["backend"] == "torch"})
    at = open_app(lang=lang, **link)
    assert not at.exception
    tex = lambda v: fmt.tex(v, lang=lang)  # noqa: E731
    e = tex(r.eps)
    blocks = [b.value for b in at.latex if r"\sqrt{" in b.value]
    assert rf"\sqrt{{{tex(r.rms_k**2)} + {e}}} = {tex(r.den_k)}" in blocks[0]
    assert rf"\sqrt{{{tex(r.var)} + {e}}} = {tex(r.den_layer)}" in blocks[1]
    reduced = r.dtype != "float64"
    assert (rf"(\mathrm{{{r.dtype}}}:\ " in blocks[0]) == reduced
    captions = [c.value for c in at.caption]
    assert (t("explorer.formula_dtype", lang, dtype=r.dtype) in captions) == reduced
    if link.get("dtype") == "float16":
        assert r"(\mathrm{float16}:\ \infty)" in blocks[0]  # mean(x²) = 8.4e5 overflows


@pytest.mark.parametrize(
    "link",
    [
        {"eps": "0.001", "d": "16"},  # factors 0.99941 and 0.99935: both read 99.9 %
        {"eps": "0.01", "scale": "2", "d": "8192", "dist": "uniform"},  # 0.99876
        {"eps": "1e-5"},
        {"eps": "0.01", "d": "8", "offset": "2", "scale": "0.1", "partial": "0.5"},
    ],
)
def test_one_quoted_factor_never_gives_both_verdicts(link: dict) -> None:
    """ "Negligible" quotes factors that read 100 %, "visible" ones that read 99.9 % or less
    (both once read 99.9 %); with p < 1 the RMSNorm factor is named as p = 1's."""
    claim = core_view(**link).claims["plane_eps"]
    shown = [fmt.pct(claim.fields[k], lang="en") for k in ("f_rms_pct", "f_layer_pct")]
    if claim.key == "explorer.plane_eps_negligible":
        assert shown == ["100%", "100%"]
    else:
        assert "100%" not in shown[1:] and (claim.key.endswith("layer") or shown[0] != "100%")
    assert "p = 1" in t(claim.key, "en", **{k: 0 for k in claim.fields})


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_statistics_table_reads_rounding_as_zero_as_the_text_does(lang: str) -> None:
    """LayerNorm's output has mean 0 and x = (0.1, 0.1, 0.1) variance 0: in float64 both come
    out as rounding (1.388e-17, 1.926e-34), which the table writes ≈ 0, as the sentences do."""
    from tests.apptest_util import shown_text

    for query, row, column in (({}, "mean", 3), ({"x": "0.1,0.1,0.1", "eps": "0"}, "variance", 1)):
        at = open_app("explorer", lang=lang, **query)
        label = t(f"explorer.stat_{row}", lang)
        rows = [r for r in "\n".join(shown_text(at)).splitlines() if r.startswith(f"| {label} |")]
        assert rows and rows[0].split("|")[1 + column].strip() == "≈ 0", rows


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_zero_outputs_cosine_with_one_is_undefined_not_zero(lang: str) -> None:
    """float16 squares 1000 to inf, so both outputs are 0: no angle, and the table says so
    instead of a cosine of 0 (an outside audit)."""
    from tests.apptest_util import shown_text

    at = open_app("explorer", lang=lang, x="1,2,3,1000", backend="torch", dtype="float16")
    text = "\n".join(shown_text(at))
    row = next(
        r for r in text.splitlines() if r.startswith(f"| {t('explorer.stat_cos_ones', lang)} |")
    )
    assert [c.strip() for c in row.split("|")[2:5]][1:] == ["—", "—"], row
    assert t("explorer.stat_cos_zero", lang) in text


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_typed_vector_note_says_offset_and_scale_still_apply(lang: str) -> None:
    """x = (1, 2, 3) with the offset at 5 has mean 7: the note says the offset still applies."""
    from tests.apptest_util import shown_text

    at = open_app("explorer", lang=lang, x="1,2,3", offset="5")
    text = "\n".join(shown_text(at))
    assert t("explorer.x_active", lang, d=3) in text
    assert {"en": "mean offset c still apply", "id": "pergeseran rata-rata c tetap"}[lang] in text
    assert fmt.num(7.0, lang=lang) == next(m.value for m in at.metric if m.label == "mean(x)")
