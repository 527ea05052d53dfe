"""Saving a view to CSV and JSON, and restoring it from the JSON.

The JSON holds the link parameters (the full state) next to the numbers they produce, so a saved
file documents itself and comes back in: ``restore_state`` checks every value by a link's rules."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from ui.params import Param, Problem

FORMAT = "normlab-view"
VERSION = 1
# A saved view is a few hundred kilobytes at d = 8192; anything far larger is not one.
MAX_JSON_BYTES = 1_000_000


# Named arrays of one length, each a column of a CSV.
Columns = Mapping[str, Sequence | np.ndarray]
# The media types of the files a page offers, by their ending.
MEDIA_TYPES = {"csv": "text/csv", "json": "application/json", "html": "text/html"}


def saved(what: str, write: Callable[[], str], file_name: str) -> tuple[str, object, str, str]:
    """One file a page offers to save (``ui.frame.Saving``): the button's text key
    (``common.save_<what>``), what writes the file when it is clicked, its name and its type."""
    return f"common.save_{what}", write, file_name, MEDIA_TYPES[file_name.rpartition(".")[2]]


def coordinates_csv(columns: Mapping[str, np.ndarray]) -> str:
    """One row per coordinate ``i`` with one column per named array."""
    width = len(next(iter(columns.values())))
    return columns_csv({"i": np.arange(width), **columns})


def columns_csv(columns: Columns) -> str:
    """One row per point, one column per named array (numbers as Python's ``repr``: a decimal
    point, every digit, ``inf`` and ``nan`` as such); strings stay as they are, and a value not
    measured (None) is an empty cell."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    names = list(columns)
    writer.writerow(names)
    for row in zip(*(columns[n] for n in names), strict=True):
        writer.writerow([_cell(v) for v in row])
    return out.getvalue()


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    return repr(float(value))


def statistics_csv(stats: Mapping[str, Mapping[str, float]]) -> str:
    """One row per statistic, one column per vector (``stats[vector][statistic]``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    vectors = list(stats)
    names = list(next(iter(stats.values())))
    writer.writerow(["statistic", *vectors])
    for name in names:
        writer.writerow([name, *(repr(float(stats[v][name])) for v in vectors)])
    return out.getvalue()


def view_json(
    page: str,
    state: Mapping[str, object],
    arrays: Mapping[str, np.ndarray],
    stats: Mapping[str, Mapping[str, float]],
) -> str:
    """The whole view: its state (link parameters), the vectors and their statistics."""
    document = {"format": FORMAT, "version": VERSION, "page": page, "state": dict(state)}
    document["arrays"] = {k: [float(v) for v in a] for k, a in arrays.items()}
    document["statistics"] = {k: {n: float(v) for n, v in s.items()} for k, s in stats.items()}
    return json.dumps(document, indent=1)


class ViewFileError(ValueError):
    """The uploaded file is not a saved view; ``code`` names the reason for the page."""

    def __init__(self, code: str) -> None:
        self.code = code
        super().__init__(code)


def restore_state(
    raw: bytes, page: str, params: Sequence[Param]
) -> tuple[dict[str, object], list[tuple[str, str, Problem]]]:
    """Values for ``params`` from a saved view, checked like link values.

    Returns the values to set and, for each value that had to change, ``(key, raw, problem)``.
    Keys the page does not know are ignored; missing keys take their defaults."""
    if len(raw) > MAX_JSON_BYTES:
        raise ViewFileError("too_large")
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ViewFileError("not_json") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ViewFileError("not_view")
    if document.get("page") != page:
        raise ViewFileError("other_page")
    state = document.get("state")
    if not isinstance(state, dict):
        raise ViewFileError("not_view")
    values: dict[str, object] = {}
    problems: list[tuple[str, str, Problem]] = []
    for param in params:
        if param.key not in state:
            values[param.key] = param.default
            continue
        raw_value = state[param.key]
        text = raw_value if isinstance(raw_value, str) else json.dumps(raw_value)
        value, problem = param.parse(text)
        values[param.key] = value
        if problem is not None:
            problems.append((param.key, text, problem))
    return values, problems
