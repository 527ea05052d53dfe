"""Guided lesson: the article's argument in fourteen steps, each a prediction the numbers settle."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import (
    IDENTITY_FORMULA,
    LAYER_FORMULA,
    LAYER_JACOBIAN_FORMULA,
    PRESETS,
    RMS_FORMULA,
    RMS_JACOBIAN_FORMULA,
)
from labs.lesson import board_section, class_section
from labs.lesson.class_section import Seat
from labs.lesson.example import NOISE
from labs.lesson.model import StepResult, lesson_step
from labs.lesson.options import STEP_IDS
from labs.lesson.progress_section import PROGRESS, keep, read
from labs.lesson.snippet import lesson_code
from labs.lesson.step_figures import FIGURES
from labs.lesson.words import moves
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, norm_formulas, readable_spec, share_box
from ui.i18n import Translator, translator
from ui.params import IntParam, read_link_value

N_STEPS = len(STEP_IDS)
PARAMS = (IntParam("step", 1, 1, N_STEPS), PROGRESS)  # in a class only the step (see main)
P = {p.key: p for p in PARAMS}
# Answers and reveals live in the session under these keys (alone, in the link too), outside
# the widgets' own state, which Streamlit drops whenever a step's radio is not on screen.
ANSWERS = "lesson_answers"
REVEALED = "lesson_revealed"
# Figure labels from the lesson's texts (``lesson.label_<key>``) and the explorer's.
LESSON_LABELS = (
    "before after var mean2 rms2 outputs layer_cos rms_cos energy offset cosine residual inside "
    "outside clamp marked input_rms output_rms ulps count meant loaded coord eps grad_cos moved"
).split()
EXPLORER_LABELS = ("axis_a", "axis_b", "circle", "ray", "x_short")


@st.cache_resource(max_entries=64, show_spinner=False)
def compute(step_id: str) -> StepResult:
    """The numbers behind one step, one read-only object for every visitor's run of step k."""
    return lesson_step(step_id)


@st.cache_resource(max_entries=64, show_spinner=False)
def quoted(step_id: str, lang: str) -> dict[str, str]:
    """The step's numbers as the question and the options quote them: rounding
    noise reads "≈ 0", fractions named ``*_pct`` as percentages."""
    return {
        k: fmt.pct(v, lang=lang) if k.endswith("_pct") else fmt.num(v, noise=NOISE, lang=lang)
        for k, v in compute(step_id).numbers.items()
    }


def _go(step: int) -> None:
    st.session_state["step"] = step


def _reveal(step_id: str) -> None:
    st.session_state[REVEALED][step_id] = True


def mark(step_id: str, tr: Translator) -> str:
    """Where the visitor stands on a step, in words a screen reader reads."""
    if step_id not in st.session_state[REVEALED]:
        return tr("lesson.mark_open")
    chosen = st.session_state[ANSWERS].get(step_id)
    if chosen is None:
        return tr("lesson.mark_seen")
    return tr("lesson.mark_right" if chosen == compute(step_id).correct else "lesson.mark_wrong")


def sidebar(tr: Translator) -> int:
    """The step control (bound to the URL) and where the visitor stands on every step."""
    with st.sidebar:
        st.header(tr("common.controls"))
        step = widgets.number(P["step"], tr("lesson.step_label"))
        st.subheader(tr("lesson.steps_heading"))
        lines = []
        for k, step_id in enumerate(STEP_IDS, start=1):
            title = tr(f"lesson.{step_id}_title")
            lines.append(f"{k}. {f'**{title}**' if k == step else title} — {mark(step_id, tr)}")
        st.markdown("\n".join(lines))
    return step


