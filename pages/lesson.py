"""Guided lesson: the article's argument in ten steps, each a prediction the numbers then settle."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from core import IDENTITY_FORMULA, LAYER_FORMULA, PRESETS, RMS_FORMULA
from core.lesson import OPTIONS, STEP_IDS, StepResult, lesson_step
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import IntParam, fmt_number
from viz.explorer import coordinates_figure, plane_figure
from viz.lesson import (
    before_after_figure,
    eps_figure,
    gain_figure,
    identity_figure,
    residual_figure,
    sweep_figure,
    ulp_figure,
)

N_STEPS = len(STEP_IDS)
PARAMS = (IntParam("step", 1, 1, N_STEPS),)
P = {p.key: p for p in PARAMS}
# Answers and reveals live in the session under these keys, outside the widgets' own state,
# which Streamlit drops whenever a step (and so its radio) is not on screen.
ANSWERS = "lesson_answers"
REVEALED = "lesson_revealed"


@st.cache_data(max_entries=64, show_spinner=False)
def compute(step_id: str) -> StepResult:
    """The numbers behind one step (cached: every visitor's step k is the same computation)."""
    return lesson_step(step_id)


# float64 rounding leaves about 1e-16 on unit-size numbers; anything below this is rounding and
# reads as 0 rather than as a puzzling -2.776e-17.
ROUNDING = 1e-12


def fmt(value: float) -> str:
    """Four significant digits, for prose and tables; rounding noise shows as 0."""
    return "0" if abs(value) < ROUNDING else f"{value:.4g}"


def _go(step: int) -> None:
    st.session_state["step"] = step


def _remember(step_id: str) -> None:
    st.session_state[ANSWERS][step_id] = st.session_state[f"pick_{step_id}"]


def _reveal(step_id: str) -> None:
    st.session_state[REVEALED][step_id] = True


def sidebar(lang: str) -> int:
    """The step control (bound to the URL) and where the visitor stands on every step."""
    answers, revealed = st.session_state[ANSWERS], st.session_state[REVEALED]
    with st.sidebar:
        st.header(t("common.controls", lang))
        step = widgets.number(P["step"], t("lesson.step_label", lang))
        lines = []
        for k, step_id in enumerate(STEP_IDS, start=1):
            if step_id in revealed:
                right = answers.get(step_id) == compute(step_id).correct
                mark = t("lesson.mark_right" if right else "lesson.mark_wrong", lang)
            else:
                mark = t("lesson.mark_open", lang)
            title = t(f"lesson.{step_id}_title", lang)
            lines.append(f"{k}. {mark} **{title}**" if k == step else f"{k}. {mark} {title}")
        st.markdown("\n".join(lines))
    return step


def labels_for(lang: str) -> dict[str, str]:
    keys = (
        "before",
        "after",
        "var",
        "mean2",
        "rms2",
        "layer_cos",
        "rms_cos",
        "energy",
        "offset",
        "residual",
        "inside",
        "outside",
        "clamp",
        "marked",
        "input_rms",
        "output_rms",
        "ulps",
        "count",
        "meant",
        "loaded",
        "outputs",
    )
    explorer_keys = ("axis_a", "axis_b", "circle", "ray", "x_short")
    return {
        "input": t("common.input", lang),
        "x": "x",
        "rms": t("common.rms_norm", lang),
        "layer": t("common.layer_norm", lang),
        "coordinate": t("common.coordinate", lang),
        "value": t("common.value", lang),
        **{k: t(f"lesson.label_{k}", lang) for k in keys},
        **{k: t(f"explorer.{k}", lang) for k in explorer_keys},
    }


def figure(r: StepResult, labels: dict[str, str], lang: str) -> go.Figure:
    """The figure that answers step ``r.step_id``."""
    a = r.arrays
    if r.step_id == "centre":
        return coordinates_figure(a["x"], a["y_rms"], a["y_layer"], labels)
    if r.step_id == "identity":
        return identity_figure(a["before"], a["after"], labels)
    if r.step_id in ("rescale", "shift"):
        return before_after_figure(a, labels)
    if r.step_id == "sweep":
        return sweep_figure(a, labels)
    if r.step_id == "plane":
        radius = r.numbers["radius"]
        return plane_figure(tuple(a["point"]), tuple(a["rms"]), tuple(a["layer"]), radius, labels)
    if r.step_id == "table":
        names = [t(f"lesson.transform_{row['id']}", lang) for row in r.rows]
        return residual_figure(names, a["rms"], a["layer"], r.numbers["tol"], labels)
    if r.step_id == "eps":
        curves = {p: a[p] for p in ("inside", "outside", "clamp")}
        return eps_figure(a["input_rms"], curves, r.numbers["rms_x"], labels)
    if r.step_id == "precision":
        return ulp_figure(a["ulps"], a["counts"], labels)
    return gain_figure(a["meant"], a["loaded"], labels)


def extras(r: StepResult, lang: str) -> None:
    """Formulas and tables that go with a step's answer."""
    if r.step_id == "centre":
        st.latex(RMS_FORMULA)
        st.latex(LAYER_FORMULA)
    elif r.step_id == "identity":
        n = r.numbers
        st.latex(IDENTITY_FORMULA)
        for when in ("before", "after"):
            st.latex(
                rf"{fmt(n[f'rms2_{when}'])} = {fmt(n[f'var_{when}'])} + {fmt(n[f'mean2_{when}'])}"
            )
    elif r.step_id == "table":
        yes, no = t("lesson.yes", lang), t("lesson.no", lang)

        def mark(value: bool | None) -> str:
            return "" if value is None else (yes if value else no)

        table = pd.DataFrame(
            {
                t("lesson.col_transform", lang): [
                    t(f"lesson.transform_{row['id']}", lang) for row in r.rows
                ],
                t("lesson.col_layer", lang): [mark(row["layer_invariant"]) for row in r.rows],
                t("lesson.col_rms", lang): [mark(row["rms_invariant"]) for row in r.rows],
                t("lesson.col_paper_layer", lang): [mark(row["paper_layer"]) for row in r.rows],
                t("lesson.col_paper_rms", lang): [mark(row["paper_rms"]) for row in r.rows],
            }
        )
        st.table(table.set_index(t("lesson.col_transform", lang)))
        st.caption(t("lesson.table_note", lang, **{k: fmt(v) for k, v in r.numbers.items()}))
    elif r.step_id == "gain":
        presets = [p for p in PRESETS.values() if p.kind == "rms"]
        st.table(
            pd.DataFrame(
                {
                    t("lesson.col_preset", lang): [p.title for p in presets],
                    "eps": [fmt_number(p.eps) if p.eps is not None else "finfo" for p in presets],
                    t("lesson.col_placement", lang): [p.eps_placement for p in presets],
                    t("lesson.col_reduction", lang): [p.reduction_dtype or "x" for p in presets],
                    t("lesson.col_gain", lang): [p.gain_mode for p in presets],
                }
            ).set_index(t("lesson.col_preset", lang))
        )
        st.caption(t("lesson.presets_note", lang))


def step_view(step: int, lang: str) -> None:
    """Question, prediction, reveal, verdict, figure and explanation of one step."""
    step_id = STEP_IDS[step - 1]
    r = compute(step_id)
    numbers = {k: fmt(v) for k, v in r.numbers.items()}
    answers, revealed = st.session_state[ANSWERS], st.session_state[REVEALED]
    title = t(f"lesson.{step_id}_title", lang)
    st.progress(step / N_STEPS, text=t("lesson.progress", lang, k=step, n=N_STEPS, title=title))
    st.subheader(f"{step}. {title}")
    st.markdown(t(f"lesson.{step_id}_question", lang, **numbers))
    options = OPTIONS[step_id]
    chosen = answers.get(step_id)
    is_revealed = step_id in revealed
    # This radio is not bound to the URL, so its labels may be translated; its values are the
    # option letters, which is what the session stores.
    st.radio(
        t("lesson.prediction", lang),
        options,
        index=options.index(chosen) if chosen in options else None,
        format_func=lambda o: f"**{o}** · {t(f'lesson.{step_id}_{o}', lang, **numbers)}",
        key=f"pick_{step_id}",
        on_change=_remember,
        args=(step_id,),
        disabled=is_revealed,
    )
    if not is_revealed:
        st.button(
            t("lesson.reveal", lang),
            key=f"reveal_{step_id}",
            type="primary",
            disabled=chosen is None,
            on_click=_reveal,
            args=(step_id,),
        )
        if chosen is None:
            st.caption(t("lesson.reveal_locked", lang))
        return
    right_text = t(f"lesson.{step_id}_{r.correct}", lang, **numbers)
    if chosen == r.correct:
        st.success(t("lesson.verdict_right", lang, answer=r.correct, text=right_text))
    else:
        st.error(t("lesson.verdict_wrong", lang, chosen=chosen, answer=r.correct, text=right_text))
    labels = labels_for(lang)
    st.plotly_chart(
        figure(r, labels, lang),
        key=f"fig_{step_id}",
        alt=t(f"lesson.{step_id}_alt", lang, **numbers),
    )
    st.caption(t(f"lesson.{step_id}_caption", lang, **numbers))
    st.markdown(t(f"lesson.{step_id}_explain", lang, **numbers))
    extras(r, lang)


def navigation(step: int, lang: str) -> None:
    """Previous and next buttons; they move the URL-bound ``step``."""
    left, middle, right = st.columns([1, 2, 1])
    left.button(
        t("lesson.previous", lang),
        key="previous",
        disabled=step <= 1,
        on_click=_go,
        args=(step - 1,),
        width="stretch",
    )
    answers, revealed = st.session_state[ANSWERS], st.session_state[REVEALED]
    right_count = sum(answers.get(s) == compute(s).correct for s in revealed)
    middle.caption(t("lesson.score", lang, right=right_count, revealed=len(revealed), n=N_STEPS))
    right.button(
        t("lesson.next", lang),
        key="next",
        disabled=step >= N_STEPS,
        on_click=_go,
        args=(step + 1,),
        type="primary",
        width="stretch",
    )
    if step == N_STEPS and len(revealed) == N_STEPS:
        st.info(t("lesson.finished", lang, right=right_count, n=N_STEPS))


def main() -> None:
    lang = begin_page("lesson", PARAMS)
    st.session_state.setdefault(ANSWERS, {})
    st.session_state.setdefault(REVEALED, {})
    step = sidebar(lang)
    step_view(step, lang)
    st.divider()
    navigation(step, lang)
    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
