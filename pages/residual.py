"""Residual stream: a common offset accumulates over L pre-norm blocks; what each norm passes on."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.residual import (
    MAX_LAYERS,
    MAX_WIDTH,
    QUANTITIES,
    RESIDUAL_FORMULA,
    TOKENS,
    simulate_residual,
)
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import FloatParam, IntParam, LadderParam, fmt_number
from viz.residual import layers_figure

MIN_WIDTH = 4
# A drift of 2 per block already makes the offset dominate within a few layers; more adds
# nothing but a longer wait for the same picture.
DRIFT_LIMIT = 2.0
EPS_LADDER = (0.0, 1e-8, 1e-6, 1e-5, 1e-3, 0.1, 1.0)
# The panels of the figure, in reading order: the stream, what W_l is handed, what it returns.
PANELS = (
    "stream_mean",
    "input_cos_ones",
    "input_norm",
    "input_share_ones",
    "output_norm",
    "output_share_offset",
)

PARAMS = (
    IntParam("layers", 24, 1, MAX_LAYERS),
    IntParam("d", 256, MIN_WIDTH, MAX_WIDTH),
    FloatParam("drift", 0.5, -DRIFT_LIMIT, DRIFT_LIMIT),
    IntParam("seed", 0, 0, 2**31 - 1),
    LadderParam("eps", 1e-5, EPS_LADDER),
)
P = {p.key: p for p in PARAMS}


# Below this a reading is float64 rounding of an exact zero (LayerNorm's mean is 0 up to about
# 1e-16); printing "-1.6e-16" would suggest a sign that is not there.
ROUNDING = 1e-12


def fmt(value: float) -> str:
    """Four significant digits, for prose and tables; rounding noise reads as 0."""
    return "0" if abs(value) < ROUNDING else f"{value:.4g}"


@st.cache_data(max_entries=64, show_spinner=False)
def compute(layers: int, d: int, drift: float, seed: int, eps: float) -> dict:
    """The two traces (LayerNorm and RMSNorm trunks), reduced to what the page shows."""
    trace = simulate_residual(layers=layers, d=d, drift=drift, seed=seed, eps=eps)
    return {"layers": trace.layers, "readings": trace.readings}


def controls(lang: str) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    with st.sidebar:
        st.header(t("common.controls", lang))
        widgets.number(P["layers"], t("residual.layers_label", lang))
        widgets.number(P["d"], t("residual.d_label", lang), kind="input", step=1)
        widgets.number(
            P["drift"],
            t("residual.drift_label", lang),
            step=0.05,
            help=t("residual.drift_help", lang),
        )
        widgets.number(P["seed"], t("residual.seed_label", lang), kind="input", step=1)
        widgets.ladder(P["eps"], t("residual.eps_label", lang))
    return {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}


def main() -> None:
    lang = begin_page("residual", PARAMS)
    state = controls(lang)
    layers, d = int(state["layers"]), int(state["d"])
    r = compute(layers, d, float(state["drift"]), int(state["seed"]), float(state["eps"]))
    lay, rms = r["readings"]["layer"], r["readings"]["rms"]

    st.latex(RESIDUAL_FORMULA)
    st.caption(t("residual.model_caption", lang, n=TOKENS, d=d, layers=layers))

    last = {
        "layers": layers,
        "d": d,
        "drift": fmt_number(state["drift"]),
        "offset": fmt(rms["stream_mean"][-1]),
        "offset_layer": fmt(lay["stream_mean"][-1]),
        "cos_rms": fmt(rms["input_cos_ones"][-1]),
        "cos_layer": fmt(lay["input_cos_ones"][-1]),
        "share_rms": fmt(rms["input_share_ones"][-1]),
        "share_layer": fmt(lay["input_share_ones"][-1]),
        "out_rms": fmt(rms["output_share_offset"][-1]),
        "out_layer": fmt(lay["output_share_offset"][-1]),
        "tok_rms": fmt(rms["token_cosine"][-1]),
        "tok_layer": fmt(lay["token_cosine"][-1]),
        "random": fmt(1 / d),
    }
    cols = st.columns(4)
    cols[0].metric(t("residual.metric_offset", lang, layers=layers), last["offset"])
    cols[1].metric(
        t("residual.metric_cos", lang),
        last["cos_rms"],
        delta=t("residual.vs_layer", lang, value=last["cos_layer"]),
        delta_color="off",
    )
    cols[2].metric(
        t("residual.metric_out_share", lang),
        last["out_rms"],
        delta=t("residual.vs_layer", lang, value=last["out_layer"]),
        delta_color="off",
    )
    cols[3].metric(
        t("residual.metric_tokens", lang),
        last["tok_rms"],
        delta=t("residual.vs_layer", lang, value=last["tok_layer"]),
        delta_color="off",
    )

    st.subheader(t("residual.figure_heading", lang))
    labels = {
        "rms": t("residual.rms_trunk", lang),
        "layer": t("residual.layer_trunk", lang),
        "layer_axis": t("residual.layer_axis", lang),
        **{q: t(f"residual.q_{q}", lang) for q in QUANTITIES},
    }
    st.plotly_chart(
        layers_figure(r["layers"], r["readings"], PANELS, labels),
        key="layers_figure",
        alt=t("residual.figure_alt", lang, **last),
    )
    st.caption(t("residual.figure_caption", lang, **last))

    st.subheader(t("residual.explain_heading", lang))
    st.markdown(t("residual.explain_layer", lang, **last))
    st.markdown(t("residual.explain_rms", lang, **last))
    st.markdown(t("residual.explain_swap", lang, **last))

    st.subheader(t("residual.table_heading", lang, layers=layers))
    table = pd.DataFrame(
        {
            labels["layer"]: [fmt(lay[q][-1]) for q in QUANTITIES],
            labels["rms"]: [fmt(rms[q][-1]) for q in QUANTITIES],
        },
        index=[labels[q] for q in QUANTITIES],
    )
    table.index.name = t("residual.quantity", lang)
    st.table(table)
    st.caption(t("residual.table_caption", lang, **last))

    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