def labels_for(tr: Translator, r: StepResult) -> dict[str, str]:
    """The names the step's figure and its table give what they draw."""
    lab = {"input": tr("common.input"), "x": "x", "rms": tr("common.rms_norm")}
    lab |= {"layer": tr("common.layer_norm"), "coordinate": tr("common.coordinate")}
    lab["value"] = tr("common.value")
    lab |= {k: tr(f"lesson.label_{k}") for k in LESSON_LABELS}
    lab["neg"] = tr("lesson.label_neg", factor=r.numbers.get("factor", 0.0))
    lab["case"] = tr("lesson.label_case", case=int(r.numbers.get("case", 0)))
    lab |= {k: tr(f"explorer.{k}") for k in EXPLORER_LABELS}
    if r.step_id == "table":
        lab.update({f"transform_{w['id']}": tr(f"lesson.transform_{w['id']}") for w in r.rows})
    if r.step_id == "residual":
        lab.update(
            rms=tr("residual.rms_trunk"),
            layer=tr("residual.layer_trunk"),
            layer_axis=tr("residual.layer_axis"),
            input_cos_ones=tr("residual.p_input_cos_ones"),
            token_cosine=tr("residual.p_token_cosine"),
        )
    return lab


# A table column: its machine name (the CSV's header), the header the reader sees, its values.
Column = tuple[str, str, object]


def _outputs_columns(a: dict, lab: dict[str, str], changes: dict[str, str]) -> list[Column]:
    """Each norm's output for x, then for each change (``changes``: its prefix in ``a`` and its
    name) the output after it and how far it moved (``|after - before|``)."""
    columns: list[Column] = []
    for norm in ("rms", "layer"):
        before = next(a[f"{p}{norm}_before"] for p in changes)
        columns.append((f"{norm}_before", f"{lab[norm]}: {lab['before']}", before))
        for prefix, name in changes.items():
            after = f"{lab[norm]}: {lab['after']}{name}"
            columns.append((f"{prefix}{norm}_after", after, a[f"{prefix}{norm}_after"]))
            moved = f"{lab[norm]}: {lab['moved']}{name}"
            columns.append((f"{prefix}{norm}_moved", moved, moves(a, norm, prefix)))
    return columns


def data_columns(r: StepResult, lab: dict[str, str], tr: Translator) -> list[Column]:
    """The step's figure as a table, every value it draws (the residual step: the two panels)."""
    a, step_id = r.arrays, r.step_id
    coordinates = ("i", lab["coordinate"], np.arange(next(iter(a.values())).shape[-1]))
    norms = [(n, lab[n], a.get(n)) for n in ("rms", "layer")]  # where the step has them
    if step_id == "centre":
        return [coordinates, ("x", "x", a["x"]), ("rms", lab["rms"], a["y_rms"]),
                ("layer", lab["layer"], a["y_layer"])]  # fmt: skip
    if step_id == "identity":
        when = ("when", tr("lesson.col_when"), [lab["before"], lab["after"]])
        parts = ((1, "var"), (2, "mean2"), (0, "rms2"))  # second_moment_identity's order
        return [when, *((q, lab[q], [a["before"][i], a["after"][i]]) for i, q in parts)]
    if step_id in ("rescale", "shift", "recenter"):
        return [coordinates, *_outputs_columns(a, lab, {"": ""})]
    if step_id == "scales":
        changes = {"neg_": f", {lab['neg']}", "coord_": f", {lab['coord']}"}
        return [coordinates, ("s", "s", a["s"]), *_outputs_columns(a, lab, changes)]
    if step_id == "sweep":
        names = {"rms_cosine": "rms_cos", "layer_cosine": "layer_cos"}
        names["rms_energy_along_ones"] = "energy"
        return [("c", "c", a["offsets"]), *((k, lab[v], a[k]) for k, v in names.items())]
    if step_id == "plane":
        points = [lab[k] for k in ("x", "rms", "layer")]
        drawn = [a[k] for k in ("point", "rms", "layer")]
        axes = [(axis, axis, [float(p[i]) for p in drawn]) for i, axis in enumerate("ab")]
        return [("point", tr("charts.point"), points), *axes]
    if step_id == "table":
        names = [lab[f"transform_{row['id']}"] for row in r.rows]
        return [("transform", tr("lesson.col_transform"), names), *norms]
    if step_id == "eps":
        curves = [(p, lab[p], a[p]) for p in ("inside", "outside", "clamp")]
        return [("input_rms", lab["input_rms"], a["input_rms"]), *curves]
    if step_id == "precision":
        return [("ulps", "ulp", a["ulps"]), ("count", lab["count"], a["counts"])]
    if step_id == "gradient":
        keep = a["eps"] > 0  # as drawn: a log axis has no place for eps = 0
        return [("eps", "eps", a["eps"][keep]), *((k, h, v[keep]) for k, h, v in norms)]
    if step_id == "residual":
        readings = [
            (f"{q}_{n}", f"{lab[q]}, {lab[n]}", a[f"{n}_readings"][q])
            for q in ("input_cos_ones", "token_cosine")
            for n in ("rms", "layer")
        ]
        return [("l", "l", a["layers"]), *readings]
    return [coordinates, *((k, lab[k], a[k]) for k in ("meant", "loaded"))]


