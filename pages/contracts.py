"""Implementation contracts: two RMSNorm presets on the same input and checkpoint, compared."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from core import get_preset, preset_names, torch_available
from core.defaults import DTYPES, MIN_WIDTH
from labs.contracts.figures import contract_figure
from labs.contracts.model import (
    CONTRACT_KEYS,
    DELTA_FORMULA,
    EPS_CHOICES,
    MAX_CONTRACT_WIDTH,
    MISTAKES,
    SCALE_LADDER,
    ContractsView,
    contracts_view,
)
from labs.contracts.snippet import contracts_code
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, breakable, readable, share_box
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, IntParam, LadderParam

# The presets that read a stored weight: the page compares how two implementations read one
# checkpoint (Llama 4's weightless QK norm reads none; the lesson's presets table lists it).
PRESET_NAMES = tuple(n for n in preset_names("rms") if get_preset(n, "rms").has_weight)
HAS_TORCH = torch_available()
MODEL_DTYPES = DTYPES if HAS_TORCH else DTYPES[:2]
RED_CHOICES = ("preset", *MODEL_DTYPES)
SIDES = ("a", "b")
# Settings whose values are words the table translates; the rest are numbers or dtype names.
WORDED = ("eps_placement", "gain_mode", "cast")

# The page opens on a real mistake (Gemma's weights read as a plain gain), so the first view
# shows a difference.
PARAMS = (
    ChoiceParam("a", "gemma", PRESET_NAMES),
    ChoiceParam("b", "llama", PRESET_NAMES),
    ChoiceParam("eps_a", "preset", EPS_CHOICES),
    ChoiceParam("eps_b", "preset", EPS_CHOICES),
    ChoiceParam("red_a", "preset", RED_CHOICES),
    ChoiceParam("red_b", "preset", RED_CHOICES),
    ChoiceParam("checkpoint", "a", SIDES),
    ChoiceParam("dtype", "float32", MODEL_DTYPES),
    IntParam("d", 64, MIN_WIDTH, MAX_CONTRACT_WIDTH),
    IntParam("seed", 0, 0, 2**31 - 1),
    LadderParam("scale", 1.0, SCALE_LADDER),
)
P = {p.key: p for p in PARAMS}


@st.cache_data(max_entries=64, show_spinner=False)
def compute(state: tuple[tuple[str, object], ...]) -> ContractsView:
    return contracts_view(dict(state))


def preset_title(tr: Translator, *, short: bool = False) -> Callable[[str], str]:
    """A preset's name for the reader, one per preset across the pages (the lesson's table).
    ``short``: no class in brackets, for a legend (``Kode PyTorch dari makalah RMSNorm``)."""
    if short:
        return lambda name: tr(f"lesson.preset_{name}").split(" (")[0]
    return lambda name: tr(f"lesson.preset_{name}")


def side_controls(side: str, tr: Translator, state: dict) -> None:
    st.subheader(tr(f"contracts.side_{side}"))
    # Named as in the lesson's presets table; the link carries the preset's name.
    state[side] = widgets.labelled_choice(P[side], tr("contracts.preset_label"), preset_title(tr))
    preset = {"preset": tr("contracts.option_preset")}
    eps_labels = {**preset, **{v: v for v in EPS_CHOICES[1:]}}
    state[f"eps_{side}"] = widgets.labelled_choice(
        P[f"eps_{side}"], tr("contracts.eps_label"), eps_labels.__getitem__
    )
    red_labels = {**preset, **{v: v for v in RED_CHOICES[1:]}}
    state[f"red_{side}"] = widgets.labelled_choice(
        P[f"red_{side}"], tr("contracts.red_label"), red_labels.__getitem__
    )


def controls(tr: Translator) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        state: dict = {}
        for side in SIDES:
            side_controls(side, tr, state)
        st.subheader(tr("contracts.group_checkpoint"))
        writer = state["checkpoint"] = widgets.choice(
            P["checkpoint"], tr("contracts.checkpoint_label"), kind="segmented"
        )
        st.caption(tr(f"contracts.checkpoint_{writer}"))
        state["dtype"] = widgets.choice(P["dtype"], tr("contracts.dtype_label"))
        if not HAS_TORCH:
            st.info(tr("common.torch_missing", options="float16, bfloat16"))
        st.subheader(tr("contracts.group_input"))
        state["d"] = widgets.number(P["d"], tr("contracts.d_label"), kind="input", step=1)
        state["seed"] = widgets.number(P["seed"], tr("contracts.seed_label"), kind="input", step=1)
        state["scale"] = widgets.ladder(P["scale"], tr("contracts.scale_label"))
    return state


def mistake_buttons(tr: Translator) -> None:
    st.markdown(f"**{tr('contracts.mistakes_heading')}**")
    # A row that wraps: each label whole, in either language, on a laptop or a phone.
    with st.container(horizontal=True, gap="small"):
        for name in MISTAKES:
            st.button(
                tr(f"contracts.mistake_{name}"),
                key=f"mistake_{name}",
                # The mistake's settings into the widgets, and so into the link.
                on_click=st.session_state.update,
                args=(MISTAKES[name],),
                disabled=MISTAKES[name].get("dtype", "float32") not in MODEL_DTYPES,
            )


def setting_text(key: str, value: object, tr: Translator) -> str:
    if key == "eps":
        return fmt.num(float(value))
    return tr(f"contracts.value_{value}") if key in WORDED else str(value)


def contract_table(view: ContractsView, state: dict, tr: Translator) -> pd.DataFrame:
    """Each side's resolved contract, one column per side, and whether the two agree."""
    c = view.comparison
    columns = {}
    for side, settings in (("a", c.settings_a), ("b", c.settings_b)):
        preset = get_preset(state[side], "rms")
        values = [setting_text(k, settings[k], tr) for k in CONTRACT_KEYS]
        values += [settings["output_dtype"], breakable(preset.source)]
        values += [tr(f"contracts.note_{preset.name}")]
        columns[tr(f"contracts.side_{side}")] = values
    yes, no = tr("contracts.same_yes"), tr("contracts.same_no")
    columns[tr("contracts.row_same")] = [yes if view.same[k] else no for k in CONTRACT_KEYS]
    columns[tr("contracts.row_same")] += ["", "", ""]
    rows = (*CONTRACT_KEYS, "output_dtype", "source", "note")
    table = pd.DataFrame(columns, index=[tr(f"contracts.row_{k}") for k in rows])
    table.index.name = tr("contracts.row_heading")
    return table


