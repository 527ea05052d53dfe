"""Backward pass: the Jacobians of both norms, their eigenvalues, a gradient before and after."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import LAYER_JACOBIAN_FORMULA, RMS_JACOBIAN_FORMULA
from core.defaults import DEFAULT_LAYER_EPS, EPS_LADDER, MIN_WIDTH, ladder_upto
from labs.backward.figures import (
    components_figure,
    gradient_figure,
    jacobian_figure,
    spectrum_figure,
)
from labs.backward.model import (
    FLAT_TOLERANCE,
    GRADIENTS,
    MAX_JACOBIAN_WIDTH,
    BackwardView,
    backward_view,
)
from labs.backward.snippet import backward_code
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, norm_formulas, presenting, readable, share_box
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, FloatParam, IntParam, LadderParam

# Beyond this offset x is almost parallel to 1 and the picture says nothing new.
OFFSET_LIMIT = 20.0
# Up to eps = 1: far enough past mean(x^2) ~ 1 to watch the flattened directions come back.
PAGE_EPS = ladder_upto(EPS_LADDER, 1.0)


PARAMS = (
    IntParam("d", 8, MIN_WIDTH, MAX_JACOBIAN_WIDTH),
    FloatParam("offset", 1.0, -OFFSET_LIMIT, OFFSET_LIMIT, step=0.1),
    LadderParam("eps", DEFAULT_LAYER_EPS, PAGE_EPS),
    IntParam("seed", 0, 0, 2**31 - 1),
    ChoiceParam("grad", "random", GRADIENTS),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(d: int, offset: float, eps: float, seed: int, grad: str) -> BackwardView:
    return backward_view(d, offset, eps, seed, grad)


def controls(tr: Translator) -> dict:
    """The sidebar controls, each bound to the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        widgets.number(P["d"], tr("backward.d_label"), kind="input", step=1)
        st.caption(tr("backward.d_help"))
        widgets.number(P["offset"], tr("backward.offset_label"))
        widgets.ladder(P["eps"], tr("backward.eps_label"))
        widgets.number(P["seed"], tr("backward.seed_label"), kind="input", step=1)
        options = {g: tr(f"backward.grad_option_{g}") for g in GRADIENTS}
        grad = widgets.labelled_choice(P["grad"], tr("backward.grad_label"), options.__getitem__)
        st.caption(tr(f"backward.grad_{grad}") + " " + tr("backward.grad_unit"))
    return {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}


def labels(tr: Translator) -> dict[str, str]:
    keys = ("colorbar", "row", "col", "index", "eigenvalue", "upstream", "input_grads")
    out = {key: tr(f"backward.{key}") for key in (*keys, "along_ones", "along_x", "component")}
    out.update(rms=tr("common.rms_norm"), layer=tr("common.layer_norm"))
    return out | {key: tr(f"common.{key}") for key in ("coordinate", "value")}


def formulas(tr: Translator) -> None:
    st.subheader(tr("backward.formulas_heading"))
    # One under the other: each formula is too wide for half the page.
    norm_formulas(tr, RMS_JACOBIAN_FORMULA, LAYER_JACOBIAN_FORMULA, side_by_side=False)


