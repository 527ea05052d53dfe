"""Attention sandbox: LayerNorm's projection and scaling (Brody, Alon & Yahav, 2023), with
RMSNorm beside it, on a handful of keys and one query."""

from __future__ import annotations

import streamlit as st

from core import LAYER_FORMULA, RMS_FORMULA
from labkit import style
from labs.attention.figures import keys_figure, weights_figure
from labs.attention.key_geometry import MAX_KEYS, MIN_KEYS
from labs.attention.model import (
    CASES,
    LENGTH_LADDER,
    OFFSET_RANGE,
    SCORE_FORMULA,
    SPREAD_RANGE,
    CaseView,
    Sandbox,
    attention_sandbox,
)
from labs.attention.snippet import attention_code
from ui import widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, norm_formulas, presenting, readable, share_box, view_mode
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, FloatParam, IntParam, LadderParam

PARAMS = (
    ChoiceParam("d", "3", ("2", "3")),
    IntParam("n", 7, MIN_KEYS, MAX_KEYS),
    IntParam("seed", 7, 0, 2**31 - 1),
    FloatParam("spread", 1.0, *SPREAD_RANGE, step=0.1),
    FloatParam("offset", 0.0, *OFFSET_RANGE, step=0.5),
    IntParam("angle", 60, -180, 180),
    IntParam("turn", 30, -180, 180),
    LadderParam("length", 3.0, LENGTH_LADDER),
)
P = {p.key: p for p in PARAMS}
COLORS = {"raw": style.INPUT, "rms": style.RMS, "layer": style.LAYER}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(
    d: int, n: int, seed: int, spread: float, offset: float, angle: int, turn: int, length: float
) -> Sandbox:
    """The page's whole state for one link (cached: a link always gives the same numbers)."""
    return attention_sandbox(
        d=d, n=n, seed=seed, spread=spread, offset=offset, angle=angle, turn=turn, length=length
    )


def controls(tr: Translator) -> dict:
    """The sidebar controls; every one is carried by the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        d = widgets.choice(P["d"], tr("attention.d_label"), kind="segmented")
        widgets.number(P["n"], tr("attention.n_label"), step=1)
        widgets.number(P["seed"], tr("attention.seed_label"), kind="input", step=1)
        widgets.number(P["spread"], tr("attention.spread_label"))
        widgets.number(P["offset"], tr("attention.offset_label"))
        st.caption(tr("attention.keys_help"))
        widgets.number(P["angle"], tr("attention.angle_label"), step=1)
        widgets.number(
            P["turn"],
            tr("attention.turn_label"),
            step=1,
            disabled=d != "3",
            help=tr("attention.turn_help"),
        )
        widgets.ladder(P["length"], tr("attention.length_label"))
    state = {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}
    state["d"] = int(state["d"])
    return state


def formulas(tr: Translator) -> None:
    """Attention, then RMSNorm, then LayerNorm, each named."""
    st.subheader(tr("attention.formulas_heading"))
    st.markdown(f"**{tr('attention.formula_attention')}**")
    st.latex(SCORE_FORMULA)
    # Two columns, not three: LayerNorm's formula is wider than a third of a laptop's page.
    norm_formulas(tr, RMS_FORMULA, LAYER_FORMULA)
    st.caption(tr("attention.formula_note"))


def words(box: Sandbox, tr: Translator, slot: str) -> str:
    """A chart's summary, and a count of the values it cannot draw where there are any."""
    slots = (slot, f"{slot}_not_finite")
    return " ".join(tr.claim(box.claims[s]) for s in slots if s in box.claims)


def key_labels(n: int) -> list[str]:
    """k1, k2, …: the keys as the figures and the sentences name them."""
    return [f"k{i + 1}" for i in range(n)]


def _weights(weights, case: str, box: Sandbox, tr: Translator, kind: str) -> None:
    """Bars of the weights under the chosen query (``kind`` "weights") or at the most uniform
    direction ("best"), with their summary and their table."""
    figure = weights_figure(
        weights,
        unselectable=box.cases[case].keyset.unselectable,
        color=COLORS[case],
        labels={"weight": tr("attention.weight_axis"), "key": tr("attention.key_axis")},
        height=320 if view_mode().large_text else 260,
    )
    key = f"{kind}_{case}"
    chart(
        readable(figure),
        key=key,
        title=tr(f"attention.{kind}_chart", case=tr(f"attention.case_{case}")),
        words=words(box, tr, key),
        table={"key": key_labels(box.n), "weight": weights},
        headers={"key": tr("attention.key_axis"), "weight": tr("attention.weight_axis")},
        file_name=f"normlab-attention-{kind}-{case}.csv",
        config=style.chart_config(key),
    )


