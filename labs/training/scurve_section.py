"""The training lab's S-curve view (``/training?view=scurve``): every norm layer of the shipped
RMSNorm and LayerNorm models, its input against its output before the gain, with a tanh fitted
through the points (``labs.training.scurve_view``). ``pages/training.py`` links ``VIEW`` and
``SCURVE_PARAMS``; :func:`scurve_section` draws the view, its sidebar controls included."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
from scipy.special import erf

from labs.training.activations import SHIPPED_SEEDS
from labs.training.scurve import FIT_FORMS, LayerCurve
from labs.training.scurve_figures import r2_figure, scurve_figure, trace_name
from labs.training.scurve_snippet import scurve_code
from labs.training.scurve_view import NORM_NAMES, R2_KEYS, SCURVE_NORMS, ScurveView, scurve_view
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.export import columns_csv
from ui.frame import readable
from ui.i18n import Translator
from ui.params import ChoiceParam, IntParam

VIEW = ChoiceParam("view", "runs", ("runs", "scurve"))
SCURVE_PARAMS = (
    IntParam("trained_seed", SHIPPED_SEEDS[0], min(SHIPPED_SEEDS), max(SHIPPED_SEEDS)),
    ChoiceParam("norm", SCURVE_NORMS[0], SCURVE_NORMS),
)
P = {p.key: p for p in SCURVE_PARAMS}
# The places a norm layer sits, as the checkpoints name them, and their texts.
PLACES = {"pre-attention": "place_attention", "pre-MLP": "place_mlp", "final": "place_final"}
ERF_COLUMNS = (("alpha", "α"), ("shift", "s"), ("r2", "R²"))  # Derf's fit, in the table


@st.cache_resource(max_entries=len(SHIPPED_SEEDS), show_spinner=False)
def compute(seed: int) -> ScurveView:
    """Both models of one seed read and fitted (about a second); kept per seed for every
    visitor, so switching views or seeds back costs nothing. Read-only."""
    return scurve_view(seed=seed)


def choose_view(tr: Translator) -> str:
    """The training lab's view: buttons above the page, none in the presenter view."""
    return widgets.switch(VIEW, tr("scurve.view_label"), lambda v: tr(f"scurve.view_{v}"))


def controls(tr: Translator) -> tuple[int, str]:
    """The seed and the model drawn layer by layer, in the sidebar, bound to the link."""
    with st.sidebar:
        st.header(tr("common.controls"))
        widgets.number(P["trained_seed"], tr("scurve.seed_label"), step=1)
        widgets.labelled_choice(P["norm"], tr("scurve.norm_label"), lambda n: NORM_NAMES[n])
    return int(widgets.current(P["trained_seed"])), str(widgets.current(P["norm"]))


def scurve_section(tr: Translator) -> None:
    """The whole view: what is plotted, what the fits found, the R² chart, why, one chart per
    norm layer of the chosen model, the table, the code."""
    seed, norm = controls(tr)
    with st.spinner(tr("scurve.reading")):
        view = compute(seed)
    claims = {slot: tr.claim(claim) for slot, claim in view.claims.items()}
    st.header(tr("scurve.heading"), anchor=False)
    st.markdown(tr("scurve.lead"))
    st.markdown(tr("scurve.plotted"))
    st.latex(  # one formula per line where a phone has no room for both
        fmt.stacked(
            r"\hat y = \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}}\ \text{(LayerNorm)},\qquad"
            r"\hat y = \frac{x}{\sqrt{\overline{x^2} + \epsilon}}\ \text{(RMSNorm)}"
        )
    )
    st.latex(r"\hat y \approx A \tanh(\alpha x)\quad\text{vs.}\quad \hat y \approx k x")
    st.caption(claims["model"])
    st.code(view.text, language=None, wrap_lines=True)
    st.caption(tr("scurve.text_caption"))

    found(view, claims, tr)
    r2_chart(view, claims, tr)
    st.subheader(tr("scurve.why_heading"), anchor=False)
    st.markdown(tr("scurve.why"))
    st.markdown(claims["depth"])
    st.info(tr("scurve.miniature"))

    layer_charts(view, norm, claims, tr)
    table(view, norm, claims, tr)
    code_section(tr, scurve_code(seed))


def found(view: ScurveView, claims: dict[str, str], tr: Translator) -> None:
    """Per model: the fits' quality, the layers of each shape, the denominators' spread."""
    st.subheader(tr("scurve.found_heading"), anchor=False)
    for norm in SCURVE_NORMS:
        groups = [f"- {claims[s]}" for s in claims if s.startswith(f"{norm}_group_")]
        st.markdown("\n".join([claims[f"{norm}_summary"], "", *groups]))
        st.markdown(" ".join(claims[s] for s in (f"{norm}_divisors", f"{norm}_erf") if s in claims))


