"""Residual stream: a common offset accumulates over L pre-norm blocks; what each norm passes on.

Two models of the stream, chosen by the link's ``mode``: the synthetic trunk of
``labs.residual.model`` (``mode=synthetic``: its controls, one cached call, then ``toy_trunk``) and
the shipped trained models read with forward hooks (``mode=trained``: a training seed and a
text, one cached call to ``trained_view``, then ``trained_models``). Each mode draws only its
own controls; the other mode's values stay in the link."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.defaults import DEFAULT_LAYER_EPS, EPS_LADDER, MIN_WIDTH, ladder_upto
from labs.residual.figures import coordinates_figure, layers_figure
from labs.residual.model import (
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
from labs.residual.snippet import residual_code
from labs.residual.trained import TRAINED_NORMS, TRAINED_QUANTITIES, TrainedView, trained_view
from labs.training.activations import SHIPPED_SEEDS, TEXTS
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, metric_row, metric_width, readable, share_box
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, FloatParam, IntParam, LadderParam

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

MODES = ("synthetic", "trained")
# Each model of the stream, with the link parameters its controls set.
MODE_KEYS = {
    "synthetic": ("layers", "d", "drift", "seed", "eps"),
    "trained": ("trained_seed", "prompt"),
}

PARAMS = (
    ChoiceParam("mode", "synthetic", MODES),
    IntParam("layers", 24, 1, MAX_LAYERS),
    IntParam("d", 256, MIN_WIDTH, STREAM_MAX_WIDTH),
    FloatParam("drift", 0.5, -DRIFT_LIMIT, DRIFT_LIMIT, step=0.05),
    IntParam("seed", 0),
    LadderParam("eps", DEFAULT_LAYER_EPS, ladder_upto(EPS_LADDER, 1.0)),
    # ``text`` is taken by the frame (``text=large``); the models' text is the ``prompt``.
    IntParam("trained_seed", SHIPPED_SEEDS[0], min(SHIPPED_SEEDS), max(SHIPPED_SEEDS)),
    ChoiceParam("prompt", "docs", tuple(TEXTS)),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(layers: int, d: int, drift: float, seed: int, eps: float) -> ResidualView:
    """Both trunks (RMSNorm and LayerNorm) for one link, read at every layer, with the claims."""
    return residual_view(layers=layers, d=d, drift=drift, seed=seed, eps=eps)


@st.cache_data(max_entries=len(SHIPPED_SEEDS) * len(TEXTS), show_spinner=False)
def compute_trained(seed: int, prompt: str) -> TrainedView:
    """The three shipped models of one training seed read on one text, with the claims. The
    core keeps the readings of every checkpoint per text, so a new seed loads nothing again."""
    return trained_view(seed=seed, text=prompt)


def controls(tr: Translator, mode: str) -> dict:
    """The sidebar controls of ``mode``; every one is carried by the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        if mode == "synthetic":
            widgets.number(P["layers"], tr("residual.layers_label"))
            widgets.number(P["d"], tr("residual.d_label"), kind="input", step=1)
            widgets.number(P["drift"], tr("residual.drift_label"), help=tr("residual.drift_help"))
            widgets.number(P["seed"], tr("residual.seed_label"), kind="input", step=1)
            widgets.ladder(P["eps"], tr("residual.eps_label"))
        else:
            widgets.number(P["trained_seed"], tr("residual.trained_seed_label"), step=1)
            widgets.labelled_choice(
                P["prompt"],
                tr("residual.prompt_label"),
                lambda k: tr(f"residual.prompt_{k}"),
                help=tr("residual.prompt_help"),
            )
    return {key: widgets.current(P[key]) for key in MODE_KEYS[mode]}


def panels_table(layers, readings, panels, titles, norms) -> tuple[dict, dict[str, str]]:
    """A figure of panels as a table: the layer l, then each panel's reading of each model."""
    table: dict = {"l": np.asarray(layers)}
    headers = {"l": "l"}
    for q in panels:
        for norm in norms:
            table[f"{q}_{norm}"] = readings[norm][q]
            headers[f"{q}_{norm}"] = f"{titles[q]}, {titles[norm]}"
    return table, headers


