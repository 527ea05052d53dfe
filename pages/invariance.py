"""Invariance lab: Table 1 of the RMSNorm paper, computed live, and what a shift along 1 erases."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from core import LAYER_FORMULA, RMS_FORMULA, layer_norm, rms_norm
from core.invariance import TRANSFORMS, invariance_table, make_setup, shift_sweep
from core.stats import batch_vector_stats
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import ChoiceParam, IntParam, LadderParam, fmt_number
from viz.invariance import before_after_figure, collapse_figure, pair_figure, sweep_figure

# No factor 1 on the ladder: it changes nothing, so every row would read "invariant".
SIZE_LADDER = (0.1, 0.25, 0.5, 2.0, 3.0, 5.0, 10.0)
# Beyond |c| = 1000 the cosine curve is flat to plotting precision; nothing new is shown.
SHIFT_LADDER = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 300.0, 1000.0)
SWEEP_POINTS = 401
# The collapse plot starts at |c| = 0.1, well inside the range where x still dominates.
COLLAPSE_START = 0.1
COLLAPSE_POINTS = 120
# RMSNorm's usual eps (core.norms.DEFAULT_RMS_EPS); the table uses eps = 0 as the paper does.
SWEEP_EPS = 1e-6
# The two cases of the setup whose images the collapse view compares.
CASE_A, CASE_B = 0, 1

PARAMS = (
    ChoiceParam("transform", "weight_matrix_recenter", tuple(TRANSFORMS)),
    LadderParam("size", 2.0, SIZE_LADDER),
    IntParam("seed", 0, 0, 2**31 - 1),
    LadderParam("c_max", 20.0, SHIFT_LADDER),
)
P = {p.key: p for p in PARAMS}
NORM_FUNCS = {"layer": layer_norm, "rms": rms_norm}


def fmt(value: float) -> str:
    """Four significant digits, for prose and tables."""
    return f"{value:.4g}"


def fmt_residual(value: float) -> str:
    """Residuals span 1e-17 to 2: scientific notation keeps both ends readable."""
    return f"{value:.1e}"


@st.cache_data(max_entries=64, show_spinner=False)
def compute_case(transform: str, size: float, seed: int) -> dict:
    """The setup before and after one transform, both norms' outputs, and the full table."""
    before = make_setup(seed=seed)
    # invariance_residual draws the setup and then the transform from one generator seeded
    # with `seed`; advancing a fresh one past the setup's draws gives the same transform here.
    rng = np.random.default_rng(seed)
    rng.standard_normal(before.x.shape)
    rng.standard_normal(before.weight.shape)
    after = TRANSFORMS[transform].apply(before, size, rng)
    a_before, a_after = before.preactivations(), after.preactivations()
    d = a_before.shape[-1]
    outputs, change = {}, {}
    for name, norm in NORM_FUNCS.items():
        y_before, y_after = norm(a_before, eps=0.0), norm(a_after, eps=0.0)
        outputs[name] = (y_before, y_after)
        # Same scale-free measure as core.invariance: row change over sqrt(d).
        change[name] = np.linalg.norm(y_after - y_before, axis=-1) / math.sqrt(d)  # (n, d) -> (n,)
    case = int(np.argmax(change["layer"] + change["rms"]))
    return {
        "case": case,
        "a": (a_before[case], a_after[case]),
        "y": {name: (pair[0][case], pair[1][case]) for name, pair in outputs.items()},
        "case_change": {name: float(change[name][case]) for name in NORM_FUNCS},
        "residual": {name: float(np.max(change[name])) for name in NORM_FUNCS},
        "table": invariance_table(size=size, seed=seed),
    }


