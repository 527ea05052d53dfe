"""Invariance lab: Table 1 of the RMSNorm paper, computed live, and what a shift along 1 erases."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import LAYER_FORMULA, RMS_FORMULA
from labs.invariance.figures import before_after_figure, collapse_figure, pair_figure, sweep_figure
from labs.invariance.model import (
    CASE_A,
    CASE_B,
    SHIFT_LADDER,
    SIZE_LADDER,
    InvarianceLab,
    invariance_lab,
)
from labs.invariance.snippet import invariance_code
from labs.invariance.table import TABLE_TOL, TRANSFORMS, InvarianceRow
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, metric_row, metric_width, norm_formulas, readable, share_box
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, IntParam, LadderParam

PARAMS = (
    ChoiceParam("transform", "weight_matrix_recenter", tuple(TRANSFORMS)),
    LadderParam("size", 2.0, SIZE_LADDER),
    IntParam("seed", 0),
    LadderParam("c_max", 20.0, SHIFT_LADDER),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(transform: str, size: float, seed: int, c_max: float) -> InvarianceLab:
    """The page's whole state for one link (cached: a link always gives the same numbers)."""
    return invariance_lab(transform=transform, size=size, seed=seed, c_max=c_max)


def controls(tr: Translator) -> dict:
    """The sidebar controls; every one is carried by the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        transform = widgets.labelled_choice(
            P["transform"], tr("invariance.transform_label"), lambda v: tr(f"invariance.t_{v}")
        )
        st.caption(tr(f"invariance.desc_{transform}"))
        widgets.ladder(P["size"], tr("invariance.size_label"))
        st.caption(tr("invariance.size_help"))
        widgets.number(P["seed"], tr("invariance.seed_label"), kind="input", step=1)
        widgets.ladder(P["c_max"], tr("invariance.c_max_label"))
    return {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}


def labels(tr: Translator, *keys: str) -> dict[str, str]:
    """Figure labels: the norms, the axes, and ``invariance.<key>`` for each of ``keys``."""
    names = {"rms": tr("common.rms_norm"), "layer": tr("common.layer_norm")}
    names |= {k: tr(f"common.{k}") for k in ("coordinate", "value")}
    return names | {k: tr(f"invariance.{k}") for k in keys}


def case_section(lab: InvarianceLab, tr: Translator) -> None:
    """One change up close: the case that moved most, before and after, and why."""
    name = tr(f"invariance.t_{lab.transform}")
    st.subheader(tr("invariance.case_heading", name=name))
    with metric_row():
        for norm in ("rms", "layer"):
            value = fmt.num(lab.residual[norm], noise=TABLE_TOL)
            st.metric(tr(f"invariance.metric_res_{norm}"), value, width=metric_width())
    case = lab.case
    names = labels(tr, "pre", "before", "after")
    columns = {"i": np.arange(case.pre[0].shape[-1])}
    headers = {"i": names["coordinate"]}
    for kind, pair in (("pre", case.pre), ("rms", case.outputs["rms"]),
                       ("layer", case.outputs["layer"])):  # fmt: skip
        for when, values in zip(("before", "after"), pair, strict=True):
            columns[f"{kind}_{when}"] = values
            headers[f"{kind}_{when}"] = f"{names[kind]}, {names[when]}"
    chart(
        readable(before_after_figure(case.pre, case.outputs["rms"], case.outputs["layer"], names)),
        key="before_after",
        title=tr("invariance.before_after_chart"),
        words=tr.chart_words(lab.claims, "before_after"),
        more=" ".join(tr.claim(lab.claims[s]) for s in ("case_intro", "case_rms", "case_layer")),
        table=columns,
        headers=headers,
        file_name="normlab-invariance-case.csv",
    )
    st.markdown(tr.claim(lab.claims[f"why_{lab.transform}"]))
    norm_formulas(tr, RMS_FORMULA, LAYER_FORMULA)


def cell(invariant: bool, residual: float, tr: Translator) -> str:
    """A measured verdict with the residual behind it: ``✓ yes (≈ 0)``, ``✗ no (1.676)``."""
    verdict = tr("invariance.mark_yes" if invariant else "invariance.mark_no")
    return f"{verdict} ({fmt.num(residual, noise=TABLE_TOL)})"


def table_frame(rows: list[InvarianceRow], tr: Translator) -> pd.DataFrame:
    """The table: each norm's measured verdict and residual (RMSNorm first, as on every page),
    and whether both verdicts agree with the paper. Three columns fit a phone."""

    def matches(row: InvarianceRow) -> str:
        if row.matches_paper is None:
            return tr("invariance.not_in_paper")
        return tr("invariance.yes" if row.matches_paper else "invariance.no")

    columns = {
        tr(f"invariance.col_{norm}"): [
            cell(getattr(r, f"{norm}_invariant"), getattr(r, f"{norm}_residual"), tr) for r in rows
        ]
        for norm in ("rms", "layer")
    }
    columns[tr("invariance.col_match")] = [matches(r) for r in rows]
    frame = pd.DataFrame(columns, index=[tr(f"invariance.t_{r.id}") for r in rows])
    frame.index.name = tr("invariance.col_transform")
    return frame


def table_section(lab: InvarianceLab, tr: Translator) -> None:
    st.subheader(tr("invariance.table_heading"))
    st.table(table_frame(lab.rows, tr))
    st.caption(tr.claim(lab.claims["table"]))
    with st.expander(tr("invariance.why_heading")):
        st.markdown(
            "\n".join(
                f"- **{tr(f'invariance.t_{tid}')}**: {tr.claim(lab.claims[f'why_{tid}'])}"
                for tid in TRANSFORMS
            )
        )


def sweep_section(lab: InvarianceLab, tr: Translator) -> None:
    """The shift sweep of one case: cosines with the unshifted output, energy along 1."""
    st.subheader(tr("invariance.sweep_heading"))
    sweep = lab.shift.sweep
    names = labels(tr, "offset", "cosine", "rms_cos", "layer_cos", "energy")
    # The sweep's curves, each with the label that names it.
    curves = {"rms_cosine": "rms_cos", "layer_cosine": "layer_cos"}
    curves["rms_energy_along_ones"] = "energy"
    chart(
        readable(sweep_figure(sweep, names)),
        key="sweep",
        title=tr("invariance.sweep_chart"),
        words=tr.chart_words(lab.claims, "sweep"),
        more=" ".join(tr.claim(lab.claims[s]) for s in ("sweep_layer", "sweep_rms", "sweep_limit")),
        table={"c": sweep["offsets"], **{k: sweep[k] for k in curves}},
        headers={"c": "c", **{k: names[label] for k, label in curves.items()}},
        file_name="normlab-invariance-sweep.csv",
    )


def collapse_section(lab: InvarianceLab, tr: Translator) -> None:
    """How far apart two cases stay, and how much pattern is left, as c grows."""
    s, c = lab.shift, lab.c_max
    st.subheader(tr("invariance.lost_heading", c=c))
    with metric_row():
        for name in ("spread", "dist_rms", "dist_layer"):  # at c_max, and at c = 0 beneath
            st.metric(
                tr(f"invariance.metric_{name}", c=c),
                fmt.num(float(getattr(s, name)[-1])),
                delta=tr("invariance.at_zero", value=s.at_zero[name]),
                delta_color="off",
                delta_arrow="off",
                width=metric_width(),
            )
    fig_labels = labels(tr, "spread", "dist_rms", "dist_layer", "slope")
    fig_labels.update(offset=tr("invariance.offset_axis_log"), amount=tr("invariance.amount_axis"))
    figure = collapse_figure(s.offsets, s.spread, s.dist_rms, s.dist_layer, fig_labels)
    slope = next(tr_.y for tr_ in figure.data if tr_.name == fig_labels["slope"])
    series = {"dist_rms": s.dist_rms, "spread": s.spread, "dist_layer": s.dist_layer}
    chart(
        readable(figure),
        key="collapse",
        title=tr("invariance.collapse_chart"),
        words=tr.chart_words(lab.claims, "collapse"),
        more=tr.claim(lab.claims["collapse"]),
        table={"c": s.offsets, **series, "slope": np.asarray(slope, dtype=float)},
        headers={"c": "c", **{k: fig_labels[k] for k in (*series, "slope")}},
        file_name="normlab-invariance-collapse.csv",
    )
    pair_labels = labels(tr)
    pair_labels["a"] = tr("invariance.case_name", case=CASE_A)
    pair_labels["b"] = tr("invariance.case_name", case=CASE_B)
    pair_labels |= {f"{n}_panel": tr(f"invariance.pair_{n}", c=c) for n in ("rms", "layer")}
    pair_table = {"i": np.arange(s.pair_rms[0].shape[-1])}
    pair_headers = {"i": pair_labels["coordinate"]}
    for kind, pair in (("rms", s.pair_rms), ("layer", s.pair_layer)):
        for case_key, values in zip(("a", "b"), pair, strict=True):
            pair_table[f"{kind}_{case_key}"] = values
            pair_headers[f"{kind}_{case_key}"] = f"{pair_labels[kind]}, {pair_labels[case_key]}"
    chart(
        readable(pair_figure(s.pair_rms, s.pair_layer, pair_labels)),
        key="pair",
        title=tr("invariance.pair_chart"),
        words=tr.chart_words(lab.claims, "pair"),
        more=tr.claim(lab.claims["pair"]),
        table=pair_table,
        headers=pair_headers,
        file_name="normlab-invariance-pair.csv",
    )
    st.markdown(tr("invariance.lost_text"))


def main() -> None:
    tr = translator(begin_page("invariance", PARAMS))
    state = controls(tr)
    lab = compute(state["transform"], state["size"], state["seed"], state["c_max"])
    case_section(lab, tr)
    table_section(lab, tr)
    sweep_section(lab, tr)
    collapse_section(lab, tr)
    code_section(tr, invariance_code(state))
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