def r2_chart(view: ScurveView, claims: dict[str, str], tr: Translator) -> None:
    """R² of the tanh and of the line, layer by layer, both models."""
    st.subheader(tr("scurve.r2_heading"), anchor=False)
    layers = view.layers()
    tables = {norm: view.table(norm) for norm in SCURVE_NORMS}
    r2 = {n: {f: t[k] for f, k in zip(FIT_FORMS, R2_KEYS, strict=True)} for n, t in tables.items()}
    axes = {"layer_axis": tr("scurve.layer_axis"), "r2_axis": tr("scurve.r2_axis")}
    names = {**NORM_NAMES, "forms": FIT_FORMS, **axes}
    table: dict[str, list] = {"layer": layers}
    headers = {"layer": tr("scurve.col_layer")}
    for norm in SCURVE_NORMS:
        for i, form in enumerate(FIT_FORMS):
            table[f"{norm}_{i}"] = r2[norm][form]
            headers[f"{norm}_{i}"] = trace_name(NORM_NAMES[norm], form)
    chart(
        readable(r2_figure(layers, r2, names)),
        key="scurve_r2",
        title=tr("scurve.r2_chart"),
        words=tr.chart_words(view.claims, "r2"),
        table=table,
        headers=headers,
        file_name=f"normlab-scurve-r2-seed{view.seed}.csv",
    )


def layer_words(norm: str, curve: LayerCurve, claims: dict[str, str]) -> str:
    """A layer chart's words: the fit, how well it describes the points, the shape."""
    slots = (f"{norm}_{curve.name}_{part}" for part in ("fit", "quality", "shape", "erf"))
    return " ".join(claims[s] for s in slots if s in claims)


def layer_charts(view: ScurveView, norm: str, claims: dict[str, str], tr: Translator) -> None:
    """One scatter per norm layer of ``norm``'s model, two to a row (one on a phone)."""
    st.subheader(tr("scurve.layers_heading", norm=NORM_NAMES[norm]), anchor=False)
    st.caption(claims["sample"])
    names = {"points": tr("scurve.points"), "tanh": FIT_FORMS[0], "line": FIT_FORMS[1]}
    names |= {"erf": FIT_FORMS[2], "x_axis": tr("scurve.x_axis"), "y_axis": tr("scurve.y_axis")}
    curves = view.curves[norm]
    for start in range(0, len(curves), 2):
        columns = st.columns(2, gap="large")
        for column, curve in zip(columns, curves[start : start + 2], strict=False):
            with column:
                layer_chart(view, norm, curve, names, claims, tr)


def layer_chart(
    view: ScurveView,
    norm: str,
    curve: LayerCurve,
    names: dict[str, str],
    claims: dict[str, str],
    tr: Translator,
) -> None:
    """One layer: its name and place, the scatter with both fits, the words, the data."""
    place = PLACES.get(curve.where)
    st.markdown(f"**{curve.name}** · {tr(f'scurve.{place}') if place else curve.where}")
    fit, x, y = curve.fit, curve.x[curve.sample], curve.y[curve.sample]
    fits = {"tanh": (np.tanh, curve.fit), "erf": (erf, curve.erf)}
    ys = {k: f(c.alpha * x + c.shift) * c.amplitude for k, (f, c) in fits.items() if c.converged}
    table = {"x": x, names["points"]: y} | {names[k]: v for k, v in ys.items()}
    table[names["line"]] = line_y = fit.slope * x

    def every_point() -> str:
        """All of the layer's points, with every fit, for the share dialog's CSV."""
        full = {"x": curve.x, "y": curve.y, "line": fit.slope * curve.x}
        for k, (f, c) in fits.items():
            full |= {k: c.amplitude * f(c.alpha * curve.x + c.shift)} if c.converged else {}
        return columns_csv(full)

    chart(
        readable(scurve_figure(x, y, ys, line_y, names, norm)),
        key=f"scurve_{norm}_{curve.name}",
        title=tr("scurve.scatter_chart", layer=curve.name, norm=NORM_NAMES[norm]),
        words=layer_words(norm, curve, claims),
        table=table,
        headers={"x": names["x_axis"]},
        full=every_point,
        file_name=f"normlab-scurve-{norm}-seed{view.seed}-{curve.name}.csv",
    )


def table(view: ScurveView, norm: str, claims: dict[str, str], tr: Translator) -> None:
    """The fits of ``norm``'s model, one row per layer, and its shape in a word."""
    st.subheader(tr("scurve.table_heading", norm=NORM_NAMES[norm]), anchor=False)
    rows = view.table(norm)
    frame = pd.DataFrame(
        {
            "α": [fmt.num(v) for v in rows["alpha"]],
            "A": [fmt.num(v) for v in rows["amplitude"]],
            tr("scurve.col_r2"): [fmt.num(v) for v in rows["r2"]],
            tr("scurve.col_line_r2"): [fmt.num(v) for v in rows["line_r2"]],
            tr("scurve.col_reach"): [fmt.num(v) for v in rows["reach"]],
            tr("scurve.col_flat"): [fmt.pct(v) for v in rows["flat_share"]],
            tr("scurve.col_ratio"): [fmt.num(v) for v in rows["ratio"]],
            **{f"{p} (erf)": [fmt.num(v) for v in rows[f"erf_{k}"]] for k, p in ERF_COLUMNS},
            tr("scurve.col_shape"): [claims[f"{norm}_{n}_cell"] for n in rows["layer"]],
        },
        index=pd.Index(rows["layer"], name=tr("scurve.col_layer")),
    )
    st.table(frame)
    st.caption(tr("scurve.table_caption"))
