"""Widgets bound to the URL, drawn from the page's ``Param`` declarations.

The link parameter and its widget share one declaration: key, default and bounds come from
the ``Param``, so the range a link may carry and the range a slider offers cannot drift apart.
Every widget here uses ``bind="query-params"`` with the parameter's key as the URL name."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Literal

import streamlit as st

from core.inputs import VectorParseError, link_vector, other_reading, parse_vector
from ui import fmt
from ui.frame import presenting
from ui.i18n import translator
from ui.params import (
    BoolParam,
    ChoiceParam,
    FloatParam,
    IntParam,
    LadderParam,
    Param,
    TextParam,
    read_link_value,
)
from ui.st_private import widget_value_pending

BIND = "query-params"


def number(
    param: IntParam | FloatParam,
    label: str,
    *,
    kind: Literal["slider", "input"] = "slider",
    step: float | None = None,
    **kwargs: Any,
) -> Any:
    """A slider (or a number box, for wide integer ranges such as seeds) over the param's range.
    A stepped ``FloatParam`` gets :func:`stepped`, which writes numbers in the page's language."""
    if isinstance(param, FloatParam) and param.step and kind == "slider":
        return stepped(param, label, **kwargs)
    widget = st.slider if kind == "slider" else st.number_input
    return widget(
        label,
        min_value=param.lo,
        max_value=param.hi,
        value=param.default,
        step=step,
        key=param.key,
        bind=BIND,
        **kwargs,
    )


def stepped(param: FloatParam, label: str, **kwargs: Any) -> float:
    """A slider over the param's stops whose numbers are written in the page's language
    (``-0,3`` in Indonesian; st.slider writes ``-0.30`` in every language), with the step's
    decimals; the URL carries ``fmt.link`` of the value (``-0.3``). Unbound, as :func:`ladder`."""
    lang = fmt.current_language()
    _from_link(param)
    # A value set elsewhere (a saved view, a button) may lie between two stops: the nearest.
    current = st.session_state.get(param.key)
    if current is not None and param.nearest(float(current)) != current:
        st.session_state[param.key] = param.nearest(float(current))
    _renamed_options(param.key, lang)
    names = _stop_names(param, lang)
    value = st.select_slider(
        label, options=param.stops(), format_func=names.__getitem__, key=param.key, **kwargs
    )
    _to_link(param, value)
    return value


def _renamed_options(key: str, lang: str) -> None:
    """A select slider names its options in the page's language, and the browser sends back
    the name of the one it holds: after a language switch that name (``0.3``) is none of the new
    ones (``0,3``), and the browser would show the first option while the page used the value.
    Setting the value again makes the server send it in its new name."""
    drawn_in = f"_{key}_lang"
    if st.session_state.get(drawn_in, lang) != lang and key in st.session_state:
        st.session_state[key] = st.session_state[key]
    st.session_state[drawn_in] = lang


@functools.cache
def _stop_names(param: FloatParam, lang: str) -> dict[float, str]:
    return {v: fmt.localise(f"{v:.{param.decimals}f}", lang) for v in param.stops()}


def ladder(param: LadderParam, label: str, **kwargs: Any) -> Any:
    """A select slider over the param's ladder, its labels in the page's language (``0,25`` in
    Indonesian), while the URL carries ``fmt.link`` of the value (``0.25``) in every language.

    A bound widget writes its label to the URL, so this one is not bound: like
    :func:`labelled_choice`, it takes its first value from the link and writes it back."""
    lang = fmt.current_language()
    _from_link(param)
    _renamed_options(param.key, lang)
    value = st.select_slider(
        label,
        options=param.options,
        format_func=lambda v: fmt.localise(fmt.link(v), lang),
        key=param.key,
        **kwargs,
    )
    _to_link(param, value)
    return value


def choice(
    param: ChoiceParam,
    label: str,
    *,
    kind: Literal["selectbox", "segmented", "radio"] = "selectbox",
    **kwargs: Any,
) -> Any:
    """A choice among the param's values, shown as they are: for names, numbers and code
    (numpy, cpu, float16). The labels are the link's values (a bound widget writes its label to
    the URL), so values that are words take :func:`labelled_choice`, never ``format_func``."""
    values = list(param.choices)
    default = param.default if param.default in values else values[0]
    if kind == "segmented":
        return st.segmented_control(
            label, values, default=default, key=param.key, bind=BIND, required=True, **kwargs
        )
    widget = st.selectbox if kind == "selectbox" else st.radio
    return widget(label, values, index=values.index(default), key=param.key, bind=BIND, **kwargs)


