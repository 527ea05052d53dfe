"""Implementation contracts: two RMSNorm presets on the same input and checkpoint, compared."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import get_preset, preset_names, torch_available
from core.contracts import (
    DELTA_FORMULA,
    Comparison,
    Side,
    compare_sides,
    effective_gain,
    stored_weight,
)
from core.inputs import MIN_WIDTH, make_input
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import ChoiceParam, IntParam, LadderParam, fmt_number
from viz.contracts import contract_figure

# Wide enough for real hidden sizes; one comparison is two norms of one vector.
MAX_CONTRACT_WIDTH = 4096
PRESET_NAMES = tuple(preset_names("rms"))
HAS_TORCH = torch_available()
DTYPES = ("float64", "float32", "float16", "bfloat16") if HAS_TORCH else ("float64", "float32")
# "preset" keeps the preset's own value; the others override it (the link carries the label).
EPS_CHOICES = ("preset", "0", "1e-12", "1e-8", "1e-6", "1e-5", "1e-4", "1e-3")
RED_CHOICES = ("preset", *DTYPES)
SCALE_LADDER = (1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
SIDES = ("a", "b")

PARAMS = (
    ChoiceParam("a", "llama", PRESET_NAMES),
    ChoiceParam("b", "olmo2", PRESET_NAMES),
    ChoiceParam("eps_a", "preset", EPS_CHOICES),
    ChoiceParam("eps_b", "preset", EPS_CHOICES),
    ChoiceParam("red_a", "preset", RED_CHOICES),
    ChoiceParam("red_b", "preset", RED_CHOICES),
    ChoiceParam("checkpoint", "a", SIDES),
    ChoiceParam("dtype", "float32", DTYPES),
    IntParam("d", 64, MIN_WIDTH, MAX_CONTRACT_WIDTH),
    IntParam("seed", 0, 0, 2**31 - 1),
    LadderParam("scale", 1.0, SCALE_LADDER),
)
P = {p.key: p for p in PARAMS}
_PLAIN = {
    "eps_a": "preset",
    "eps_b": "preset",
    "red_a": "preset",
    "red_b": "preset",
    "checkpoint": "a",
}
# Three real checkpoint mistakes, each as the settings that reproduce it.
MISTAKES = {
    # Gemma stores w with gain 1 + w (initialised to 0); a Llama-style loader uses w itself.
    "gemma_gain": {**_PLAIN, "a": "gemma", "b": "llama", "scale": 1.0},
    # Llama 2 was trained with rms_norm_eps 1e-5; Llama 1's config says 1e-6. The difference
    # shows where activations are small, as they are right after the embedding.
    "eps": {**_PLAIN, "a": "llama", "b": "llama", "eps_a": "1e-5", "eps_b": "1e-6", "scale": 0.01},
    # A hand-rolled norm that forgets the float32 upcast on a bfloat16 model.
    "bf16": {
        **_PLAIN,
        "a": "llama",
        "b": "llama",
        "red_b": "bfloat16",
        "dtype": "bfloat16",
        "scale": 1.0,
    },
}


def _override(value: str) -> float | None:
    return None if value == "preset" else float(value)


@st.cache_data(max_entries=64, show_spinner=False)
def compute(
    a: str,
    b: str,
    eps_a: str,
    eps_b: str,
    red_a: str,
    red_b: str,
    checkpoint: str,
    dtype: str,
    d: int,
    seed: int,
    scale: float,
) -> dict:
    """Both sides on the same seeded input and checkpoint (cached per setting)."""
    x = make_input(d, dist="normal", seed=seed, scale=scale)
    writer = get_preset(a if checkpoint == "a" else b, "rms")
    weight = stored_weight(effective_gain(d, seed=seed), writer.gain_mode)
    side_a = Side(a, _override(eps_a), None if red_a == "preset" else red_a)
    side_b = Side(b, _override(eps_b), None if red_b == "preset" else red_b)
    c = compare_sides(x, weight, side_a, side_b, dtype=dtype)
    return {"cmp": c, "weight_mean": float(np.mean(weight)), "writer": writer.gain_mode}


def apply_mistake(name: str) -> None:
    """Button callback: put the mistake's settings into the bound widgets (and so the link)."""
    st.session_state.update(MISTAKES[name])


def active_mistake(state: dict) -> str | None:
    for name, settings in MISTAKES.items():
        if all(state[k] == v for k, v in settings.items()):
            return name
    return None


def side_controls(side: str, lang: str, state: dict) -> None:
    st.subheader(t(f"contracts.side_{side}", lang))
    name = state[side] = widgets.choice(P[side], t("contracts.preset_label", lang))
    st.caption(get_preset(name, "rms").title)
    state[f"eps_{side}"] = widgets.choice(
        P[f"eps_{side}"], t("contracts.eps_label", lang), help=t("contracts.eps_help", lang)
    )
    state[f"red_{side}"] = widgets.choice(
        P[f"red_{side}"], t("contracts.red_label", lang), help=t("contracts.red_help", lang)
    )


