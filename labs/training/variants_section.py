"""The training lab beyond the two norms: the placement, QK-norm and QK-Clip controls of a live
run, and DyT's and Derf's learned scalars, layer by layer (``labs.training.dyt_claims``).
``pages/training.py`` links ``ARCHITECTURE_PARAMS`` and calls the functions below."""

from __future__ import annotations

import streamlit as st

from labs.training.curves import TrainingView
from labs.training.dyt_claims import SYMBOLS
from labs.training.figures import alpha_figure
from labs.training.lab_view import LIVE_TAUS
from labs.training.model import PLACEMENTS, QK_NORMS
from labs.training.sets import QKNORM_TAU
from labs.training.sets_section import say
from ui import widgets
from ui.chart import chart
from ui.frame import readable
from ui.i18n import Translator
from ui.params import ChoiceParam, LadderParam

ARCHITECTURE_PARAMS = (
    ChoiceParam("placement", "pre", PLACEMENTS),
    ChoiceParam("qk_norm", "off", QK_NORMS),
    LadderParam("tau", QKNORM_TAU, LIVE_TAUS),
)
_P = {p.key: p for p in ARCHITECTURE_PARAMS}


def architecture_controls(tr: Translator) -> None:
    """Where the norm layers sit and the QK norm, each a select box in the page's language,
    bound to the link (``placement``, ``qk_norm``), and QK-Clip's cap ``tau`` (for ``clip``
    alone). Call inside the sidebar."""
    for key in ("placement", "qk_norm"):
        widgets.labelled_choice(
            _P[key],
            tr(f"training.{key}_label"),
            lambda value, key=key: tr(f"training.{key}_option_{value}"),
            help=tr(f"training.{key}_help"),
        )
    clip = st.session_state.get("qk_norm") == "clip"
    widgets.ladder(
        _P["tau"], tr("training.tau_label"), help=tr("training.tau_help"), disabled=not clip
    )


def architecture_names(state: dict, tr: Translator) -> dict[str, str]:
    """The chosen placement and QK norm (with QK-Clip, its tau), named in the page's language."""
    names = {key: tr(f"training.{key}_option_{state[key]}") for key in ("placement", "qk_norm")}
    if state["qk_norm"] == "clip":
        names["qk_norm"] = tr("training.tau_setting", tau=state["tau"])
    return names


def alpha_section(view: TrainingView, tr: Translator, key: str) -> None:
    """Each learned scalar of DyT and Derf at the end of training per layer, over the seeds, with
    its words and whether it moved from its initial value; nothing where no run recorded one."""
    for alphas in view.alphas:
        chart_name = f"{alphas.param}_{alphas.norm}"
        names = {"variant": tr(f"training.variant_{alphas.norm}"), "param": SYMBOLS[alphas.param]}
        st.subheader(tr("training.alpha_heading", **names))
        if alphas.param == "alpha":
            st.caption(tr(f"training.alpha_note_{alphas.norm}", init=alphas.init))
        texts = {"seed": "seed", "mean": "mean", "alpha": "alpha_axis"}
        texts |= {"init": "alpha_init", "layer": "alpha_layer"}
        labels = names | {name: tr(f"training.{text}", **names) for name, text in texts.items()}
        fig = alpha_figure(
            alphas.norm, alphas.layers, alphas.seeds, alphas.values, alphas.init, labels
        )
        table = {"layer": list(alphas.layers)}
        for seed, row in zip(alphas.seeds, alphas.values, strict=True):
            table[f"seed {seed}"] = [float(v) for v in row]
        headers = {"layer": labels["layer"]}
        headers |= {f"seed {seed}": f"{labels['seed']} {seed}" for seed in alphas.seeds}
        if len(alphas.seeds) > 1:
            table["mean"] = [float(v) for v in alphas.mean]
            headers["mean"] = labels["mean"]
        table["init"] = [alphas.init] * len(alphas.layers)  # the dashed line
        headers["init"] = labels["init"]
        chart(
            readable(fig),
            key=f"{key}_{chart_name}",
            title=tr("training.alpha_chart", **names),
            words=tr.runs_words(view.claims, chart_name),
            table=table,
            headers=headers,
            file_name=f"normlab-training-{key}-{alphas.norm}-{alphas.param}.csv",
        )
        say(tr, view.claims, (chart_name, f"{chart_name}_each"))