def figure_chart(r: StepResult, tr: Translator) -> None:
    """The figure that answers step ``r.step_id``, with its summary, caption and Data table."""
    lab = labels_for(tr, r)
    columns = data_columns(r, lab, tr)
    # The summary: its words (the residual step: both panels'), then any count of values the
    # figure cannot draw.
    slots = sorted((s for s in r.claims if s.startswith("figure_")), key=lambda s: "words" not in s)
    chart(
        readable_spec(("lesson", r.step_id, *lab.values()), lambda: FIGURES[r.step_id](r, lab)),
        key=f"fig_{r.step_id}",
        title=tr(f"lesson.{r.step_id}_chart"),
        words=" ".join(tr.claim(r.claims[s]) for s in slots),
        more=tr.claim(r.claims["caption"]),
        table={name: values for name, _, values in columns},
        headers={name: header for name, header, _ in columns},
        lang=tr.lang,
        file_name=f"normlab-lesson-{r.step_id}.csv",
    )


def invariance_table(r: StepResult, tr: Translator) -> None:
    """Measured and published verdicts of every transformation, RMSNorm's columns first."""
    marks = {None: "—", True: tr("lesson.yes"), False: tr("lesson.no")}
    columns = {
        tr(f"lesson.col_{column}"): [marks[row[key]] for row in r.rows]
        for norm in ("rms", "layer")
        for column, key in ((norm, f"{norm}_invariant"), (f"paper_{norm}", f"paper_{norm}"))
    }
    index = [tr(f"lesson.transform_{row['id']}") for row in r.rows]
    frame = pd.DataFrame(columns, index=index)
    frame.index.name = tr("lesson.col_transform")
    st.table(frame)
    numbers = {k: r.numbers[k] for k in ("cases", "inputs", "units", "tol")}
    st.caption(tr("lesson.table_note", **numbers))


def presets_table(tr: Translator) -> None:
    """The contract of each RMSNorm preset, its values in words."""
    presets = [p for p in PRESETS.values() if p.kind == "rms"]
    cells = {"eps": lambda p: tr("lesson.eps_finfo") if p.eps is None else fmt.num(p.eps)}
    cells["placement"] = lambda p: tr(f"lesson.placement_{p.eps_placement}")
    cells["reduction"] = lambda p: p.reduction_dtype or tr("lesson.reduction_input")
    cells["gain"] = lambda p: tr(f"lesson.gain_{p.gain_mode}")
    columns = {tr(f"lesson.col_{k}"): [cell(p) for p in presets] for k, cell in cells.items()}
    frame = pd.DataFrame(columns, index=[tr(f"lesson.preset_{p.name}") for p in presets])
    frame.index.name = tr("lesson.col_preset")
    st.table(frame)
    st.caption(tr("lesson.presets_note"))