def labelled_choice(
    param: Param,
    label: str,
    names: Callable[[str], str],
    *,
    kind: Literal["selectbox", "segmented"] = "selectbox",
    options: Sequence[str] | None = None,
    **kwargs: Any,
) -> str:
    """A select box (or a row of buttons, ``kind="segmented"``) that shows ``names(value)`` (a
    translated name) for each of the param's values, while the link carries the value itself.
    ``options`` gives the values where the param has no fixed list (the inspector's models).

    A bound widget writes its label to the URL, so this one is not bound: it takes its first
    value from the link and writes the chosen value back (:func:`_from_link`, :func:`_to_link`)."""
    values = list(options if options is not None else getattr(param, "choices", ()))
    _from_link(param)
    if st.session_state.get(param.key, values[0]) not in values:  # no longer offered
        st.session_state[param.key] = param.default if param.default in values else values[0]
    if kind == "segmented":
        value = st.segmented_control(
            label, values, format_func=names, key=param.key, required=True, **kwargs
        )
    else:
        value = st.selectbox(label, values, format_func=names, key=param.key, **kwargs)
    _to_link(param, value)
    return value


def current(param: Param) -> Any:
    """``param``'s value in this session: its widget's, else the link's (a widget not drawn)."""
    return st.session_state.get(param.key, read_link_value(param)[0])


def switch(param: Param, label: str, names: Callable[[str], str]) -> str:
    """A page's choice between its views: a row of buttons above the page, none in the
    presenter view (which shows the view the link names)."""
    if presenting():
        return current(param)
    return labelled_choice(param, label, names, kind="segmented")


def _from_link(param: Param) -> None:
    """An unbound widget's first value: the link's (``begin_page`` has already checked and
    corrected it), kept in the session under the param's key from then on; none where the browser
    has sent the widget's value to a session that has not drawn it yet (after a reconnect to
    another server process: the person's latest move wins over the link)."""
    if param.key not in st.session_state and not widget_value_pending(param.key):
        st.session_state[param.key] = read_link_value(param)[0]


def _to_link(param: Param, value: object) -> None:
    """An unbound widget's value back to the link, as the param spells it, none at the default."""
    if value == param.default:
        st.query_params.pop(param.key, None)
    else:
        st.query_params[param.key] = param.serialise(value)


def text(param: TextParam, label: str, **kwargs: Any) -> str:
    """A text box; what the visitor typed stays in it, whatever the page makes of it."""
    return st.text_input(
        label, value=param.default, max_chars=param.max_len, key=param.key, bind=BIND, **kwargs
    )


def flag(param: BoolParam, label: str, **kwargs: Any) -> bool:
    """A checkbox; the link carries ``true`` or ``false``."""
    return st.checkbox(label, value=bool(param.default), key=param.key, bind=BIND, **kwargs)


def typed_vector(param: TextParam, label: str, lang: str, **kwargs: Any) -> str:
    """A text box for a vector typed in the page's language (``1,5; 2,5`` in Indonesian), while
    the link carries it the same way in every language (``1.5,2.5``: see
    ``core.inputs.link_vector``). Returns the text as typed; ``st.session_state[param.key]`` holds
    the link's text, which the share box and saved views write.

    The box (key ``<key>_typed``) is not bound: it is written from the link when the page opens,
    when the language changes and when a saved view is restored. Text that does not read stays
    in the box and goes to the link as it is, so the page's message about it comes back too."""
    box, shown_for = f"{param.key}_typed", f"_{param.key}_typed_for"
    _from_link(param)
    link = st.session_state[param.key]
    decimal = fmt.marks(lang)[0]
    if st.session_state.get(shown_for) != (lang, link):
        try:
            values = parse_vector(link)
        except VectorParseError:
            st.session_state[box] = link
        else:
            st.session_state[box] = link if decimal == "." else fmt.vector(values, lang, exact=True)
    typed = st.text_input(label, max_chars=param.max_len, key=box, **kwargs)
    try:
        values = parse_vector(typed, decimal=decimal)
    except VectorParseError:
        values = None
    link = typed if decimal == "." or values is None else link_vector(values)
    if typed.strip():
        _reading(values, other_reading(typed, decimal=decimal), box, lang)
    st.session_state[param.key] = link
    st.session_state[shown_for] = (lang, link)
    _to_link(param, link)
    return typed


# The most numbers a reading notice writes out before an ellipsis.
READING_SHOWN = 8


def _reading(values: object, other: object, box: str, lang: str) -> None:
    """Say how the typed text was read and, where it reads another way with the other decimal
    mark, offer that reading with a button that rewrites the box."""
    tr = translator(lang)
    if values is not None:
        shown = fmt.vector(values, lang, exact=True, most=READING_SHOWN)
        st.caption(tr("common.vector_read", count=len(values), values=shown))
    if other is None:
        return
    mark = "point" if fmt.marks(lang)[0] == "," else "comma"
    shown = fmt.vector(other, lang, exact=True, most=READING_SHOWN)
    st.caption(tr(f"common.vector_other_{mark}", count=len(other), values=shown))
    rewritten = fmt.vector(other, lang, exact=True)
    st.button(
        tr("common.vector_use_other"),
        key=f"{box}_other",
        on_click=st.session_state.__setitem__,
        args=(box, rewritten),
    )
