"""A chart with its words and its data: every page draws its Plotly figures through :func:`chart`.

Each chart gets, in this order:

- the figure, named for screen readers by its title and summary (Streamlit writes ``alt`` as the
  chart's ``aria-label`` with ``role="figure"``);
- a caption right under it: the same summary (a claim the core chose: its extremes and where
  the two norms part), then any sentences the page adds;
- a collapsed "Data" expander with the chart's data as a table (``st.dataframe``), downsampled
  as the chart is, and a pointer to the full CSV in the share dialog.

The full data, one row per point with a decimal point and every digit (``repr`` of the float),
goes to the share dialog's downloads (``ui.frame.share_box``) through a list the page's run
fills: ``begin_page`` empties it, each :func:`chart` adds its file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from ui import fmt
from ui.export import Columns, columns_csv
from ui.frame import CHART_FILES_KEY, ChartFile, presenting
from ui.i18n import t

# The session key of a chart's Data expander: this prefix and the chart's key.
DATA_KEY = "_data_"


def chart(
    fig: go.Figure,
    *,
    key: str,
    title: str,
    words: str,
    table: Columns,
    headers: Mapping[str, str],
    lang: str,
    more: str = "",
    full: Columns | Callable[[], str] | None = None,
    file_name: str | None = None,
    config: dict | None = None,
) -> None:
    """Draw ``fig`` with its summary and its data.

    ``title``: what the chart is, in a few words (the download's label and the start of its
    accessible name); ``words``: the summary sentence(s) the core chose, rendered; ``more``:
    sentences the caption adds after them. ``table``: the chart's data as drawn, columns by their
    machine names (``i``, ``rmsnorm``, …), ``headers`` naming them for the reader. ``full``: every
    value when the chart draws fewer (columns, or a callable that writes the CSV); without it the
    table is the full data. ``file_name`` names the CSV in the share dialog (``None``: the page
    offers the full data there itself).
    """
    if fig.layout.separators is None:  # figures not drawn through ui.frame.readable
        fig.layout.separators = "".join(fmt.marks(lang))
    st.plotly_chart(fig, key=key, config=config, alt=f"{title}. {words}")
    st.caption(f"{words} {more}".strip())
    # Drawn only while open: writing a wide chart's table costs more than the rest of a rerun.
    data = st.expander(t("charts.data_heading", lang), key=DATA_KEY + key, on_change="rerun")
    if data.open:
        with data:
            frame = pd.DataFrame(
                {
                    headers.get(name, name): fmt.column(values, lang)
                    for name, values in table.items()
                }
            )
            st.dataframe(frame, hide_index=True)
            if not presenting():
                st.caption(t("charts.data_full", lang))
    if file_name is not None:
        source = full if full is not None else table
        write = source if callable(source) else (lambda: columns_csv(source))
        files = st.session_state.setdefault(CHART_FILES_KEY, [])
        files[:] = [f for f in files if f.file_name != file_name]
        files.append(ChartFile(title, write, file_name))