def extras(r: StepResult, tr: Translator) -> None:
    """Formulas and tables that go with a step's answer."""
    if r.step_id == "centre":
        norm_formulas(tr, RMS_FORMULA, LAYER_FORMULA)
    elif r.step_id == "identity":
        st.latex(IDENTITY_FORMULA)
        for when in ("before", "after"):
            terms = (fmt.tex(r.numbers[f"{q}_{when}"]) for q in ("rms2", "var", "mean2"))
            st.latex("{} = {} + {}".format(*terms))
    elif r.step_id == "table":
        invariance_table(r, tr)
    elif r.step_id == "gradient":
        norm_formulas(tr, RMS_JACOBIAN_FORMULA, LAYER_JACOBIAN_FORMULA, side_by_side=False)
    elif r.step_id == "gain":
        presets_table(tr)


def option_label(r: StepResult, option: str, tr: Translator) -> str:
    """An option as the reader sees it: its letter, then its statement."""
    words = tr(f"lesson.{r.step_id}_{option}", **quoted(r.step_id, tr.lang))
    return f"**{r.letter(option)}** · {words}"


def prediction(step_id: str, r: StepResult, tr: Translator, seat: Seat | None) -> str | None:
    """The options as a radio (locked once revealed, or while the class's vote is closed);
    returns the visitor's pick, which the session keeps. The teacher and the board never pick:
    they show the options as text, readable from the back of a room."""
    options = r.options
    if seat is not None and not seat.student:
        st.markdown("\n".join(f"- {option_label(r, o, tr)}" for o in options))
        return None
    chosen, key = st.session_state[ANSWERS].get(step_id), f"pick_{step_id}"
    index = options.index(chosen) if chosen in options and not class_section.set_here(key) else None
    # Not bound to the URL, so its labels may be translated; its values are the option ids, shown
    # in the step's fixed order under the letters A, B, ... (the class may set its value).
    picked = st.radio(
        tr("lesson.prediction"),
        options,
        index=index,
        format_func=lambda o: option_label(r, o, tr),
        key=key,
        disabled=class_section.closed(seat, step_id) or step_id in st.session_state[REVEALED],
    )
    if picked is not None:
        st.session_state[ANSWERS][step_id] = chosen = picked
    return chosen


def verdict(r: StepResult, chosen: str | None, tr: Translator) -> None:
    """Right or not, the answer the numbers give, with the option's words (just the answer
    where a class's reveal came before a prediction)."""
    answer = tr.claim(r.claims["answer"])
    if r.correct is not None:
        answer += f"\n\n{option_label(r, r.correct, tr)}"
    if chosen is None:
        st.info(answer)
    elif chosen == r.correct:
        st.success(f"{tr('lesson.verdict_right')} {answer}")
    else:
        st.error(f"{tr('lesson.verdict_wrong', chosen=r.letter(chosen))} {answer}")


def step_view(step: int, tr: Translator, seat: Seat | None = None) -> None:
    """Question, prediction, reveal, verdict, figure and explanation of one step; in a class
    (``seat``) the answer goes to the class and the reveal is the teacher's."""
    step_id = STEP_IDS[step - 1]
    r = compute(step_id)
    title = tr(f"lesson.{step_id}_title")
    st.progress(step / N_STEPS, text=tr("lesson.progress", k=step, n=N_STEPS, title=title))
    st.subheader(f"{step}. {title}")
    st.markdown(tr(f"lesson.{step_id}_question", **quoted(step_id, tr.lang)))
    chosen = prediction(step_id, r, tr, seat)
    class_section.send(seat, st.session_state[ANSWERS])
    class_section.answer_status(seat, step, st.session_state[ANSWERS], tr)
    answer = option_label(r, r.correct, tr) if r.correct is not None else None
    board_section.board_live(seat, step, (r.correct, answer), tr)
    if step_id not in st.session_state[REVEALED]:
        if seat is not None:  # in a class only the teacher reveals
            if seat.student:
                st.caption(tr("classroom.wait_reveal"))
            return
        st.button(
            tr("lesson.reveal"),
            key=f"reveal_{step_id}",
            type="primary",
            disabled=chosen is None,
            on_click=_reveal,
            args=(step_id,),
        )
        if chosen is None:
            st.caption(tr("lesson.reveal_locked"))
        return
    verdict(r, chosen, tr)
    board_section.class_result(seat, step, tr, r.correct)
    figure_chart(r, tr)
    for slot in ("explain", "detail"):
        if slot in r.claims:
            st.markdown(tr.claim(r.claims[slot]))
    extras(r, tr)
    code_section(tr, lesson_code(step_id))


