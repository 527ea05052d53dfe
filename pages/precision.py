"""Epsilon and precision: where eps bends the output norm, and what float16 / bfloat16 do."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import torch_available
from core.inputs import MIN_WIDTH, make_input
from core.precision import (
    FLOAT16_MAX,
    NORM_FORMULA_INSIDE,
    NORM_FORMULA_OUTSIDE,
    eps_knee,
    float16_overflow_scales,
    output_norm_vs_scale,
    reduction_error,
    running_sum_of_squares,
)
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import ChoiceParam, IntParam, LadderParam, fmt_number
from viz.precision import error_vs_scale_figure, norm_vs_scale_figure, running_sum_figure

# Widths up to a large model's hidden size; the sweeps below cost S * d per dtype.
MAX_SWEEP_WIDTH = 4096
# 1e-8 to 1e4, eight points per decade: smooth on log axes, 97 rows per batched call.
SWEEP_SCALES = np.logspace(-8, 4, 97)
# The paper's code (1e-8), Llama / Gemma / T5 (1e-6), torch.nn.LayerNorm and Llama 2 (1e-5), and
# a deliberately large value so that its knee sits in the middle of the plot.
SWEEP_EPS = (1e-8, 1e-6, 1e-5, 1e-3)
SCALE_LADDER = tuple(float(f"{m}e{k}") for k in range(-8, 4) for m in (1, 3)) + (1e4,)
EPS_LADDER = (0.0, 1e-12, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2)
DTYPES = ("float64", "float32", "float16", "bfloat16")
PLACEMENTS = ("both", "inside", "outside")

PARAMS = (
    IntParam("d", 64, MIN_WIDTH, MAX_SWEEP_WIDTH),
    IntParam("seed", 0, 0, 2**31 - 1),
    ChoiceParam("placement", "both", PLACEMENTS),
    LadderParam("scale", 1.0, SCALE_LADDER),
    LadderParam("eps", 1e-6, EPS_LADDER),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(d: int, seed: int, scale: float, eps: float, dtypes: tuple[str, ...]) -> dict:
    """Both sweeps and the running sums for one setting (cached per setting)."""
    z = make_input(d, dist="normal", seed=seed)
    rms = float(np.sqrt(np.mean(np.square(z))))  # (d,) -> ()
    norms = {
        p: output_norm_vs_scale(d, SWEEP_SCALES, SWEEP_EPS, placement=p, seed=seed)
        for p in ("inside", "outside")
    }
    sweep = reduction_error(SWEEP_SCALES[:, None] * z, dtypes, eps=eps)
    here = reduction_error((scale * z)[None, :], dtypes, eps=eps)
    sums = {dt: running_sum_of_squares(scale * z, dt) for dt in DTYPES}
    return {
        "rms": rms,
        "norms": norms,
        "errors": {dt: sweep[dt].output_error for dt in dtypes if dt != "float64"},
        "here": {
            dt: (
                float(r.mean_square[0]),
                float(r.mean_square_error[0]),
                float(r.output_error[0]),
                bool(r.overflow[0]),
            )
            for dt, r in here.items()
        },
        "limits": float16_overflow_scales(z),
        "sums": sums,
    }


def fmt(value: float) -> str:
    """Three significant digits, for prose and tables."""
    return f"{value:.3g}"


def controls(lang: str) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    with st.sidebar:
        st.header(t("common.controls", lang))
        st.subheader(t("precision.group_input", lang))
        state = {}
        state["d"] = widgets.number(
            P["d"],
            t("precision.d_label", lang),
            kind="input",
            step=1,
            help=t("precision.d_help", lang),
        )
        state["seed"] = widgets.number(
            P["seed"], t("precision.seed_label", lang), kind="input", step=1
        )
        st.subheader(t("precision.group_eps", lang))
        placement = state["placement"] = widgets.choice(
            P["placement"], t("precision.placement_label", lang), kind="segmented"
        )
        st.caption(t(f"precision.placement_{placement}", lang))
        st.subheader(t("precision.group_dtype", lang))
        state["scale"] = widgets.ladder(
            P["scale"], t("precision.scale_label", lang), help=t("precision.scale_help", lang)
        )
        state["eps"] = widgets.ladder(P["eps"], t("precision.eps_label", lang))
        if not torch_available():
            st.info(t("common.torch_missing", lang, options="float16, bfloat16"))
    return state


def eps_section(state: dict, r: dict, lang: str) -> None:
    d = state["d"]
    shown = ("inside", "outside") if state["placement"] == "both" else (state["placement"],)
    labels = {
        "inside": t("precision.inside", lang),
        "outside": t("precision.outside", lang),
        "sqrt_d": t("precision.sqrt_d", lang, value=fmt(np.sqrt(d))),
        "scale": t("precision.scale_axis", lang),
        "norm": t("precision.norm_axis", lang),
    }
    st.subheader(t("precision.eps_heading", lang))
    left, right = st.columns(2)
    left.latex(NORM_FORMULA_INSIDE)
    right.latex(NORM_FORMULA_OUTSIDE)
    knees = {
        (p, eps): eps_knee(eps, placement=p, rms=r["rms"])
        for p in ("inside", "outside")
        for eps in SWEEP_EPS
    }
    numbers = {
        "d": d,
        "sqrt_d": fmt(np.sqrt(d)),
        "in6": fmt(knees[("inside", 1e-6)]),
        "out6": fmt(knees[("outside", 1e-6)]),
        "in5": fmt(knees[("inside", 1e-5)]),
        "in3": fmt(knees[("inside", 1e-3)]),
        "ratio": fmt(knees[("inside", 1e-6)] / knees[("outside", 1e-6)]),
    }
    st.plotly_chart(
        norm_vs_scale_figure(
            SWEEP_SCALES, {p: r["norms"][p] for p in shown}, SWEEP_EPS, float(np.sqrt(d)), labels
        ),
        key="norm_sweep",
        alt=t("precision.norm_alt", lang, **numbers),
    )
    st.caption(t("precision.norm_caption", lang, **numbers))
    st.markdown(t("precision.norm_explain", lang, **numbers))


def dtype_section(state: dict, r: dict, lang: str) -> None:
    scale, eps = state["scale"], state["eps"]
    limits = r["limits"]
    st.subheader(t("precision.dtype_heading", lang))
    st.markdown(t("precision.dtype_intro", lang, eps=fmt_number(eps)))
    labels = {
        "scale": t("precision.scale_axis", lang),
        "error": t("precision.error_axis", lang),
        "limit_sum": t("precision.limit_sum", lang),
        "limit_square": t("precision.limit_square", lang),
        "chosen": t("precision.chosen", lang, scale=fmt_number(scale)),
    }
    numbers = {
        "sum": fmt(limits.sum),
        "square": fmt(limits.square),
        "scale": fmt_number(scale),
        "max": fmt_number(FLOAT16_MAX),
    }
    if r["errors"]:
        st.plotly_chart(
            error_vs_scale_figure(
                SWEEP_SCALES,
                r["errors"],
                {"sum": limits.sum, "square": limits.square},
                scale,
                labels,
            ),
            key="error_sweep",
            alt=t("precision.error_alt", lang, **numbers),
        )
        st.caption(t("precision.error_caption", lang, **numbers))
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.markdown(f"**{t('precision.table_heading', lang, scale=fmt_number(scale))}**")
        yes, no = t("precision.yes", lang), t("precision.no", lang)
        rows = list(r["here"].values())
        table = pd.DataFrame(
            {
                t("precision.col_ms", lang): [fmt(v[0]) for v in rows],
                t("precision.col_ms_err", lang): [fmt(v[1]) for v in rows],
                t("precision.col_out_err", lang): [fmt(v[2]) for v in rows],
                t("precision.col_overflow", lang): [yes if v[3] else no for v in rows],
            },
            index=list(r["here"]),
        )
        table.index.name = t("precision.col_dtype", lang)
        st.table(table)
    with right:
        st.markdown(t("precision.limits_explain", lang, **numbers))


def drift_section(state: dict, r: dict, lang: str) -> None:
    sums = r["sums"]
    exact = sums["float64"][-1]
    st.subheader(t("precision.drift_heading", lang))
    st.markdown(t("precision.drift_intro", lang))
    labels = {
        "index": t("precision.index_axis", lang),
        "partial_sum": t("precision.partial_axis", lang),
        "float16_max": t("precision.float16_max", lang, value=fmt_number(FLOAT16_MAX)),
    }
    finals = {dt: float(v[-1]) for dt, v in sums.items()}
    overflow_at = np.flatnonzero(~np.isfinite(sums["float16"]))
    numbers = {
        "d": state["d"],
        "scale": fmt_number(state["scale"]),
        "exact": fmt(exact),
        "f32": fmt(finals["float32"]),
        "f16": fmt(finals["float16"]),
        "bf16": fmt(finals["bfloat16"]),
        "bf16_share": f"{100 * finals['bfloat16'] / exact:.1f} %" if exact > 0 else "–",
    }
    st.plotly_chart(
        running_sum_figure(sums, FLOAT16_MAX, labels),
        key="running_sum",
        alt=t("precision.drift_alt", lang, **numbers),
    )
    st.caption(t("precision.drift_caption", lang, **numbers))
    if overflow_at.size:
        st.warning(t("precision.drift_overflow", lang, index=int(overflow_at[0]) + 1, **numbers))
    else:
        st.markdown(t("precision.drift_explain", lang, **numbers))


def main() -> None:
    lang = begin_page("precision", PARAMS)
    state = controls(lang)
    dtypes = DTYPES if torch_available() else ("float64", "float32")
    r = compute(state["d"], state["seed"], state["scale"], state["eps"], dtypes)
    eps_section(state, r, lang)
    dtype_section(state, r, lang)
    drift_section(state, r, lang)
    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
