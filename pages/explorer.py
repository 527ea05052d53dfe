"""Explorer: one vector, RMSNorm and LayerNorm side by side, with the geometry."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core import LAYER_FORMULA, RMS_FORMULA, available_devices, torch_available
from core.defaults import DEFAULT_LAYER_EPS, DTYPES, EPS_LADDER, MAX_WIDTH, MIN_WIDTH, SCALE_LADDER
from core.inputs import (
    DISTRIBUTIONS,
    GAIN_PATTERNS,
    MAX_ABS_VALUE,
    VectorParseError,
    make_input,
    parse_vector,
)
from core.messages import Message
from core.stats import IDENTITY_FORMULA, STAT_NAMES
from labkit import style
from labs.explorer import GAIN_LIMIT, OFFSET_LIMIT, PARTIAL_LADDER, ExplorerView, dtype_max, explore
from labs.explorer.figures import coordinates_spec, figure, plane_spec, sphere_spec
from labs.explorer.snippet import explorer_code
from labs.explorer.state import DRAW
from labs.explorer.units import stat_noise
from ui import fmt, widgets
from ui.chart import chart, localised
from ui.code import code_section
from ui.export import coordinates_csv, saved, statistics_csv, view_json
from ui.frame import Saving, begin_page, metric_width, presenting, share_box, view_mode
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, FloatParam, IntParam, LadderParam, TextParam

PARAMS = (
    TextParam("x", "", max_len=200_000),
    IntParam("d", 16, MIN_WIDTH, MAX_WIDTH),
    ChoiceParam("dist", "normal", DISTRIBUTIONS),
    IntParam("seed", 0, 0, 2**31 - 1),
    FloatParam("offset", 0.0, -OFFSET_LIMIT, OFFSET_LIMIT, step=0.1),
    LadderParam("scale", 1.0, SCALE_LADDER),
    LadderParam("eps", DEFAULT_LAYER_EPS, EPS_LADDER),
    FloatParam("gain", 1.0, -GAIN_LIMIT, GAIN_LIMIT, step=0.05),
    ChoiceParam("gain_pattern", "constant", GAIN_PATTERNS),
    FloatParam("bias", 0.0, -GAIN_LIMIT, GAIN_LIMIT, step=0.05),
    FloatParam("rms_bias", 0.0, -GAIN_LIMIT, GAIN_LIMIT, step=0.05),
    LadderParam("partial", 1.0, PARTIAL_LADDER),
    ChoiceParam("backend", "numpy", ("numpy", "torch")),
    # Only the devices this server has; a link asking for another gets a notice.
    ChoiceParam("device", "cpu", tuple(available_devices()) or ("cpu",)),
    ChoiceParam("dtype", "float64", DTYPES),
)
P = {p.key: p for p in PARAMS}
# The settings explore() takes besides x, in its keyword names.
SETTINGS = ("eps", "gain", "gain_pattern", "seed", "bias", "rms_bias", "partial")
SETTINGS += ("backend", "device", "dtype")


@st.cache_resource(max_entries=64, show_spinner=False)
def compute(x: np.ndarray, **settings: object) -> ExplorerView:
    """The whole view for one setting; the frozen result is shared, never copied or edited."""
    return explore(x, **settings)


def controls(tr: Translator) -> tuple[dict, str]:
    """The sidebar controls, each tied to the URL under its key; and the vector as typed, in the
    page's language (the state holds the link's spelling of it)."""
    with st.sidebar:
        st.header(tr("common.controls"))
        st.subheader(tr("explorer.group_first"))
        widgets.ladder(P["eps"], tr("explorer.eps_label"))
        st.subheader(tr("explorer.group_input"))
        label, help_text = tr("explorer.x_label"), tr("explorer.x_help")
        text = widgets.typed_vector(P["x"], label, tr.lang, help=help_text)
        typed = bool(text)
        d_label, d_help = tr("explorer.d_label"), tr("explorer.d_help")
        widgets.number(P["d"], d_label, kind="input", step=1, help=d_help, disabled=typed)
        dist = widgets.labelled_choice(
            P["dist"], tr("explorer.dist_label"), _names(tr, "dist"), disabled=typed
        )
        st.caption(tr(f"explorer.dist_{dist}"))
        seedless = typed and st.session_state.get("gain_pattern") != "random"
        widgets.number(
            P["seed"], tr("explorer.seed_label"), kind="input", step=1, disabled=seedless
        )
        widgets.ladder(P["scale"], tr("explorer.scale_label"))
        st.subheader(tr("explorer.group_norm"))
        widgets.number(P["gain"], tr("explorer.gain_label"))
        pattern = widgets.labelled_choice(
            P["gain_pattern"], tr("explorer.gain_pattern_label"), _names(tr, "gain")
        )
        st.caption(tr(f"explorer.gain_{pattern}"))
        widgets.number(P["bias"], tr("explorer.bias_label"))
        widgets.number(
            P["rms_bias"], tr("explorer.rms_bias_label"), help=tr("explorer.rms_bias_help")
        )
        widgets.ladder(P["partial"], tr("explorer.partial_label"), help=tr("explorer.partial_help"))
        st.subheader(tr("explorer.group_compute"))
        if not torch_available():
            st.info(tr("common.torch_missing", options="backend=torch, device, dtype"))
        else:
            backend = widgets.choice(P["backend"], tr("explorer.backend_label"), kind="segmented")
            if backend == "torch":
                widgets.choice(P["device"], tr("explorer.device_label"))
                widgets.choice(P["dtype"], tr("explorer.dtype_label"))
    state = {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}
    if not torch_available() or state["backend"] != "torch":
        state.update(backend="numpy", device="cpu", dtype="float64")
    return state, text


def _names(tr: Translator, group: str) -> Callable[[str], str]:
    """The shown name of a distribution (``group="dist"``) or gain pattern (``"gain"``)."""
    return lambda value: tr(f"explorer.{group}_option_{value}")


# The first move's slider on a laptop's wide page: long enough for steps of 0.1 to be felt.
FIRST_MOVE_WIDTH = 560
# The presenter's chart and the column beside it that holds the slider: the chart in large text
# is taller than a projector's first screen, so the slider cannot go under it.
PRESENTER_COLUMNS = (3, 1)


def first_move(tr: Translator) -> tuple[DeltaGenerator, DeltaGenerator | None]:
    """The page's experiment, the mean offset c, in the page itself, where the chart stays in view
    while it moves (on a phone the open sidebar covers the chart), with the place under it for the
    two means it moves: above the chart, or in the presenter view in a column beside it, so that
    the chart keeps the top of the screen (on a phone the column goes under the chart). Returns
    the means' place and, in the presenter view, the chart's."""
    if not presenting():
        st.markdown(tr("explorer.first_move"))
        widgets.number(P["offset"], tr("explorer.offset_label"), width=FIRST_MOVE_WIDTH)
        return st.empty(), None
    plot, column = st.columns(PRESENTER_COLUMNS, gap="large")
    with column:
        widgets.number(P["offset"], tr("explorer.offset_label"))
    return column.empty(), plot


def input_vector(state: dict, text: str, tr: Translator) -> np.ndarray:
    """x from the typed ``text`` if it reads (in the page's language: ``widgets.typed_vector``),
    otherwise from the distribution; scale and offset."""
    text = text.strip()
    if text:
        try:
            typed = parse_vector(text, decimal=fmt.marks(tr.lang)[0])
        except VectorParseError as err:
            message = tr(
                f"explorer.x_{err.code}",
                token=f"`{err.token.replace('`', '')}`",
                position=err.position,
                count=err.count,
                limit=err.limit,
            )
            st.error(tr("explorer.x_error", message=message))
        else:
            x = state["scale"] * typed + state["offset"]
            if np.max(np.abs(x)) <= MAX_ABS_VALUE:
                st.caption(tr("explorer.x_active", d=typed.shape[-1]))
                return x
            # Typed values within the limit can still leave it once scaled; their squares would
            # overflow float64 and every statistic would read inf.
            message = tr("explorer.x_scaled_too_large", limit=MAX_ABS_VALUE)
            st.error(tr("explorer.x_error", message=message))
    return make_input(state["d"], **{k: state[k] for k in DRAW})


def metrics(tr: Translator, view: ExplorerView) -> None:
    """Five numbers, in a row that wraps two to a line on a phone."""
    # RMS(x) and std(x) without eps, and lengths whose squares cannot underflow (x = 1e-200).
    # The mean reads "≈ 0" at its float64 rounding level, as the sentences below do.
    u = view.units
    values = (
        ("metric_rms", fmt.num(u.rms)),
        ("metric_std", fmt.num(u.std)),
        ("metric_mean", fmt.num(u.mean, noise=u.mean_noise)),
        ("metric_norm_rms", fmt.num(view.norm_rms)),
        ("metric_norm_layer", fmt.num(view.norm_layer)),
    )
    with st.container(horizontal=True, gap="small"):
        for key, shown in values:
            st.metric(tr(f"explorer.{key}"), shown, width=metric_width())


def coordinates(tr: Translator, view: ExplorerView, labels: dict, scale: float) -> None:
    st.subheader(tr("explorer.coords_heading"))
    c = view.claims
    more = tr.claim(c["coords"]) + " " + tr.claim(c["divisors"])
    if "envelope" in c:
        more += " " + tr.claim(c["envelope"])
    full = {"x": view.x, "rms": view.y_rms, "layer": view.y_layer}

    def table() -> dict:
        # What the chart draws: every coordinate, or past the envelope's width the coordinates
        # some trace draws (each exact, in the chart's float32 where it uses that).
        index = np.unique(np.concatenate([s.index for s in view.chart.values()]))
        return {"i": index} | {
            k: full[k][index].astype(s.values.dtype) for k, s in view.chart.items()
        }

    fig = localised(_coords_spec(tr, view, labels, scale), tr.lang)
    chart(
        fig,
        key="coords",
        title=tr("explorer.coords_chart"),
        words=tr.chart_words(c, "coords"),
        more=more,
        table=table,
        # Short headers ("i", "RMSNorm"), as the statistics': four columns fit a phone's width.
        headers={k: labels[k].removesuffix("(x)") for k in full},
        config=style.chart_config("normlab-coordinates"),
    )


def _coords_spec(tr: Translator, view: ExplorerView, labels: dict, scale: float) -> dict:
    # The figure names the envelope in a line short enough for a phone (and its own export);
    # the caption under it says the rest.
    envelope = view.claims.get("envelope_label")
    note = tr.claim(envelope) if envelope is not None else ""
    series = {k: (s.index, s.values) for k, s in view.chart.items()}
    means = {k: s.mean for k, s in view.chart.items()}
    return coordinates_spec(series, means, labels, d=view.d, note=note, font_scale=scale)


def statistics(tr: Translator, view: ExplorerView, labels: dict) -> None:
    st.subheader(tr("explorer.stats_heading"))
    # A Markdown table: the same cells as st.table, without a dataframe round trip per rerun.
    # Short headers ("RMSNorm", not "RMSNorm(x)"), so the table fits a phone's width.
    head = [tr("explorer.stat_column"), *(labels[k].removesuffix("(x)") for k in view.stats)]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    arrays = {"x": view.x, "rms": view.y_rms, "layer": view.y_layer}
    noise = {k: stat_noise(arrays[k]) for k in view.stats}  # rounding reads ≈ 0, as in the text
    zero = [k for k in view.stats if view.stats[k].l2 == 0]  # no angle to a zero vector
    for n in (name for name in STAT_NAMES if name != "d"):
        cells = (
            "—"
            if n == "cos_ones" and k in zero
            else fmt.num(getattr(view.stats[k], n), noise=noise[k].get(n, 0.0))
            for k in view.stats
        )
        lines.append(f"| {tr(f'explorer.stat_{n}')} | " + " | ".join(cells) + " |")
    st.markdown("\n".join(lines))
    if zero:
        st.caption(tr("explorer.stat_cos_zero"))
    st.markdown(f"**{tr('explorer.identity_heading')}**")
    rms2, var, mean2 = view.identity
    noise = view.claims["why_moment"].noise_of  # each term at its own rounding level
    numbers = (
        rf"{fmt.tex(rms2)} = {fmt.tex(var, noise=noise('var'))} + "
        rf"{fmt.tex(mean2, noise=noise('mean2'))}"
    )
    st.latex(_lines(IDENTITY_FORMULA, numbers))


def formulas(tr: Translator, view: ExplorerView, eps: float) -> None:
    """RMSNorm first, then LayerNorm, each labelled, each with today's numbers."""
    st.subheader(tr("explorer.formulas_heading"))
    u, e = view.units, fmt.tex(eps)
    apart = not view.same_denominators  # then the dtype's denominator follows in brackets

    def root(moment: float, exact: float, computed: float) -> str:
        dtype = rf"\quad(\mathrm{{{view.dtype}}}:\ {fmt.tex(computed)})" if apart else ""
        return rf"\sqrt{{{fmt.tex(moment)} + {e}}} = {fmt.tex(exact)}{dtype}"

    st.markdown(tr("explorer.formula_rms"))
    st.latex(_lines(RMS_FORMULA, root(u.ms_k, u.den_k, view.rms_stat)))
    if u.k < view.d:
        st.caption(tr("explorer.formula_partial", k=u.k, d=view.d))
    st.markdown(tr("explorer.formula_layer"))
    mean = rf"\mu = {fmt.tex(u.mean, noise=u.mean_noise)}"  # on a row of its own when apart
    rows = (mean, root(u.var, u.den_layer, view.layer_stat))
    st.latex(_lines(LAYER_FORMULA, *(rows if apart else [r",\quad ".join(rows)])))
    if apart:
        st.caption(tr("explorer.formula_dtype", dtype=view.dtype))


def _lines(*rows: str) -> str:
    """Formulas stacked in one LaTeX block (one element to render instead of several)."""
    return r"\begin{gathered}" + r" \\[0.6em] ".join(rows) + r"\end{gathered}"


def geometry(tr: Translator, view: ExplorerView, state: dict, labels: dict, scale: float) -> None:
    st.subheader(tr("explorer.geometry_heading"))
    plane, claims = view.plane, view.claims
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown(f"**{tr('explorer.plane_title')}**")
        points = {"point": tr("charts.point"), "a": "a", "b": "b"}
        spec = plane_spec(
            plane.point, plane.rms, plane.layer, plane.radius, labels, font_scale=scale
        )
        fig = localised(spec, tr.lang)
        chart(
            fig,
            key="plane",
            title=tr("explorer.plane_chart"),
            words=tr.claim(claims["plane_words"]),
            table=_points_table(labels, (plane.point, plane.rms, plane.layer), "ab"),
            headers=points,
            file_name="normlab-plane.csv",
            config=style.chart_config("normlab-plane"),
        )
    with right:
        slots = ("plane", "plane_rms", "plane_layer", "plane_eps")
        if view.dtype == "float64" and view.same_denominators:
            note = f"*{tr('explorer.geometry_note')}*"
        else:
            note = f"*{tr('explorer.geometry_note_dtype', dtype=view.dtype)}*"
        st.markdown("\n\n".join([note, *(tr.claim(claims[s]) for s in slots if s in claims)]))
        if state["gain_pattern"] != "constant" or state["bias"] or state["rms_bias"]:
            st.caption(tr("explorer.plane_gain_note"))
    if view.sphere is not None:
        sphere(tr, view, labels, scale)
    elif not presenting():
        st.info(tr("explorer.sphere_hint"))


def sphere(tr: Translator, view: ExplorerView, labels: dict, scale: float) -> None:
    """d = 3 gets the full width: the sphere needs it to be read."""
    s = view.sphere
    st.markdown(f"**{tr('explorer.sphere_title')}**")
    points = (s.point, s.rms, s.layer)
    spec = sphere_spec(s.plane, s.circle, s.sphere, points, labels, font_scale=scale)
    fig = localised(spec, tr.lang)
    chart(
        fig,
        key="sphere",
        title=tr("explorer.sphere_chart"),
        words=tr.claim(view.claims["sphere_words"]),
        more=tr.claim(view.claims["sphere"]),
        table=_points_table(labels, (s.point, s.rms, s.layer), ("x1", "x2", "x3")),
        headers={"point": tr("charts.point"), "x1": "x₁", "x2": "x₂", "x3": "x₃"},
        file_name="normlab-sphere.csv",
        config=style.chart_config("normlab-sphere"),
    )


def _points_table(labels: dict, points: tuple, axes) -> dict:
    """One row per point drawn (x, RMSNorm(x), LayerNorm(x)), one column per axis."""
    table: dict = {"point": [labels[k] for k in ("x", "rms", "layer")]}
    for i, axis in enumerate(axes):
        table[axis] = [float(p[i]) for p in points]
    return table


def explanations(tr: Translator, view: ExplorerView) -> None:
    """What the numbers say, each sentence chosen by the core's verdicts (one Markdown block:
    one element for the browser to draw, not a dozen)."""
    st.subheader(tr("explorer.why_heading"))
    c = view.claims
    prompt = "" if presenting() else f" *{tr('explorer.offset_prompt')}*"
    if view.dtype == "float64" and view.same_denominators:
        units_note = tr("explorer.why_units_note")
    else:
        units_note = tr("explorer.why_units_note_dtype", dtype=view.dtype)
    paragraphs = [f"*{units_note}*"]
    blocks = (
        ("why_scale_title", ("why_scale", "why_layer"), ""),
        ("why_offset_title", ("why_offset",), prompt),
        ("why_moment_title", ("why_moment", "why_moment_share"), ""),
        ("centring_title", ("centring", "centring_mean"), ""),
        ("partial_title", ("partial",), f" *{tr('explorer.partial_paper')}*"),
        ("precision_title", ("precision_rms", "precision_layer"),
         f" *{tr('explorer.precision_setup', dtype=view.dtype)}*"),
    )  # fmt: skip
    for title, slots, after in blocks:
        shown = [tr.claim(c[s]) for s in slots if s in c]
        if shown:
            paragraphs.append(f"**{tr(f'explorer.{title}')}** " + " ".join(shown) + after)
    st.markdown("\n\n".join(paragraphs))
    if "noise" in c:
        st.warning(tr.claim(c["noise"]))


def messages(tr: Translator, view: ExplorerView) -> None:
    """The core's warnings and notes, translated by their code."""
    if view.dtype != view.dtype_asked:
        limit = dtype_max(view.dtype_asked)
        st.warning(tr("explorer.dtype_overflow", dtype=view.dtype_asked, limit=limit))
    # The link keeps torch's settings for when torch is picked; under numpy they are not drawn.
    for key in ("device", "dtype") if view.backend == "numpy" and torch_available() else ():
        value, problem = P[key].parse(st.query_params.get(key, P[key].default))
        if value != P[key].default and problem is None:
            st.info(tr("explorer.torch_only", setting=f"`{key}={value}`"))
    for alert in view.alerts:
        st.warning(tr.message(alert))
    if view.notes:
        with st.expander(tr("explorer.notes_heading")):
            st.markdown("\n".join(f"- {_note(tr, note)}" for note in view.notes))


def _note(tr: Translator, note: Message) -> str:
    """A core note in the page's words: the page always hands the core its eps, so the core's
    "given explicitly" says which of the page's values it is instead."""
    if note.code != "eps_explicit":
        return tr.message(note)
    eps = note.fields["eps"]
    key = "note_eps_default" if eps == P["eps"].default else "note_eps_chosen"
    return tr(f"explorer.{key}", eps=eps)


def downloads(tr: Translator, view: ExplorerView, state: dict, labels: dict) -> Saving:
    """The explorer's files, built only when their button is clicked."""
    arrays = {"x": view.x, "gain": view.gain, "rmsnorm": view.y_rms, "layernorm": view.y_layer}
    stats = {
        name: {k: v for k, v in view.stats[key].as_dict().items() if k != "d"}
        for name, key in (("x", "x"), ("rmsnorm", "rms"), ("layernorm", "layer"))
    }

    def html() -> str:  # the coordinates chart at the normal text size, Plotly's script inside
        fig = figure(_coords_spec(tr, view, labels, 1.0))
        return fig.to_html(include_plotlyjs=True, full_html=True)

    files = [
        saved("coordinates", lambda: coordinates_csv(arrays), "normlab-coordinates.csv"),
        saved("statistics", lambda: statistics_csv(stats), "normlab-statistics.csv"),
        saved("json", lambda: view_json("explorer", state, arrays, stats), "normlab-view.json"),
        saved("figure", html, "normlab-coordinates.html"),
    ]
    return Saving("explorer", files)


def main() -> None:
    lang = begin_page("explorer", PARAMS)
    tr = translator(lang)
    means, plot = first_move(tr)
    state, text = controls(tr)
    x = input_vector(state, text, tr)
    view = compute(x, **{k: state[k] for k in SETTINGS})
    means.caption(tr.claim(view.claims["first_move"]))
    keys = ("axis_a", "axis_b", "circle", "ray", "x_short", "sphere", "plane", "circle3d", "ones")
    labels = {"outputs": tr("explorer.coords_outputs"), "x": "x"}
    labels |= {"rms": tr("common.rms_norm"), "layer": tr("common.layer_norm")}
    labels |= {k: tr(f"common.{k}") for k in ("input", "coordinate", "value")}
    labels |= {k: tr(f"explorer.{k}") for k in keys}
    scale = style.LARGE_TEXT_SCALE if view_mode().large_text else 1.0
    if plot is not None:  # the presenter's: the chart on the first screen, its numbers under it
        with plot:
            coordinates(tr, view, labels, scale)
        metrics(tr, view)
    else:
        metrics(tr, view)
        coordinates(tr, view, labels, scale)
    messages(tr, view)
    left, right = st.columns(2, gap="large")
    with left:
        formulas(tr, view, state["eps"])
    with right:
        statistics(tr, view, labels)
    geometry(tr, view, state, labels, scale)
    explanations(tr, view)
    code_section(tr, explorer_code({**state, "dtype": view.dtype}))
    share_box(PARAMS, lang, saving=downloads(tr, view, state, labels))


if __name__ == "__main__":
    main()