def navigation(step: int, tr: Translator, seat: Seat | None = None) -> None:
    """Previous and next buttons; they move the URL-bound ``step``. "Next" is the primary
    button only once this step is revealed: until then the primary move is "Reveal". A page that
    follows the class (a following student's, the board) has no moves of its own."""
    left, middle, right = st.columns([1, 2, 1])
    follows = (
        seat is not None and not seat.teacher and (not seat.student or class_section.following())
    )
    left.button(
        tr("lesson.previous"),
        key="previous",
        disabled=step <= 1 or follows,
        on_click=_go,
        args=(step - 1,),
        width="stretch",
    )
    answers, revealed = st.session_state[ANSWERS], st.session_state[REVEALED]
    right_count = sum(answers.get(s) == compute(s).correct for s in revealed)
    if seat is not None and not seat.student:  # the teacher and the board predict nothing
        middle.caption(tr("lesson.score_class", revealed=len(revealed), n=N_STEPS))
    else:
        middle.caption(tr("lesson.score", right=right_count, revealed=len(revealed), n=N_STEPS))
    right.button(
        tr("lesson.next"),
        key="next",
        disabled=step >= N_STEPS or follows,
        on_click=_go,
        args=(step + 1,),
        type="primary" if STEP_IDS[step - 1] in revealed else "secondary",
        width="stretch",
    )
    if step == N_STEPS and len(revealed) == N_STEPS and (seat is None or seat.student):
        st.info(tr("lesson.finished", right=right_count, n=N_STEPS))


def main() -> None:
    in_class = class_section.CLASS_KEY in st.query_params
    params = PARAMS[:1] if in_class else PARAMS
    tr = translator(begin_page("lesson", params, intro="" if in_class else None))
    if any(n.key == PROGRESS.key for n in st.session_state.get("_notices_lesson", ())):
        st.caption(tr("lesson.progress_link"))
    if ANSWERS not in st.session_state:  # a new session: a reload or a link
        link = PROGRESS.default if in_class else read_link_value(PROGRESS)[0]
        st.session_state[ANSWERS], st.session_state[REVEALED] = read(link)
    seat = class_section.open_class(tr)
    if in_class:  # the class's intro where the link opened one, else the lesson's own
        st.markdown(tr("classroom.intro" if seat is not None else "lesson.intro"))
    class_section.sync(seat, st.session_state[REVEALED], st.session_state[ANSWERS])
    step = sidebar(tr)
    class_section.lead(seat, step)
    r = compute(STEP_IDS[step - 1])
    answer = option_label(r, r.correct, tr) if r.correct is not None else None
    if seat is not None and seat.student:
        class_section.student_panel(seat, step, tr)
    elif seat is not None and seat.teacher:
        board_section.teacher_panel(seat, step, (r.correct, answer), tr)
    if seat is not None and not seat.teacher and not seat.student:
        with board_section.board_panel(seat, tr):  # the board: the QR code beside the step
            step_view(step, tr, seat)
    else:
        step_view(step, tr, seat)
    st.divider()
    navigation(step, tr, seat)
    keep(st.session_state[ANSWERS], st.session_state[REVEALED], solo=not in_class)
    # In a class the link shared is a student's: the code, never the teacher's key.
    share_box(params, tr.lang, {class_section.CLASS_KEY: seat.code} if seat else None)


if __name__ == "__main__":
    main()