def toy_trunk(view: ResidualView, tr: Translator, layers: int) -> None:
    """The synthetic trunk: model, last readings, figure, explanations, table."""
    claims = {slot: tr.claim(claim) for slot, claim in view.claims.items()}
    st.latex(RESIDUAL_FORMULA)
    st.caption(tr("residual.model_caption", n=TOKENS, d=view.d, layers=layers))
    # The RMSNorm trunk's last readings, each with the LayerNorm trunk's beside it.
    shown = (
        ("metric_offset", "stream_mean"),
        ("metric_cos", "input_cos_ones"),
        ("metric_out_share", "output_share_offset"),
        ("metric_tokens", "token_cosine"),
    )
    # Each label names its trunk in full; two to a row on a phone.
    with metric_row():
        for label, quantity in shown:
            st.metric(
                tr(f"residual.{label}", layers=layers),
                fmt.num(view.last["rms"][quantity], noise=ROUNDING),
                delta=tr(
                    "residual.vs_layer", value=fmt.num(view.last["layer"][quantity], noise=ROUNDING)
                ),
                delta_color="off",
                delta_arrow="off",
                width=metric_width(),
            )

    st.subheader(tr("residual.figure_heading"))
    names = {n: tr(f"residual.{n}_trunk") for n in NORMS}
    names |= {q: tr(f"residual.q_{q}") for q in QUANTITIES}
    names["layer_axis"] = tr("residual.layer_axis")
    titles = {**names, **{q: tr(f"residual.p_{q}") for q in PANELS}}
    table, headers = panels_table(view.layers, view.readings, PANELS, titles, NORMS)
    chart(
        readable(layers_figure(view.layers, view.readings, PANELS, titles)),
        key="layers_figure",
        title=tr("residual.figure_chart"),
        words=tr.chart_words(view.claims, "figure_stream_mean", "figure_input_cos_ones"),
        more=f"{claims['offset']} {claims['length']}",
        table=table,
        headers=headers,
        file_name="normlab-residual-layers.csv",
    )

    st.subheader(tr("residual.explain_heading"))
    for slot in ("rms", "layer"):
        st.markdown(claims[slot])
    st.markdown(f"{claims['share']} {claims['tokens']}")
    st.markdown(claims["swap"])

    st.subheader(tr("residual.table_heading", layers=layers))
    frame = pd.DataFrame(
        {
            names[norm]: [fmt.num(view.last[norm][q], noise=ROUNDING) for q in QUANTITIES]
            for norm in NORMS
        },
        index=[names[q] for q in QUANTITIES],
    )
    frame.index.name = tr("residual.quantity")
    st.table(frame)
    st.caption(claims["table"])


def trained_table(view: TrainedView, names: dict[str, str]) -> pd.DataFrame:
    """Every reading after the last block, one column per model; shares as percentages."""
    rows = {
        names[f"q_{q}"]: [
            (fmt.pct if q == "stream_share_ones" else fmt.num)(view.last[n][q])
            for n in TRAINED_NORMS
        ]
        for q in TRAINED_QUANTITIES
    }
    rows[names["q_loss"]] = [fmt.num(view.loss[n]) for n in TRAINED_NORMS]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=[names[n] for n in TRAINED_NORMS])
    frame.index.name = names["quantity"]
    return frame


