"""Widgets bound to the URL, drawn from the page's ``Param`` declarations.

The link parameter and its widget share one declaration: key, default and bounds come from
the ``Param``, so the range a link may carry and the range a slider offers cannot drift apart.
Every widget here uses ``bind="query-params"`` with the parameter's key as the URL name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import streamlit as st

from ui.params import ChoiceParam, FloatParam, IntParam, LadderParam, TextParam, fmt_number

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
    """A select slider over the param's ladder; the URL carries ``fmt_number`` of the value."""
    return st.select_slider(
        label,
        options=param.options,
        value=param.default,
        format_func=fmt_number,
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


def text(param: TextParam, label: str, **kwargs: Any) -> str:
    """A text box; what the visitor typed stays in it, whatever the page makes of it."""
    return st.text_input(
        label, value=param.default, max_chars=param.max_len, key=param.key, bind=BIND, **kwargs
    )


def _sync_link(param: ChoiceParam) -> None:
    """Write ``param``'s value from the session state into the URL (dropped at the default)."""
    value = st.session_state.get(param.key, param.default)
    if value == param.default:
        if param.key in st.query_params:
            del st.query_params[param.key]
    elif st.query_params.get(param.key) != value:
        st.query_params[param.key] = value


def labelled_choice(
    param: ChoiceParam,
    label: str,
    labels: Mapping[str, str],
    *,
    kind: Literal["selectbox", "segmented", "radio"] = "segmented",
    options: tuple[str, ...] | None = None,
    **kwargs: Any,
) -> Any:
    """A choice that shows translated ``labels`` while the link keeps the param's values.

    A bound widget writes its label to the URL, so this widget is not bound: it is keyed by the
    param (so ``st.session_state[param.key]`` holds the value), seeded from the link on first
    use, and writes the value, never the label, back to the URL when it changes. The link checks
    (``ui.params.apply_link_params``) have already replaced a bad value by then.
    """
    values = list(options if options is not None else param.choices)
    current = st.session_state.get(param.key)
    if current is None:
        raw = st.query_params.get(param.key)
        current = param.parse(raw)[0] if raw is not None else param.default
    if current not in values:
        current = param.default if param.default in values else values[0]
    st.session_state[param.key] = current
    _sync_link(param)
    common = {"key": param.key, "on_change": _sync_link, "args": (param,), **kwargs}
    if kind == "segmented":
        return st.segmented_control(
            label, values, format_func=labels.__getitem__, required=True, **common
        )
    widget = st.selectbox if kind == "selectbox" else st.radio
    return widget(label, values, format_func=labels.__getitem__, **common)