def comparison(view: ContractsView, state: dict, tr: Translator) -> None:
    c = view.comparison
    for key in ("mistake_why", "mistake"):
        if key in view.claims:
            st.info(tr.claim(view.claims[key]))
    # Side by side where they fit, two to a row on a phone.
    with st.container(horizontal=True, gap="small"):
        st.metric(tr("contracts.metric_max"), fmt.num(c.max_abs), width="content")
        st.metric(tr("contracts.metric_rel"), fmt.num(c.relative), width="content")
        st.metric(tr("contracts.metric_dtype"), state["dtype"], width="content")
    short = preset_title(tr, short=True)
    names = {side: short(state[side]) for side in SIDES}
    labels = {side: f"{side.upper()}: {name}" for side, name in names.items()}
    labels |= {"delta": "Δ = y_B − y_A", "delta_title": tr("contracts.delta_title")}
    labels |= {k: tr(f"common.{k}") for k in ("coordinate", "value")}
    labels["outputs"] = tr("contracts.outputs_title", dtype=state["dtype"])
    # The caption's numbers: both sides' names, eps and reduction dtype, and the checkpoint's.
    settings = {"a": c.settings_a, "b": c.settings_b}
    numbers = {**names, "dtype": state["dtype"], "d": state["d"], "writer": view.writer}
    numbers |= {f"eps_{side}": settings[side]["eps"] for side in SIDES}
    numbers |= {f"red_{side}": settings[side]["reduction_dtype"] for side in SIDES}
    numbers |= {"mode": tr(f"contracts.value_{view.gain_mode}"), "w_mean": view.weight_mean}
    chart(
        readable(contract_figure(c.y_a, c.y_b, c.delta, labels)),
        key="contract",
        title=tr("contracts.figure_chart"),
        words=tr.chart_words(view.claims, "figure"),
        more=tr("contracts.figure_caption", **numbers),
        table={"i": np.arange(state["d"]), "a": c.y_a, "b": c.y_b, "delta": c.delta},
        headers={"i": labels["coordinate"], **{k: labels[k] for k in ("a", "b", "delta")}},
        file_name="normlab-contracts.csv",
    )
    st.latex(DELTA_FORMULA)
    if "agreement" in view.claims:
        st.success(tr.claim(view.claims["agreement"]))
    for side, message in c.alerts:
        st.warning(f"{tr(f'contracts.side_{side}')}: {tr.message(message)}")


def contracts(view: ContractsView, state: dict, tr: Translator) -> None:
    st.subheader(tr("contracts.formulas_heading"))
    # One above the other, clauses one per line: the upstream formulas are too wide to share a
    # row, and on a phone too wide for one line.
    for side in SIDES:
        preset = get_preset(state[side], "rms")
        name = tr(f"lesson.preset_{preset.name}")
        title = tr("contracts.side_title", side=tr(f"contracts.side_{side}"), title=name)
        st.markdown(f"**{title}**")
        st.latex(fmt.stacked(preset.formula))
    st.markdown(tr.claim(view.claims["contract"]))
    st.table(contract_table(view, state, tr))


def main() -> None:
    tr = translator(begin_page("contracts", PARAMS))
    state = controls(tr)
    mistake_buttons(tr)
    view = compute(tuple(sorted(state.items())))
    comparison(view, state, tr)
    contracts(view, state, tr)
    code_section(tr, contracts_code(state))
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