def keys_table(view: CaseView, tr: Translator) -> tuple[dict, dict[str, str]]:
    """The keys as a table: each key's coordinates, its norm and how it is drawn."""
    ks = view.keyset
    axes = [f"x{chr(0x2081 + j)}" for j in range(ks.keys.shape[1])]  # x₁, x₂, x₃
    marks = [
        tr("attention.unselectable" if i in ks.unselectable else "attention.selectable")
        for i in range(len(ks.keys))
    ]
    table = {"key": key_labels(len(ks.keys)), **dict(zip(axes, ks.keys.T, strict=True))}
    table |= {"norm": ks.norms, "mark": marks}
    headers = {k: tr(f"attention.{k}_column") for k in ("norm", "mark")}
    return table, {"key": tr("attention.key_axis"), **headers}


def keys_section(box: Sandbox, tr: Translator) -> None:
    """The three versions of the keys side by side, attention under the chosen query below."""
    st.subheader(tr("attention.keys_heading"))
    st.caption(tr("attention.marks"))
    for col, case in zip(st.columns(3), CASES, strict=True):
        view = box.cases[case]
        ks = view.keyset
        with col:
            name = tr(f"attention.case_{case}")
            st.markdown(f"**{name}**")
            figure = keys_figure(
                ks.keys,
                hull=ks.hull,
                unselectable=ks.unselectable,
                named=view.named,
                direction=box.direction,
                color=COLORS[case],
                radius=None if case == "raw" else box.d**0.5,
                plane=case != "raw",
                height=480 if view_mode().large_text else 400,
            )
            table, headers = keys_table(view, tr)
            chart(
                readable(figure),
                key=f"keys_{case}",
                title=tr("attention.keys_chart", case=name),
                words=words(box, tr, f"keys_{case}"),
                table=table,
                headers=headers,
                file_name=f"normlab-attention-keys-{case}.csv",
                config=style.chart_config(f"keys_{case}"),
            )
            _weights(view.weights, case, box, tr, "weights")
            slots = ("top", "select", "norms", "plane")
            st.markdown("\n".join(f"- {tr.claim(box.claims[f'{s}_{case}'])}" for s in slots))
    if box.d == 2:
        st.markdown(tr.claim(box.claims["two_points"]))
        st.markdown(tr("attention.explain_d2"))


def uniform_section(box: Sandbox, tr: Translator) -> None:
    """The unit query that makes the scores most equal, for each version of the keys."""
    st.subheader(tr("attention.uniform_heading"))
    st.markdown(tr("attention.explain_uniform"))
    for col, case in zip(st.columns(3), CASES, strict=True):
        best = box.cases[case].keyset.best
        with col:
            st.markdown(f"**{tr(f'attention.case_{case}')}**")
            _weights(best.weights, case, box, tr, "best")
            lines = [tr.claim(box.claims[f"uniform_{case}"])]
            if case == "layer":
                lines.append(tr.claim(box.claims["closed_form"]))
            st.markdown(" ".join(lines))
            st.markdown(tr.claim(box.claims[f"dial_{case}"]))
            if not presenting():
                st.button(
                    tr("attention.use_best"),
                    key=f"use_{case}",
                    # Set before the widgets are drawn: the core's whole degrees
                    # (``BestQuery.dial``), which the sentence above quotes.
                    on_click=st.session_state.update,
                    args=(dict(zip(("angle", "turn"), best.dial, strict=True)),),
                    icon=":material/explore:",
                )


def main() -> None:
    lang = begin_page("attention", PARAMS)
    tr = translator(lang)
    state = controls(tr)
    box = compute(**state)
    if not presenting():
        st.info(tr("attention.first_move"))
    keys_section(box, tr)
    uniform_section(box, tr)
    formulas(tr)
    st.subheader(tr("attention.paper_heading"))
    for key in ("explain_projection", "explain_scaling", "explain_offset", "explain_eps"):
        st.markdown(tr(f"attention.{key}"))
    st.caption(tr("attention.paper_text"))
    code_section(tr, attention_code(state))
    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