def trained_models(view: TrainedView, tr: Translator) -> None:
    """The shipped models: what they are and read, the readings by layer, what they show."""
    claims = {slot: tr.claim(claim) for slot, claim in view.claims.items()}
    # Labels of the figures and tables: models, axes, panels, table rows.
    keys = ("layer_axis", "coordinate_axis", "times_median", "quantity")
    names = {n: tr(f"residual.trained_{n}") for n in TRAINED_NORMS}
    names |= {k: tr(f"residual.{k}") for k in keys}
    names |= {q: tr(f"residual.p_{q}") for q in TRAINED_QUANTITIES}
    names |= {f"q_{q}": tr(f"residual.q_{q}") for q in (*TRAINED_QUANTITIES, "loss")}
    st.subheader(tr("residual.trained_heading"))
    st.markdown(tr("residual.trained_lead"))
    st.caption(claims["model"])
    st.code(view.prompt, language=None, wrap_lines=True)
    st.caption(tr("residual.prompt_caption"))
    st.markdown(claims["text"])
    st.info(claims["small"])

    st.subheader(tr("residual.trained_figure_heading"))
    table, headers = panels_table(
        view.layers, view.readings, TRAINED_QUANTITIES, names, TRAINED_NORMS
    )
    chart(
        readable(
            layers_figure(view.layers, view.readings, TRAINED_QUANTITIES, names, TRAINED_NORMS)
        ),
        key="trained_figure",
        title=tr("residual.trained_figure_chart"),
        words=tr.chart_words(view.claims, "trained_figure", "trained_figure_none"),
        table=table,
        headers=headers,
        file_name="normlab-residual-trained.csv",
    )
    st.subheader(tr("residual.trained_explain_heading"))
    for slot in ("offset", "share", "chance", "shift"):
        st.markdown(claims[slot])
    outliers(view, tr, names, claims)
    st.subheader(tr("residual.trained_table_heading"))
    st.table(trained_table(view, names))
    st.caption(claims["table"])


def outliers(view: TrainedView, tr: Translator, names: dict, claims: dict) -> None:
    """Each model's largest coordinates, layer by layer: the chart and the table of them."""
    st.subheader(tr("residual.outliers_heading"))
    rows, cols = view.relative_magnitude["rms"].shape
    layer_of, coordinate_of = np.divmod(np.arange(rows * cols), cols)  # row by row
    chart(
        readable(coordinates_figure(view.relative_magnitude, TRAINED_NORMS, names)),
        key="coordinates_figure",
        title=tr("residual.coordinates_chart"),
        words=tr.chart_words(view.claims, "coordinates"),
        table={
            "l": layer_of,
            "i": coordinate_of,
            **{n: view.relative_magnitude[n].ravel() for n in TRAINED_NORMS},
        },
        headers={"l": "l", "i": "i", **{n: names[n] for n in TRAINED_NORMS}},
        file_name="normlab-residual-coordinates.csv",
    )
    st.markdown(f"{claims['outliers']} {claims['dims']}")
    k = view.outlier_dims["rms"].shape[1]
    st.markdown(f"**{tr('residual.dims_heading', k=k)}**")
    # The largest coordinates of each model's stream, one row per layer.
    dims = pd.DataFrame(
        {
            names[n]: [", ".join(str(int(i)) for i in row) for row in view.outlier_dims[n]]
            for n in TRAINED_NORMS
        },
        index=[str(int(layer)) for layer in view.layers],
    )
    dims.index.name = "l"  # the index of hₗ; "layer l" would wrap on a phone
    st.table(dims)


def main() -> None:
    tr = translator(begin_page("residual", PARAMS))
    # The model of the stream.
    mode = widgets.switch(P["mode"], tr("residual.mode_label"), lambda m: tr(f"residual.mode_{m}"))
    state = controls(tr, mode)
    if mode == "synthetic":
        layers = int(state["layers"])
        drift = float(state["drift"])
        view = compute(layers, int(state["d"]), drift, int(state["seed"]), float(state["eps"]))
        st.markdown(tr("residual.synthetic_lead"))
        toy_trunk(view, tr, layers)
    else:
        with st.spinner(tr("residual.reading")):
            trained = compute_trained(int(state["trained_seed"]), str(state["prompt"]))
        trained_models(trained, tr)
    code_section(tr, residual_code({**state, "mode": mode}))
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
