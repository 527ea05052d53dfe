"""Words for every chart (ui/chart.py): each Plotly chart has its summary as its accessible name
and as the caption under it, and a Data table whose extremes are the chart's own.

Each page in ``CASES`` is opened in both languages with AppTest, in states that draw its charts
(the speed lab after its button); a wide vector (d = 5000) checks that the table is downsampled
as the chart is.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from labs.lesson.options import OPTIONS, STEP_IDS
from labs.training.lab_view import SECONDS_ENV
from tests.apptest_util import open_app, open_page_alone, open_share
from ui import fmt
from ui.chart import DATA_KEY, columns_csv
from ui.i18n import t

CASES = [
    ("explorer", {"lang": "en"}, 2),
    ("explorer", {"lang": "id", "d": "3"}, 3),
    ("explorer", {"lang": "en", "d": "5000", "offset": "2"}, 2),
    ("invariance", {"lang": "en"}, 4),
    ("invariance", {"lang": "id", "transform": "shift_ones", "c_max": "100"}, 4),
    ("contracts", {"lang": "en"}, 1),
    ("contracts", {"lang": "id", "a": "llama", "b": "llama", "d": "300", "scale": "0.01"}, 1),
    ("precision", {"lang": "en"}, 4),
    ("precision", {"lang": "id", "placement": "inside", "scale": "1000", "d": "300"}, 4),
    ("backward", {"lang": "en"}, 4),
    ("backward", {"lang": "id", "d": "64", "offset": "-3", "eps": "0", "grad": "ones"}, 4),
    ("residual", {"lang": "en"}, 1),
    ("residual", {"lang": "id", "mode": "trained", "trained_seed": "1", "prompt": "code"}, 2),
    # The shipped pair (gains of both, three readings charts as a pair); then model A alone.
    ("inspector", {"lang": "en"}, 5),
    ("inspector", {"lang": "id", "compare": "none"}, 4),
    ("attention", {"lang": "en", "angle": "0"}, 9),
    # d = 2 with an offset: LayerNorm stacks the keys on two points (markers named "k1, k3").
    ("attention", {"lang": "id", "d": "2", "n": "12", "offset": "-3"}, 9),
    # A tiny sweep (64 and 128 wide, 2 rows: milliseconds): numpy (composites), torch (fused too).
    ("speed", {"lang": "en", "d": "128", "batch": "2", "impl": "numpy", "repeats": "3"}, 3),
    ("speed", {"lang": "id", "d": "128", "batch": "2", "impl": "torch", "repeats": "2"}, 3),
    # The shipped runs (nothing trained): loss against step and seconds, finals, DyT's alpha, step
    # time (no share: the sentence reads none, so none is drawn); the fair kernels: a step and the
    # norm layer alone; the placement set (loss, the stream's RMS) and the QK-norm set (largest
    # logit, final loss).
    ("training", {"lang": "en"}, 15),  # the shipped runs (DyT's α, Derf's α and s) and the data set
    ("training", {"lang": "id"}, 15),
    # The S-curve view: R² by layer, then a scatter per norm layer of the chosen model.
    ("training", {"lang": "en", "view": "scurve"}, 8),
    ("training", {"lang": "id", "view": "scurve", "trained_seed": "1", "norm": "layer"}, 8),
]
# The lesson draws a step's figure once an answer is chosen and revealed (see _reveal): a few
# steps, one of each kind of table (coordinates, before and after, points, bars, layers).
LESSON_CASES = [
    ("lesson", {"lang": "en", "step": "1"}, 1),
    ("lesson", {"lang": "id", "step": "3"}, 1),
    ("lesson", {"lang": "en", "step": "7"}, 1),
    ("lesson", {"lang": "en", "step": "11"}, 1),
    ("lesson", {"lang": "id", "step": "13"}, 1),
]
CASES += LESSON_CASES
# Pages that draw their charts only after a button (its key) is pressed.
PRESS = {"speed": "measure"}


def _values(data: object) -> np.ndarray:
    """A trace's numbers (Plotly's typed arrays or a list; ``None`` reads as NaN), flattened."""
    if data is None:
        return np.array([], dtype=float)
    if isinstance(data, dict) and "bdata" in data:
        raw = np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
        return raw.astype(float).ravel()
    return np.array([np.nan if v is None else v for v in np.ravel(data)], dtype=float)


def _drawn(trace: dict) -> np.ndarray:
    """The numbers a trace draws: a heat map's z, a horizontal bar's x, otherwise y."""
    if "z" in trace:
        return _values(trace["z"])
    return _values(trace.get("x" if trace.get("orientation") == "h" else "y"))


def _ends(values: np.ndarray, lang: str) -> tuple[str, str]:
    """The smallest and largest finite value, written as the page writes numbers."""
    finite = values[np.isfinite(values)]
    if not finite.size:
        return ("", "")
    return (fmt.num(float(finite.min()), lang=lang), fmt.num(float(finite.max()), lang=lang))


def _read(cells, lang: str) -> np.ndarray:
    """A table column as numbers (the table writes them in the page's language)."""
    out = []
    for cell in cells:
        try:
            out.append(fmt.parse(str(cell), lang))
        except ValueError:
            out.append(np.nan)  # "NaN", "∞": not drawn
    return np.array(out, dtype=float)


def _table_ends(cells, lang: str) -> tuple[str, str]:
    """The cells that hold the table's smallest and largest number, as shown."""
    values = _read(cells, lang)
    finite = np.flatnonzero(np.isfinite(values))
    if not finite.size:
        return ("", "")
    cells = list(cells)
    lo = finite[np.argmin(values[finite])]
    hi = finite[np.argmax(values[finite])]
    return (str(cells[lo]), str(cells[hi]))


def _compared(spec: dict, frame, lang: str) -> int:
    """Compare the table with the figure's traces; returns how many comparisons were made.

    A column named like a trace (or like it without its "(x)") holds that trace's values; a table
    of points (its first column is "Point") holds the coordinates of each trace named like a
    point; a table whose first column names the markers as their hover does (``customdata``, "k1"
    or "k1, k3" for keys at one point) holds each marker's coordinates; otherwise the table's
    values, all together, span what the traces draw. Numbers compare as the page writes them."""
    traces: dict[str, list[dict]] = {}
    for trace in spec["data"]:
        traces.setdefault(trace.get("name"), []).append(trace)
    first = frame.columns[0]
    done = 0
    markers = {
        name: (trace, i)
        for trace in spec["data"]
        for i, names in enumerate(trace.get("customdata") or [])
        if isinstance(names, str)
        for name in names.split(", ")
    }
    if markers and set(map(str, frame[first])) == set(markers):  # named markers: one row each
        for _, row in frame.iterrows():
            trace, i = markers[str(row[first])]
            axes = [a for a in ("x", "y", "z") if a in trace]
            shown = [str(row[c]) for c in frame.columns[1 : 1 + len(axes)]]
            assert shown == [fmt.num(float(_values(trace[a])[i]), lang=lang) for a in axes]
            done += 1
        return done
    if first == t("charts.point", lang):  # points: one row each
        for _, row in frame.iterrows():
            for trace in traces.get(row[first], []):
                axes = [a for a in ("x", "y", "z") if a in trace]
                drawn = [_values(trace[a]) for a in axes]
                # A point, or an arrow from the origin to it (the 3D view): its last entry.
                if all(0 < v.size <= 2 for v in drawn):
                    shown = [str(row[c]) for c in frame.columns[1 : 1 + len(axes)]]
                    assert shown == [fmt.num(float(v[-1]), lang=lang) for v in drawn]
                    done += 1
        return done
    for column in frame.columns[1:]:
        named = traces.get(column) or traces.get(f"{column}(x)")  # "RMSNorm" for "RMSNorm(x)"
        if named:
            drawn = np.concatenate([_drawn(tr) for tr in named])
            assert _table_ends(frame[column], lang) == _ends(drawn, lang), column
            done += 1
    if done:
        return done
    cells = frame[frame.columns[1:]].to_numpy().ravel()
    drawn = np.concatenate([_drawn(tr) for tr in spec["data"]])
    assert _table_ends(cells, lang) == _ends(drawn, lang)
    return 1


def open_data(at) -> None:
    """Open every chart's Data expander and run the page again."""
    for key in list(at.session_state):
        if str(key).startswith(DATA_KEY):
            at.session_state[key] = True
    at.run()


def _reveal(at, step_id: str) -> None:
    """Choose an answer to the lesson's step and press Reveal: its figure is drawn then."""
    at.radio(key=f"pick_{step_id}").set_value(OPTIONS[step_id][0]).run()
    at.button(key=f"reveal_{step_id}").click().run()


# A live training (one block of width 16, 10 steps): loss against step and seconds, finals,
# DyT's alpha, step time and share (when a share exceeds the timing noise), then the sections
# below it.
TRAINED = {"steps": "10", "width": "16", "depth": "1", "dyt": "true", "placement": "peri"}


@pytest.mark.parametrize(("page", "query", "count"), CASES)
def test_every_chart_has_its_words_and_its_data(page: str, query: dict, count: int) -> None:
    at = open_app(None if page == "explorer" else page, **query)
    if page in PRESS:  # the page draws its charts once the button is pressed
        at.button(key=PRESS[page]).click().run()
    check_charts(at, page, query, count)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_a_live_training_with_dyt_has_its_charts_words_and_data(monkeypatch, lang: str) -> None:
    monkeypatch.setenv(SECONDS_ENV, "60")
    at = open_page_alone("training", lang=lang, **TRAINED)
    shipped = len(at.get("plotly_chart"))
    at.button(key="train").click().run()
    live = {c.key for c in at.get("plotly_chart") if str(c.key).startswith("live_")}
    assert {"live_step", "live_seconds", "live_finals", "live_alpha_dyt", "live_step_time"} <= live
    check_charts(at, "training", {"lang": lang}, shipped + len(live))


def check_charts(at, page: str, query: dict, count: int) -> None:
    """Every chart on the page has its words (its accessible name and the caption under it)
    and a Data table that holds what it draws."""
    if page == "lesson":
        _reveal(at, STEP_IDS[int(query["step"]) - 1])
    assert not at.exception, [e.value for e in at.exception]
    data_label = t("charts.data_heading", query["lang"])
    # A Data table is drawn once its expander is opened (as a visitor's click would).
    closed = [e for e in at.expander if e.label == data_label]
    assert closed and not any(e.dataframe for e in closed)
    open_data(at)
    assert not at.exception, [e.value for e in at.exception]
    charts = at.get("plotly_chart")
    # Each chart's table is in its Data expander (a page may show other tables elsewhere).
    frames = [e.dataframe[0].value for e in at.expander if e.label == data_label]
    assert len(charts) == count == len(frames)
    captions = [c.value for c in at.caption]
    for chart, frame in zip(charts, frames, strict=True):
        alt = chart.proto.alt
        title, _, words = alt.partition(". ")
        assert title and words, alt
        # The caption right under the chart starts with the same summary.
        assert any(c.startswith(words) for c in captions), words[:80]
        assert _compared(json.loads(chart.proto.spec), frame, query["lang"]) > 0
    if query.get("d") == "5000":
        assert len(frames[0]) < 5000  # downsampled as the chart is


def test_the_share_dialog_offers_each_charts_full_data_as_csv() -> None:
    at = open_share(open_page_alone("invariance", lang="id"))
    assert not at.exception, [e.value for e in at.exception]
    buttons = at.get("download_button")
    assert len(buttons) == 4
    text = columns_csv({"c": [0.5, -2.0], "i": [1, 2]})
    assert text == "c,i\n0.5,1\n-2.0,2\n"  # a decimal point in every language
