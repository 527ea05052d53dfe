"""Widgets bound to the URL, drawn from the page's ``Param`` declarations.

The link parameter and its widget share one declaration: key, default and bounds come from
the ``Param``, so the range a link may carry and the range a slider offers cannot drift apart.
Every widget here uses ``bind="query-params"`` with the parameter's key as the URL name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import streamlit as st

from ui import fmt
from ui.params import (
    BoolParam,
    ChoiceParam,
    FloatParam,
    IntParam,
    LadderParam,
    TextParam,
    read_link_value,
)

BIND = "query-params"


def number(
    param: IntParam | FloatParam,
    label: str,
    *,
    kind: Literal["slider", "input"] = "slider",
    step: float | None = None,
    **kwargs: Any,
) -> Any:
    """A slider (or a number box, for wide integer ranges such as seeds) over the param's range."""
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


def ladder(param: LadderParam, label: str, **kwargs: Any) -> Any:
    """A select slider over the param's ladder; the URL carries ``fmt.link`` of the value."""
    return st.select_slider(
        label,
        options=param.options,
        value=param.default,
        format_func=fmt.link,
        key=param.key,
        bind=BIND,
        **kwargs,
    )


def choice(
    param: ChoiceParam,
    label: str,
    *,
    kind: Literal["selectbox", "segmented", "radio"] = "selectbox",
    options: tuple[str, ...] | None = None,
    **kwargs: Any,
) -> Any:
    """A choice among the param's values. The labels are the link's values (a bound widget
    writes its label to the URL), so translate with a caption, never with ``format_func``.
    ``options`` narrows the list (e.g. to the devices present)."""
    values = list(options if options is not None else param.choices)
    default = param.default if param.default in values else values[0]
    if kind == "segmented":
        return st.segmented_control(
            label, values, default=default, key=param.key, bind=BIND, required=True, **kwargs
        )
    widget = st.selectbox if kind == "selectbox" else st.radio
    return widget(label, values, index=values.index(default), key=param.key, bind=BIND, **kwargs)


def labelled_choice(
    param: ChoiceParam,
    label: str,
    names: Callable[[str], str],
    *,
    kind: Literal["selectbox", "segmented"] = "selectbox",
    **kwargs: Any,
) -> str:
    """A select box (or a row of buttons, ``kind="segmented"``) that shows ``names(value)`` (a
    translated name) for each of the param's values, while the link carries the value itself.

    A bound widget writes its label to the URL, so this one is not bound: it takes its first
    value from the link (``begin_page`` has already checked and corrected it) and writes the
    chosen value back with ``st.query_params`` (none while it is the default).
    """
    if param.key not in st.session_state:
        st.session_state[param.key] = read_link_value(param)[0]
    if kind == "segmented":
        value = st.segmented_control(
            label, param.choices, format_func=names, key=param.key, required=True, **kwargs
        )
    else:
        value = st.selectbox(label, param.choices, format_func=names, key=param.key, **kwargs)
    if value == param.default:
        st.query_params.pop(param.key, None)
    else:
        st.query_params[param.key] = value
    return value


def text(param: TextParam, label: str, **kwargs: Any) -> str:
    """A text box; what the visitor typed stays in it, whatever the page makes of it."""
    return st.text_input(
        label, value=param.default, max_chars=param.max_len, key=param.key, bind=BIND, **kwargs
    )


def flag(param: BoolParam, label: str, **kwargs: Any) -> bool:
    """A checkbox; the link carries ``true`` or ``false``."""
    return st.checkbox(label, value=bool(param.default), key=param.key, bind=BIND, **kwargs)
