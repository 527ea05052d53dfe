"""The solo lesson's progress, kept in its link: ``progress=cB------------``, one character per
step in step order: ``-`` no prediction, the predicted option's letter in lower case (``c``), in
capitals once the step is revealed (``B``). A reload, a bookmark or the link itself brings the
predictions and reveals back. A class keeps its answers in the class store and its seat in a
cookie instead (``labs.lesson.class_section``): there the link carries no progress."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from labs.lesson.options import LETTERS, OPTIONS, STEP_IDS, letter
from ui.params import Param, Problem

OPEN = "-"
# What each step's character may be: "-", or one of its options' letters in either case.
ALLOWED = {s: OPEN + LETTERS[: len(o)].lower() + LETTERS[: len(o)] for s, o in OPTIONS.items()}


@dataclass(frozen=True)
class ProgressParam(Param):
    """One character per step; a character a step does not allow becomes "-", with a notice."""

    def parse(self, raw: str) -> tuple[object, Problem | None]:
        padded = zip(STEP_IDS, raw.ljust(len(STEP_IDS), OPEN), strict=False)
        kept = "".join(c if c in ALLOWED[s] else OPEN for s, c in padded)
        fields = {"allowed": "`-`, `a`–`d`, `A`–`D`", "value": f"`{kept}`"}
        return kept, None if kept == raw else Problem("unknown_choice", fields)


PROGRESS = ProgressParam("progress", OPEN * len(STEP_IDS))


def read(text: str) -> tuple[dict[str, str], dict[str, bool]]:
    """The predictions (step id -> option id) and reveals a checked ``progress`` value holds."""
    marked = [(s, c) for s, c in zip(STEP_IDS, text, strict=True) if c != OPEN]
    answers = {s: OPTIONS[s][LETTERS.index(c.upper())] for s, c in marked}
    return answers, {s: True for s, c in marked if c.isupper()}


def keep(answers: dict[str, str | None], revealed: dict[str, bool], *, solo: bool) -> None:
    """Write the progress into the link and for the share box (none in a class, or unstarted)."""
    text = "".join(
        OPEN if not solo or answers.get(s) not in OPTIONS[s]
        else letter(s, answers[s]) if s in revealed else letter(s, answers[s]).lower()
        for s in STEP_IDS
    )  # fmt: skip
    st.session_state[PROGRESS.key] = text
    if text == PROGRESS.default:
        st.query_params.pop(PROGRESS.key, None)
    elif st.query_params.get(PROGRESS.key) != text:
        st.query_params[PROGRESS.key] = text
