"""Residual stream: a common offset accumulates over L pre-norm blocks; what each norm passes on.

The page shows one model of the stream, the synthetic trunk of ``core.residual`` (controls,
one cached call, then ``toy_trunk``). Another model of the stream would add its own controls and
sections beside these and leave them as they are.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.defaults import DEFAULT_LAYER_EPS, EPS_LADDER, MIN_WIDTH, ladder_upto
from core.residual import (
    DRIFT_LIMIT,
    MAX_LAYERS,
    QUANTITIES,
    RESIDUAL_FORMULA,
    ROUNDING,
    STREAM_MAX_WIDTH,
    TOKENS,
    ResidualView,
    residual_view,
)
from ui import fmt, widgets
from ui.frame import begin_page, share_box
from ui.i18n import Translator, translator
from ui.params import FloatParam, IntParam, LadderParam
from viz.residual import layers_figure

# The panels of the figure, in reading order: the stream, what W_l is handed, what it returns.
PANELS = (
    "stream_mean",
    "input_cos_ones",
    "input_norm",
    "input_share_ones",
    "output_norm",
    "output_share_offset",
)
NORMS = ("rms", "layer")  # RMSNorm first, as on every page

PARAMS = (
    IntParam("layers", 24, 1, MAX_LAYERS),
    IntParam("d", 256, MIN_WIDTH, STREAM_MAX_WIDTH),
    FloatParam("drift", 0.5, -DRIFT_LIMIT, DRIFT_LIMIT),
    IntParam("seed", 0),
    LadderParam("eps", DEFAULT_LAYER_EPS, ladder_upto(EPS_LADDER, 1.0)),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(layers: int, d: int, drift: float, seed: int, eps: float) -> ResidualView:
    """Both trunks (RMSNorm and LayerNorm) for one link, read at every layer, with the claims."""
    return residual_view(layers=layers, d=d, drift=drift, seed=seed, eps=eps)


def controls(tr: Translator) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        widgets.number(P["layers"], tr("residual.layers_label"))
        widgets.number(P["d"], tr("residual.d_label"), kind="input", step=1)
        widgets.number(
            P["drift"], tr("residual.drift_label"), step=0.05, help=tr("residual.drift_help")
        )
        widgets.number(P["seed"], tr("residual.seed_label"), kind="input", step=1)
        widgets.ladder(P["eps"], tr("residual.eps_label"))
    return {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}


def metrics(view: ResidualView, tr: Translator, layers: int) -> None:
    """The RMSNorm trunk's last readings, each with the LayerNorm trunk's beside it."""
    shown = (
        ("metric_offset", "stream_mean"),
        ("metric_cos", "input_cos_ones"),
        ("metric_out_share", "output_share_offset"),
        ("metric_tokens", "token_cosine"),
    )
    # Two to a row: each label names its trunk in full, on a laptop and on a phone.
    cols = [c for _ in range(2) for c in st.columns(2)]
    for col, (label, quantity) in zip(cols, shown, strict=True):
        col.metric(
            tr(f"residual.{label}", layers=layers),
            fmt.num(view.last["rms"][quantity], noise=ROUNDING),
            delta=tr(
                "residual.vs_layer", value=fmt.num(view.last["layer"][quantity], noise=ROUNDING)
            ),
            delta_color="off",
            delta_arrow="off",
        )


def reading_table(view: ResidualView, tr: Translator, names: dict[str, str]) -> pd.DataFrame:
    frame = pd.DataFrame(
        {
            names[norm]: [fmt.num(view.last[norm][q], noise=ROUNDING) for q in QUANTITIES]
            for norm in NORMS
        },
        index=[names[q] for q in QUANTITIES],
    )
    frame.index.name = tr("residual.quantity")
    return frame


def toy_trunk(view: ResidualView, tr: Translator, layers: int, drift: float) -> None:
    """The synthetic trunk: model, last readings, figure, explanations, table."""
    claims = {slot: tr.claim(claim) for slot, claim in view.claims.items()}
    st.latex(RESIDUAL_FORMULA)
    st.caption(tr("residual.model_caption", n=TOKENS, d=view.d, layers=layers))
    metrics(view, tr, layers)

    st.subheader(tr("residual.figure_heading"))
    names = {
        "rms": tr("residual.rms_trunk"),
        "layer": tr("residual.layer_trunk"),
        "layer_axis": tr("residual.layer_axis"),
        **{q: tr(f"residual.q_{q}") for q in QUANTITIES},
    }
    titles = {**names, **{q: tr(f"residual.p_{q}") for q in PANELS}}
    st.plotly_chart(
        layers_figure(view.layers, view.readings, PANELS, titles),
        key="layers_figure",
        alt=tr("residual.figure_alt", layers=layers, drift=drift),
    )
    st.caption(f"{claims['offset']} {claims['length']}")

    st.subheader(tr("residual.explain_heading"))
    for slot in ("rms", "layer"):
        st.markdown(claims[slot])
    st.markdown(f"{claims['share']} {claims['tokens']}")
    st.markdown(claims["swap"])

    st.subheader(tr("residual.table_heading", layers=layers))
    st.table(reading_table(view, tr, names))
    st.caption(claims["table"])


def main() -> None:
    tr = translator(begin_page("residual", PARAMS))
    state = controls(tr)
    layers, drift = int(state["layers"]), float(state["drift"])
    view = compute(layers, int(state["d"]), drift, int(state["seed"]), float(state["eps"]))
    toy_trunk(view, tr, layers, drift)
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