def jacobians(view: BackwardView, tr: Translator, names: dict[str, str]) -> None:
    lesson = view.lesson
    d = lesson.x.shape[-1]
    st.subheader(tr("backward.heatmap_heading"))
    rows, cols = np.divmod(np.arange(d * d), d)  # row by row, as the heat maps read
    chart(
        readable(jacobian_figure(lesson.jacobian_rms, lesson.jacobian_layer, names)),
        key="jacobians",
        title=tr("backward.heatmap_chart"),
        words=tr.chart_words(view.claims, "heatmap"),
        more=tr.claim(view.claims["heatmap"]),
        table={
            "row": rows,
            "col": cols,
            "rms": lesson.jacobian_rms.ravel(),
            "layer": lesson.jacobian_layer.ravel(),
        },
        headers={k: names[k] for k in ("row", "col", "rms", "layer")},
        file_name="normlab-backward-jacobians.csv",
    )
    st.subheader(tr("backward.spectrum_heading"))
    chart(
        readable(spectrum_figure(lesson.eig_rms, lesson.eig_layer, names)),
        key="spectrum",
        title=tr("backward.spectrum_chart"),
        words=tr.chart_words(view.claims, "spectrum"),
        table={"k": np.arange(1, d + 1), "rms": lesson.eig_rms, "layer": lesson.eig_layer},
        headers={"k": "k", "rms": names["rms"], "layer": names["layer"]},
        file_name="normlab-backward-spectrum.csv",
    )
    st.markdown(tr.claim(view.claims["spectrum_rms"]))
    st.markdown(tr.claim(view.claims["spectrum_layer"]))
    st.caption(tr("backward.spectrum_note", tol_pct=FLAT_TOLERANCE))


def gradients(view: BackwardView, tr: Translator, names: dict[str, str]) -> None:
    lesson = view.lesson
    st.subheader(tr("backward.gradient_heading"))
    names = {**names, "upstream_title": names["upstream"]}
    names["upstream"] = tr("backward.upstream_short")
    names |= {k: tr(f"backward.grad_{k}") for k in ("rms", "layer")}
    order = ("upstream", "rms", "layer")
    parts = {k: (lesson.parts[k].ones, lesson.parts[k].radial) for k in order}
    left, right = st.columns(2, gap="large")
    with left:
        chart(
            readable(gradient_figure(lesson.upstream, lesson.grad_rms, lesson.grad_layer, names)),
            key="gradients",
            title=tr("backward.gradient_chart"),
            words=tr.chart_words(view.claims, "gradient"),
            table={
                "i": np.arange(lesson.x.shape[-1]),
                "upstream": lesson.upstream,
                "rms": lesson.grad_rms,
                "layer": lesson.grad_layer,
            },
            headers={"i": names["coordinate"], **{k: names[k] for k in order}},
            file_name="normlab-backward-gradients.csv",
        )
    with right:
        components(view, tr, names, parts, order)
    for part in ("upstream", "rms", "layer", "conclusion", "why"):
        st.markdown(tr.claim(view.claims[f"components_{part}"]))


def components(
    view: BackwardView, tr: Translator, names: dict[str, str], parts: dict, order: tuple
) -> None:
    """Each gradient split along 1 and along x: the bars with their words, and the table."""
    lesson = view.lesson

    def number(value: float) -> str:
        return fmt.num(value, noise=view.noise)

    st.markdown(f"**{tr('backward.components_heading')}**")
    chart(
        readable(components_figure(parts, names, number)),
        key="components",
        title=tr("backward.components_chart"),
        words=tr.claim(view.claims["components_words"]),
        table={
            "direction": [names["along_ones"], names["along_x"]],
            **{k: list(parts[k]) for k in order},
        },
        headers={"direction": names["component"], **{k: names[k] for k in order}},
        file_name="normlab-backward-components.csv",
    )
    table = pd.DataFrame(
        {
            names["along_ones"]: [number(parts[k][0]) for k in order],
            names["along_x"]: [number(parts[k][1]) for k in order],
            tr("backward.table_length"): [number(lesson.parts[k].norm) for k in order],
        },
        index=[names[k] for k in order],
    )
    table.index.name = tr("backward.table_vector")
    st.table(table)


def main() -> None:
    tr = translator(begin_page("backward", PARAMS))
    state = controls(tr)
    view = compute(state["d"], state["offset"], state["eps"], state["seed"], state["grad"])
    formulas(tr)
    if view.lesson is None:
        message = tr(f"backward.undefined_{view.undefined}")
        st.error(message if presenting() else f"{message} {tr('backward.undefined_hint')}")
    else:
        names = labels(tr)
        jacobians(view, tr, names)
        gradients(view, tr, names)
        code_section(tr, backward_code(state))
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