def controls(lang: str) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    with st.sidebar:
        st.header(t("common.controls", lang))
        state: dict = {}
        for side in SIDES:
            side_controls(side, lang, state)
        st.subheader(t("contracts.group_checkpoint", lang))
        writer = state["checkpoint"] = widgets.choice(
            P["checkpoint"], t("contracts.checkpoint_label", lang), kind="segmented"
        )
        st.caption(t(f"contracts.checkpoint_{writer}", lang))
        state["dtype"] = widgets.choice(P["dtype"], t("contracts.dtype_label", lang))
        if not HAS_TORCH:
            st.info(t("common.torch_missing", lang, options="float16, bfloat16"))
        st.subheader(t("contracts.group_input", lang))
        state["d"] = widgets.number(P["d"], t("contracts.d_label", lang), kind="input", step=1)
        state["seed"] = widgets.number(
            P["seed"], t("contracts.seed_label", lang), kind="input", step=1
        )
        state["scale"] = widgets.ladder(P["scale"], t("contracts.scale_label", lang))
    return state


def fmt(value: float) -> str:
    """Four significant digits, for prose and tables."""
    return f"{value:.4g}"


def contract_table(c: Comparison, state: dict, lang: str) -> pd.DataFrame:
    """Each side's resolved contract, one column per side."""
    rows = ("eps", "eps_placement", "reduction_dtype", "gain_mode", "cast", "output_dtype")
    columns = {}
    for side, settings in (("a", c.settings_a), ("b", c.settings_b)):
        preset = get_preset(state[side], "rms")
        values = [fmt_number(settings["eps"])] + [str(settings[k]) for k in rows[1:]]
        values += [preset.source, t(f"contracts.note_{preset.name}", lang)]
        columns[t(f"contracts.side_{side}", lang)] = values
    index = [t(f"contracts.row_{k}", lang) for k in (*rows, "source", "note")]
    table = pd.DataFrame(columns, index=index)
    table.index.name = t("contracts.row_heading", lang)
    return table


def main() -> None:
    lang = begin_page("contracts", PARAMS)
    state = controls(lang)

    st.markdown(f"**{t('contracts.mistakes_heading', lang)}**")
    cols = st.columns(len(MISTAKES))
    for col, name in zip(cols, MISTAKES, strict=True):
        needs_torch = MISTAKES[name].get("dtype", "float32") not in DTYPES
        col.button(
            t(f"contracts.mistake_{name}", lang),
            key=f"mistake_{name}",
            on_click=apply_mistake,
            args=(name,),
            disabled=needs_torch,
            width="stretch",
        )

    r = compute(
        *(
            state[k]
            for k in (
                "a",
                "b",
                "eps_a",
                "eps_b",
                "red_a",
                "red_b",
                "checkpoint",
                "dtype",
                "d",
                "seed",
                "scale",
            )
        )
    )
    c = r["cmp"]
    a, b = get_preset(state["a"], "rms"), get_preset(state["b"], "rms")
    numbers = {
        "a": a.name,
        "b": b.name,
        "dtype": state["dtype"],
        "d": state["d"],
        "max_abs": fmt(c.max_abs),
        "relative": fmt(c.relative),
        "writer": state[state["checkpoint"]],
        "mode": r["writer"],
        "w_mean": fmt(r["weight_mean"]),
        "eps_a": fmt_number(c.settings_a["eps"]),
        "eps_b": fmt_number(c.settings_b["eps"]),
        "red_a": c.settings_a["reduction_dtype"],
        "red_b": c.settings_b["reduction_dtype"],
        "scale": fmt_number(state["scale"]),
    }
    mistake = active_mistake(state)
    if mistake is not None:
        st.info(t(f"contracts.explain_{mistake}", lang, **numbers))

    m1, m2, m3 = st.columns(3)
    m1.metric(t("contracts.metric_max", lang), fmt(c.max_abs))
    m2.metric(t("contracts.metric_rel", lang), fmt(c.relative))
    m3.metric(t("contracts.metric_dtype", lang), state["dtype"])

    labels = {
        "a": f"A: {a.name}",
        "b": f"B: {b.name}",
        "delta": "Δ = y_B − y_A",
        "outputs": t("contracts.outputs_title", lang, dtype=state["dtype"]),
        "delta_title": t("contracts.delta_title", lang),
        "coordinate": t("common.coordinate", lang),
        "value": t("common.value", lang),
    }
    st.plotly_chart(
        contract_figure(c.y_a, c.y_b, c.delta, labels),
        key="contract",
        alt=t("contracts.figure_alt", lang, **numbers),
    )
    st.caption(t("contracts.figure_caption", lang, **numbers))
    st.latex(DELTA_FORMULA)
    if c.max_abs == 0:
        st.success(t("contracts.identical", lang, **numbers))
    for alert in c.alerts:
        st.warning(alert)

    st.subheader(t("contracts.formulas_heading", lang))
    # One above the other: the upstream formulas are too wide to share a row.
    for side, preset in (("a", a), ("b", b)):
        st.markdown(f"**{t(f'contracts.side_{side}', lang)}: {preset.title}**")
        st.latex(preset.formula)
    st.table(contract_table(c, state, lang))

    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