@st.cache_data(max_entries=64, show_spinner=False)
def compute_sweep(seed: int, c_max: float) -> dict:
    """Shift sweep of one case, and how two cases merge under RMSNorm as c grows."""
    a = make_setup(seed=seed).preactivations()
    x_a, x_b = a[CASE_A], a[CASE_B]
    offsets = np.linspace(-c_max, c_max, SWEEP_POINTS)
    sweep = shift_sweep(x_a, offsets, eps=SWEEP_EPS)
    cs = np.geomspace(COLLAPSE_START, c_max, COLLAPSE_POINTS)
    shifted_a, shifted_b = x_a + cs[:, None], x_b + cs[:, None]  # (k, d) each
    rms_a, rms_b = rms_norm(shifted_a, eps=SWEEP_EPS), rms_norm(shifted_b, eps=SWEEP_EPS)
    layer_a, layer_b = layer_norm(shifted_a, eps=SWEEP_EPS), layer_norm(shifted_b, eps=SWEEP_EPS)
    spread = np.sqrt(batch_vector_stats(rms_a)["variance"])  # (k, d) -> (k,)
    dist_rms = np.linalg.norm(rms_a - rms_b, axis=-1)  # (k, d) -> (k,)
    dist_layer = np.linalg.norm(layer_a - layer_b, axis=-1)  # (k, d) -> (k,)
    rms_a0, rms_b0 = rms_norm(x_a, eps=SWEEP_EPS), rms_norm(x_b, eps=SWEEP_EPS)
    layer_a0, layer_b0 = layer_norm(x_a, eps=SWEEP_EPS), layer_norm(x_b, eps=SWEEP_EPS)
    at_zero = {
        "spread": float(np.sqrt(batch_vector_stats(rms_a0)["variance"])),
        "dist_rms": float(np.linalg.norm(rms_a0 - rms_b0)),
        "dist_layer": float(np.linalg.norm(layer_a0 - layer_b0)),
    }
    stats_a = batch_vector_stats(x_a)
    return {
        "sweep": sweep,
        "cs": cs,
        "spread": spread,
        "dist_rms": dist_rms,
        "dist_layer": dist_layer,
        "at_zero": at_zero,
        "pair_rms": (rms_a[-1], rms_b[-1]),
        "pair_layer": (layer_a[-1], layer_b[-1]),
        "x_mean": float(stats_a["mean"]),
        "x_std": float(np.sqrt(stats_a["variance"])),
        "x_rms": float(stats_a["rms"]),
    }


def controls(lang: str) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    with st.sidebar:
        st.header(t("common.controls", lang))
        # Option labels are the link's values; the caption names the chosen one in words.
        transform = widgets.choice(P["transform"], t("invariance.transform_label", lang))
        st.caption(
            f"**{t(f'invariance.t_{transform}', lang)}**: {t(f'invariance.desc_{transform}', lang)}"
        )
        widgets.ladder(P["size"], t("invariance.size_label", lang))
        st.caption(t("invariance.size_help", lang))
        widgets.number(P["seed"], t("invariance.seed_label", lang), kind="input", step=1)
        widgets.ladder(P["c_max"], t("invariance.c_max_label", lang))
    return {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}


def mark(value: bool | None, lang: str) -> str:
    if value is None:
        return t("invariance.not_in_paper", lang)
    return "✓" if value else "✗"


def table_frame(rows: list, lang: str) -> pd.DataFrame:
    """The ✓/✗ table: paper, measured residual and verdict for each norm, and the agreement."""

    def matches(row) -> str:
        if row.matches_paper is None:
            return t("invariance.not_in_paper", lang)
        return t("invariance.yes" if row.matches_paper else "invariance.no", lang)

    frame = pd.DataFrame(
        {
            t("invariance.col_paper_layer", lang): [mark(r.paper_layer, lang) for r in rows],
            t("invariance.col_layer", lang): [mark(r.layer_invariant, lang) for r in rows],
            t("invariance.col_res_layer", lang): [fmt_residual(r.layer_residual) for r in rows],
            t("invariance.col_paper_rms", lang): [mark(r.paper_rms, lang) for r in rows],
            t("invariance.col_rms", lang): [mark(r.rms_invariant, lang) for r in rows],
            t("invariance.col_res_rms", lang): [fmt_residual(r.rms_residual) for r in rows],
            t("invariance.col_match", lang): [matches(r) for r in rows],
        },
        index=[t(f"invariance.t_{r.id}", lang) for r in rows],
    )
    frame.index.name = t("invariance.col_transform", lang)
    return frame


