"""Backward pass: the Jacobians of both norms, their eigenvalues, a gradient before and after."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import LAYER_JACOBIAN_FORMULA, RMS_JACOBIAN_FORMULA
from core.backward import FLAT_TOLERANCE, GRADIENTS, MAX_JACOBIAN_WIDTH, backward_lesson
from core.inputs import MIN_WIDTH, make_input
from core.stats import cosine
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import ChoiceParam, FloatParam, IntParam, LadderParam, fmt_number
from viz.backward import components_figure, gradient_figure, jacobian_figure, spectrum_figure

EPS_LADDER = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 1.0)
# Beyond this offset x is almost parallel to 1 and the picture says nothing new.
OFFSET_LIMIT = 20.0

PARAMS = (
    IntParam("d", 8, MIN_WIDTH, MAX_JACOBIAN_WIDTH),
    FloatParam("offset", 1.0, -OFFSET_LIMIT, OFFSET_LIMIT),
    LadderParam("eps", 1e-5, EPS_LADDER),
    IntParam("seed", 0, 0, 2**31 - 1),
    ChoiceParam("grad", "random", GRADIENTS),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(d: int, offset: float, eps: float, seed: int, grad: str) -> dict:
    """The lesson for one setting, or the reason the Jacobian does not exist there."""
    x = make_input(d, seed=seed, offset=offset)
    try:
        lesson = backward_lesson(x, eps=eps, gradient=grad, seed=seed)
    except ValueError as err:
        return {"x": x, "lesson": None, "reason": str(err)}
    return {"x": x, "lesson": lesson, "reason": ""}


def fmt(value: float) -> str:
    """Four significant digits, for prose and tables."""
    return f"{value:.4g}"


def controls(lang: str) -> dict:
    """The sidebar controls, each bound to the URL under its key."""
    with st.sidebar:
        st.header(t("common.controls", lang))
        widgets.number(
            P["d"],
            t("backward.d_label", lang),
            kind="input",
            step=1,
            help=t("backward.d_help", lang),
        )
        widgets.number(P["offset"], t("backward.offset_label", lang), step=0.1)
        widgets.ladder(P["eps"], t("backward.eps_label", lang))
        widgets.number(P["seed"], t("backward.seed_label", lang), kind="input", step=1)
        # Option labels are the link's values; the caption says what the chosen one means.
        grad = widgets.choice(P["grad"], t("backward.grad_label", lang))
        st.caption(t(f"backward.grad_{grad}", lang) + " " + t("backward.grad_unit", lang))
    return {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}


def main() -> None:
    lang = begin_page("backward", PARAMS)
    state = controls(lang)
    r = compute(state["d"], state["offset"], state["eps"], state["seed"], state["grad"])
    lesson = r["lesson"]

    st.subheader(t("backward.formulas_heading", lang))
    # Stacked, not side by side: each formula is too wide for half the page.
    st.markdown(f"**{t('common.rms_norm', lang)}**")
    st.latex(RMS_JACOBIAN_FORMULA)
    st.markdown(f"**{t('common.layer_norm', lang)}**")
    st.latex(LAYER_JACOBIAN_FORMULA)

    if lesson is None:
        st.error(t("backward.undefined", lang, reason=r["reason"]))
        share_box(PARAMS, lang)
        return

    x, d, eps = lesson.x, lesson.x.shape[-1], state["eps"]
    r_stat, sigma = lesson.rms_stat, lesson.layer_stat
    labels = {
        key: t(f"backward.{key}", lang)
        for key in (
            "colorbar",
            "row",
            "col",
            "index",
            "eigenvalue",
            "upstream",
            "input_grads",
            "along_ones",
            "along_x",
            "component",
        )
    }
    labels.update(
        rms=t("common.rms_norm", lang),
        layer=t("common.layer_norm", lang),
        coordinate=t("common.coordinate", lang),
        value=t("common.value", lang),
    )

    st.subheader(t("backward.heatmap_heading", lang))
    rows_rms = lesson.jacobian_rms.sum(axis=1)  # (d, d) -> (d,)
    rows_layer = lesson.jacobian_layer.sum(axis=1)  # (d, d) -> (d,)
    heat = {
        "d": d,
        "inv_r": fmt(1 / r_stat),
        "inv_sigma": fmt(1 / sigma),
        "diag_rms": fmt(float(np.median(np.diag(lesson.jacobian_rms)))),
        "diag_layer": fmt(float(np.median(np.diag(lesson.jacobian_layer)))),
        "row_sum_layer": fmt(float(np.max(np.abs(rows_layer)))),
        "row_min_rms": fmt(float(np.min(rows_rms))),
        "row_max_rms": fmt(float(np.max(rows_rms))),
    }
    st.plotly_chart(
        jacobian_figure(lesson.jacobian_rms, lesson.jacobian_layer, labels),
        key="jacobians",
        alt=t("backward.heatmap_alt", lang, **heat),
    )
    st.caption(t("backward.heatmap_caption", lang, **heat))

    st.subheader(t("backward.spectrum_heading", lang))
    eig_rms, eig_layer = lesson.eig_rms, lesson.eig_layer
    spec = {
        "flat_rms": lesson.flat_rms,
        "flat_layer": lesson.flat_layer,
        "rest_rms": d - lesson.flat_rms,
        "rest_layer": d - lesson.flat_layer,
        "min_rms": fmt(eig_rms[0]),
        "min_layer": fmt(eig_layer[0]),
        "second_layer": fmt(eig_layer[1]),
        "top_rms": fmt(eig_rms[-1]),
        "top_layer": fmt(eig_layer[-1]),
        "tol": fmt_number(FLAT_TOLERANCE),
    }
    st.plotly_chart(
        spectrum_figure(eig_rms, eig_layer, labels),
        key="spectrum",
        alt=t("backward.spectrum_alt", lang, **spec),
    )
    st.caption(t("backward.spectrum_caption", lang, **spec))
    if eps > 0:
        st.caption(
            t("backward.spectrum_eps", lang, eps=fmt_number(eps), residue=fmt(eps / r_stat**3))
        )

    st.subheader(t("backward.gradient_heading", lang))
    grad_labels = {
        **labels,
        "upstream": t("backward.upstream_short", lang),
        "rms": t("backward.grad_rms", lang),
        "layer": t("backward.grad_layer", lang),
        "upstream_title": labels["upstream"],
    }
    lengths = {k: lesson.parts[k].norm for k in ("upstream", "rms", "layer")}
    left, right = st.columns(2, gap="large")
    with left:
        st.plotly_chart(
            gradient_figure(lesson.upstream, lesson.grad_rms, lesson.grad_layer, grad_labels),
            key="gradients",
            alt=t(
                "backward.gradient_alt",
                lang,
                d=d,
                len_rms=fmt(lengths["rms"]),
                len_layer=fmt(lengths["layer"]),
            ),
        )
    parts = {k: (lesson.parts[k].ones, lesson.parts[k].radial) for k in lengths}
    numbers = {
        f"{prefix}_{axis}": fmt(parts[key][i])
        for key, prefix in (("upstream", "g"), ("rms", "rms"), ("layer", "layer"))
        for i, axis in enumerate(("ones", "x"))
    }
    with right:
        st.markdown(f"**{t('backward.components_heading', lang)}**")
        st.plotly_chart(
            components_figure(parts, grad_labels),
            key="components",
            alt=t("backward.components_alt", lang, **numbers),
        )
        names = [grad_labels[k] for k in ("upstream", "rms", "layer")]
        table = pd.DataFrame(
            {
                labels["along_ones"]: [fmt(parts[k][0]) for k in lengths],
                labels["along_x"]: [fmt(parts[k][1]) for k in lengths],
                t("backward.table_length", lang): [fmt(lengths[k]) for k in lengths],
            },
            index=names,
        )
        table.index.name = t("backward.table_vector", lang)
        st.table(table)
    st.markdown(t("backward.components_text", lang, **numbers))
    st.markdown(t("backward.components_why", lang, cos=fmt(float(cosine(np.ones(d), x)))))

    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
