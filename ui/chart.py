"""A chart with its words and its data: every page draws its Plotly figures through :func:`chart`.

Each chart gets the figure, named for screen readers by its title and summary (``alt``); a
caption with the same summary and the page's sentences; a collapsed "Data" expander with its data
as drawn; and its full data (``repr`` of every float) as a CSV in the share dialog, through the
list ``begin_page`` empties."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui import fmt
from ui.export import Columns, columns_csv
from ui.frame import CHART_FILES_KEY, ChartFile, presenting
from ui.i18n import t
from ui.st_private import plotly_spec

# A Plotly figure, or its spec: the same as plain dicts, ``{"data": [...], "layout": {...}}``.
Figure = go.Figure | dict
# The session key of a chart's Data expander: this prefix and the chart's key.
DATA_KEY = "_data_"


def localised(fig: Figure, lang: str) -> Figure:
    """``fig`` with numbers in ``lang`` (Plotly's decimal mark and digit group separator), where
    it does not set them already (``ui.frame.readable`` does)."""
    if isinstance(fig, dict):
        if fig["layout"].get("separators") is None:
            fig["layout"]["separators"] = "".join(fmt.marks(lang))
    elif fig.layout.separators is None:
        fig.layout.separators = "".join(fmt.marks(lang))
    return fig


def chart(
    fig: Figure,
    *,
    key: str,
    title: str,
    words: str,
    table: Columns | Callable[[], Columns],
    headers: Mapping[str, str],
    lang: str | None = None,
    more: str = "",
    full: Columns | Callable[[], str] | None = None,
    file_name: str | None = None,
    config: dict | None = None,
) -> None:
    """Draw ``fig`` with its summary and its data. ``fig`` is a Plotly figure, or a spec: the
    figure as plain dicts, ``{"data": [...], "layout": {...}}`` (``labs.explorer.figures``'s), which
    Streamlit is handed without a figure built (``ui.st_private.plotly_spec``).

    ``title``: what the chart is, in a few words (the download's label and the start of its
    accessible name); ``words``: the summary sentence(s) the core chose, rendered; ``more``:
    sentences the caption adds after them. ``table``: the chart's data as drawn, columns by their
    machine names (``i``, ``rmsnorm``, …), or a callable that returns them when the table is
    drawn; ``headers`` names them for the reader. ``full``: every value when the chart draws
    fewer (columns, or a callable that writes the CSV); without it the table is the full data.
    ``file_name`` names the CSV in the share dialog (``None``: the page offers the full data
    there itself). ``lang``: the numbers' language, by default the page's."""
    lang = lang or fmt.current_language()
    fig = localised(fig, lang)
    drawn = plotly_spec(fig) if isinstance(fig, dict) else fig
    st.plotly_chart(drawn, key=key, config=config, alt=f"{title}. {words}")
    st.caption(f"{words} {more}".strip())
    # Drawn only while open: writing a wide chart's table costs more than the rest of a rerun.
    data = st.expander(t("charts.data_heading", lang), key=DATA_KEY + key, on_change="rerun")
    if data.open:
        columns = table() if callable(table) else table
        with data:
            frame = pd.DataFrame(
                {
                    headers.get(name, name): fmt.column(values, lang)
                    for name, values in columns.items()
                }
            )
            st.dataframe(frame, hide_index=True)
            if not presenting():
                st.caption(t("charts.data_full", lang))
    if file_name is not None:
        if full is not None:
            write = full if callable(full) else (lambda: columns_csv(full))
        else:
            write = lambda: columns_csv(table() if callable(table) else table)  # noqa: E731
        files = st.session_state.setdefault(CHART_FILES_KEY, [])
        files[:] = [f for f in files if f.file_name != file_name]
        files.append(ChartFile(title, write, file_name))
