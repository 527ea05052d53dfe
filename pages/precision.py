"""Epsilon and precision: where eps bends the output norm, and what float16 / bfloat16 do."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import torch_available
from core.defaults import DEFAULT_RMS_EPS, DTYPES, MIN_WIDTH
from labs.precision.figures import (
    error_vs_scale_figure,
    matched_figure,
    norm_vs_scale_figure,
    running_sum_figure,
)
from labs.precision.model import (
    MAX_SWEEP_WIDTH,
    NORM_FORMULA_INSIDE,
    NORM_FORMULA_OUTSIDE,
    PAGE_EPS,
    PLACEMENTS,
    SCALE_LADDER,
    SWEEP_EPS,
    SWEEP_SCALES,
    PrecisionView,
    precision_view,
)
from labs.precision.reduced import FLOAT16_MAX
from labs.precision.snippet import precision_code
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, presenting, readable, share_box
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, IntParam, LadderParam

PARAMS = (
    IntParam("d", 64, MIN_WIDTH, MAX_SWEEP_WIDTH),
    IntParam("seed", 0, 0, 2**31 - 1),
    ChoiceParam("placement", "both", PLACEMENTS),
    LadderParam("scale", 1.0, SCALE_LADDER),
    LadderParam("eps", DEFAULT_RMS_EPS, PAGE_EPS),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(
    d: int, seed: int, placement: str, scale: float, eps: float, dtypes: tuple[str, ...]
) -> PrecisionView:
    return precision_view(d, seed, placement, scale, eps, dtypes)


def controls(tr: Translator) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    state = {}
    with st.sidebar:
        st.header(tr("common.controls"))
        st.subheader(tr("precision.group_input"))
        state["d"] = widgets.number(P["d"], tr("precision.d_label"), kind="input", step=1)
        st.caption(tr("precision.d_help"))
        state["seed"] = widgets.number(P["seed"], tr("precision.seed_label"), kind="input", step=1)
        st.subheader(tr("precision.group_eps"))
        options = {p: tr(f"precision.placement_option_{p}") for p in PLACEMENTS}
        placement = widgets.labelled_choice(
            P["placement"], tr("precision.placement_label"), options.__getitem__
        )
        state["placement"] = placement
        st.caption(tr(f"precision.placement_{placement}"))
        st.subheader(tr("precision.group_dtype"))
        state["eps"] = widgets.ladder(P["eps"], tr("precision.eps_label"))
        st.caption(tr("precision.eps_help"))
        state["scale"] = widgets.ladder(P["scale"], tr("precision.scale_label"))
        st.caption(tr("precision.scale_help"))
        if not torch_available():
            st.info(tr("common.torch_missing", options="float16, bfloat16"))
    return state


def eps_section(view: PrecisionView, tr: Translator, labels: dict[str, str]) -> None:
    st.subheader(tr("precision.eps_heading"))
    left, right = st.columns(2)
    left.markdown(f"**{tr('precision.formula_inside')}**")
    left.latex(NORM_FORMULA_INSIDE)
    right.markdown(f"**{tr('precision.formula_outside')}**")
    right.latex(NORM_FORMULA_OUTSIDE)
    eps_text = [fmt.num(e) for e in SWEEP_EPS]
    table, headers = {"scale": SWEEP_SCALES}, {"scale": labels["scale"]}
    for placement, grid in view.norms.items():
        for text, values in zip(eps_text, grid, strict=True):
            # Named as the figure names its lines.
            table[f"{placement}_{text}"] = values
            headers[f"{placement}_{text}"] = f"ε = {text} · {labels[placement]}"
    chart(
        readable(
            norm_vs_scale_figure(SWEEP_SCALES, view.norms, eps_text, math.sqrt(view.d), labels)
        ),
        key="norm_sweep",
        title=tr("precision.norm_chart"),
        words=tr.chart_words(view.claims, "norm"),
        more=tr.claim(view.claims["norm_caption"]),
        table=table,
        headers=headers,
        file_name="normlab-precision-norm.csv",
    )
    st.markdown(tr.claim(view.claims["norm_explain"]))


def matched_section(view: PrecisionView, tr: Translator, labels: dict[str, str]) -> None:
    st.subheader(tr("precision.matched_heading"))
    names = {
        "inside": tr("precision.matched_inside", eps=view.eps),
        "outside": tr("precision.matched_outside", eps=view.eps_out),
    }
    knee = view.knee if view.eps > 0 else None
    chart(
        readable(
            matched_figure(SWEEP_SCALES, view.matched, names, knee, math.sqrt(view.d), labels)
        ),
        key="matched",
        title=tr("precision.matched_chart"),
        words=tr.chart_words(view.claims, "matched"),
        table={"scale": SWEEP_SCALES, **view.matched},
        headers={"scale": labels["scale"], **names},
        file_name="normlab-precision-matched.csv",
    )
    st.markdown(tr.claim(view.claims["matched"]))


def dtype_section(view: PrecisionView, tr: Translator, labels: dict[str, str]) -> None:
    limits = view.limits
    st.subheader(tr("precision.dtype_heading"))
    st.markdown(tr("precision.dtype_intro", eps=view.eps))
    labels = {**labels, **{k: tr(f"precision.{k}") for k in ("limit_sum", "limit_square")}}
    labels["chosen"] = tr("precision.chosen", scale=view.scale)
    shown = {"sum": limits.sum, "square": limits.square} if "float16" in view.errors else {}
    chart(
        readable(error_vs_scale_figure(SWEEP_SCALES, view.errors, shown, view.scale, labels)),
        key="error_sweep",
        title=tr("precision.error_chart"),
        words=tr.chart_words(view.claims, "error"),
        table={"scale": SWEEP_SCALES, **view.errors},
        headers={"scale": labels["scale"]},
        file_name="normlab-precision-error.csv",
    )
    slots = ("error_f32", "error_bf16", "error_f16_range", "error_f16_low", "error_f16_high")
    st.markdown("\n".join(f"- {tr.claim(view.claims[s])}" for s in slots if s in view.claims))
    left, right = st.columns([3, 2], gap="large")
    left.markdown(f"**{tr('precision.table_heading', scale=view.scale)}**")
    yes, no = tr("precision.yes"), tr("precision.no")
    table = pd.DataFrame(
        {
            tr("precision.col_ms"): [fmt.num(r.mean_square) for r in view.rows],
            tr("precision.col_ms_err"): [fmt.num(r.mean_square_error) for r in view.rows],
            tr("precision.col_out_err"): [fmt.num(r.output_error) for r in view.rows],
            tr("precision.col_overflow"): [yes if r.overflow else no for r in view.rows],
        },
        index=[r.dtype for r in view.rows],
    )
    table.index.name = tr("precision.col_dtype")
    left.table(table)
    if "limits" in view.claims:
        right.markdown(tr.claim(view.claims["limits"]))


def drift_section(view: PrecisionView, tr: Translator) -> None:
    st.subheader(tr("precision.drift_heading"))
    st.markdown(tr("precision.drift_intro"))
    labels = {"index": tr("precision.index_axis"), "partial_sum": tr("precision.partial_axis")}
    labels["float16_max"] = tr("precision.float16_max", value=int(FLOAT16_MAX))
    chart(
        readable(running_sum_figure(view.sums, FLOAT16_MAX, labels)),
        key="running_sum",
        title=tr("precision.drift_chart"),
        words=tr.chart_words(view.claims, "drift"),
        more=tr.claim(view.claims["drift_caption"]),
        table={"i": np.arange(1, view.d + 1), **view.sums},
        headers={"i": labels["index"]},
        file_name="normlab-precision-sums.csv",
    )
    drift = view.claims["drift"]
    (st.warning if drift.key == "precision.drift_overflow" else st.markdown)(tr.claim(drift))
    if "drift_torch" in view.claims:
        st.markdown(tr.claim(view.claims["drift_torch"]))
    if not presenting():
        st.caption(tr("precision.drift_hint"))


def main() -> None:
    tr = translator(begin_page("precision", PARAMS))
    state = controls(tr)
    dtypes = DTYPES if torch_available() else DTYPES[:2]
    view = compute(
        state["d"], state["seed"], state["placement"], state["scale"], state["eps"], dtypes
    )
    labels = {k: tr(f"precision.{k}") for k in ("inside", "outside")}
    labels |= {k: tr(f"precision.{k}_axis") for k in ("scale", "norm", "error")}
    labels["sqrt_d"] = tr("precision.sqrt_d", value=math.sqrt(view.d))
    labels["knee"] = tr("precision.knee", value=view.knee)
    eps_section(view, tr, labels)
    matched_section(view, tr, labels)
    dtype_section(view, tr, labels)
    drift_section(view, tr)
    code_section(tr, precision_code(state, dtypes))
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