def main() -> None:
    lang = begin_page("invariance", PARAMS)
    state = controls(lang)
    transform, size, seed, c_max = state["transform"], state["size"], state["seed"], state["c_max"]
    r = compute_case(transform, size, seed)
    name = t(f"invariance.t_{transform}", lang)
    labels = {
        "rms": t("common.rms_norm", lang),
        "layer": t("common.layer_norm", lang),
        "coordinate": t("common.coordinate", lang),
        "value": t("common.value", lang),
    }

    st.subheader(t("invariance.case_heading", lang, name=name))
    cols = st.columns(2)
    cols[0].metric(t("invariance.metric_res_layer", lang), fmt_residual(r["residual"]["layer"]))
    cols[1].metric(t("invariance.metric_res_rms", lang), fmt_residual(r["residual"]["rms"]))
    numbers = {
        "case": r["case"],
        "name": name,
        "size": fmt_number(size),
        "ch_layer": fmt_residual(r["case_change"]["layer"]),
        "ch_rms": fmt_residual(r["case_change"]["rms"]),
    }
    fig_labels = {
        **labels,
        "pre": t("invariance.panel_pre", lang),
        "before": t("invariance.before", lang),
        "after": t("invariance.after", lang),
    }
    st.plotly_chart(
        before_after_figure(r["a"], r["y"]["layer"], r["y"]["rms"], fig_labels),
        key="before_after",
        alt=t("invariance.before_after_alt", lang, **numbers),
    )
    st.caption(t("invariance.before_after_caption", lang, **numbers))
    st.markdown(t(f"invariance.why_{transform}", lang))
    left, right = st.columns(2)
    left.latex(LAYER_FORMULA)
    right.latex(RMS_FORMULA)

    st.subheader(t("invariance.table_heading", lang))
    rows = r["table"]
    st.table(table_frame(rows, lang))
    in_paper = [row for row in rows if row.matches_paper is not None]
    agree = sum(bool(row.matches_paper) for row in in_paper)
    st.caption(
        t(
            "invariance.table_caption",
            lang,
            agree=agree,
            total=len(in_paper),
            size=fmt_number(size),
            seed=seed,
        )
    )
    with st.expander(t("invariance.why_heading", lang)):
        st.markdown(
            "\n".join(
                f"- **{t(f'invariance.t_{tid}', lang)}**: {t(f'invariance.why_{tid}', lang)}"
                for tid in TRANSFORMS
            )
        )

    st.subheader(t("invariance.sweep_heading", lang))
    s = compute_sweep(seed, c_max)
    sweep = s["sweep"]
    far = {
        "c": fmt_number(c_max),
        "cos_far": fmt(sweep["rms_cosine"][-1]),
        "cos_neg": fmt(sweep["rms_cosine"][0]),
        "energy_far": fmt(sweep["rms_energy_along_ones"][-1]),
        "limit": fmt(abs(s["x_mean"]) / s["x_rms"]),
        "case": CASE_A,
    }
    st.plotly_chart(
        sweep_figure(
            sweep["offsets"],
            sweep["rms_cosine"],
            sweep["layer_cosine"],
            sweep["rms_energy_along_ones"],
            {
                **labels,
                "offset": t("invariance.offset_axis", lang),
                "cosine": t("invariance.cosine_axis", lang),
                "rms_cos": t("invariance.rms_cos", lang),
                "layer_cos": t("invariance.layer_cos", lang),
                "energy": t("invariance.energy", lang),
            },
        ),
        key="sweep",
        alt=t("invariance.sweep_alt", lang, **far),
    )
    st.caption(t("invariance.sweep_caption", lang, **far))

    st.subheader(t("invariance.lost_heading", lang, c=fmt_number(c_max)))
    z = s["at_zero"]
    lost = {
        "c": fmt_number(c_max),
        "a": CASE_A,
        "b": CASE_B,
        "spread0": fmt(z["spread"]),
        "spread": fmt(s["spread"][-1]),
        "dist0": fmt(z["dist_rms"]),
        "dist": fmt(s["dist_rms"][-1]),
        "dist_layer": fmt(s["dist_layer"][-1]),
        "std": fmt(s["x_std"]),
        "bound": fmt(s["x_std"] / c_max),
    }
    cols = st.columns(3)
    cols[0].metric(
        t("invariance.metric_spread", lang, c=lost["c"]),
        lost["spread"],
        delta=t("invariance.at_zero", lang, value=lost["spread0"]),
        delta_color="off",
    )
    cols[1].metric(
        t("invariance.metric_dist_rms", lang, c=lost["c"]),
        lost["dist"],
        delta=t("invariance.at_zero", lang, value=lost["dist0"]),
        delta_color="off",
    )
    cols[2].metric(t("invariance.metric_dist_layer", lang, c=lost["c"]), lost["dist_layer"])
    st.plotly_chart(
        collapse_figure(
            s["cs"],
            s["spread"],
            s["dist_rms"],
            s["dist_layer"],
            {
                "offset": t("invariance.offset_axis_log", lang),
                "amount": t("invariance.amount_axis", lang),
                "spread": t("invariance.spread", lang),
                "dist_rms": t("invariance.dist_rms", lang),
                "dist_layer": t("invariance.dist_layer", lang),
                "slope": t("invariance.slope", lang),
            },
        ),
        key="collapse",
        alt=t("invariance.collapse_alt", lang, **lost),
    )
    st.caption(t("invariance.collapse_caption", lang, **lost))
    st.plotly_chart(
        pair_figure(
            s["pair_rms"],
            s["pair_layer"],
            {
                **labels,
                "a": t("invariance.case_name", lang, case=CASE_A),
                "b": t("invariance.case_name", lang, case=CASE_B),
                "rms_panel": t("invariance.pair_rms", lang, c=lost["c"]),
                "layer_panel": t("invariance.pair_layer", lang, c=lost["c"]),
            },
        ),
        key="pair",
        alt=t("invariance.pair_alt", lang, **lost),
    )
    st.caption(t("invariance.pair_caption", lang, **lost))
    st.markdown(t("invariance.lost_text", lang, **lost))

    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
