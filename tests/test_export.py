"""ui.export: CSV and JSON of a view, and restoring the JSON with link-style checks."""

import csv
import io
import json

import numpy as np
import pytest

from ui.export import (
    MAX_JSON_BYTES,
    ViewFileError,
    columns_csv,
    coordinates_csv,
    restore_state,
    statistics_csv,
    view_json,
)
from ui.params import ChoiceParam, FloatParam, IntParam, TextParam

PARAMS = (
    IntParam("d", 16, 2, 8192),
    FloatParam("offset", 0.0, -20.0, 20.0),
    ChoiceParam("dist", "normal", ("normal", "spike")),
    TextParam("x", ""),
)


def test_coordinates_csv_round_trips_exactly() -> None:
    x = np.random.default_rng(0).standard_normal(5)
    rows = list(csv.reader(io.StringIO(coordinates_csv({"x": x, "twice": 2 * x}))))
    assert rows[0] == ["i", "x", "twice"]
    np.testing.assert_array_equal([float(r[1]) for r in rows[1:]], x)
    np.testing.assert_array_equal([int(r[0]) for r in rows[1:]], range(5))


def test_a_value_not_measured_is_an_empty_cell() -> None:
    """The training lab's charts by seed hold None where a share was not measured: the CSV of
    such a chart was a TypeError, not a file."""
    assert columns_csv({"seed": [0, 1], "share": [0.4259, None]}) == "seed,share\n0,0.4259\n1,\n"


def test_statistics_csv_has_one_row_per_statistic() -> None:
    text = statistics_csv({"x": {"mean": 1.0, "rms": 2.0}, "y": {"mean": 0.5, "rms": 1.5}})
    assert text.splitlines() == ["statistic,x,y", "mean,1.0,0.5", "rms,2.0,1.5"]


def test_a_saved_view_comes_back() -> None:
    state = {"d": 300, "offset": -2.5, "dist": "spike", "x": ""}
    doc = view_json("explorer", state, {"x": np.arange(3.0)}, {"x": {"mean": 1.0}})
    assert json.loads(doc)["arrays"]["x"] == [0.0, 1.0, 2.0]
    values, problems = restore_state(doc.encode(), "explorer", PARAMS)
    assert values == state and problems == []


def test_restored_values_are_checked_like_link_values() -> None:
    doc = json.dumps(
        {
            "format": "normlab-view",
            "page": "explorer",
            "state": {"d": 10**60, "offset": "NaN", "dist": "<b>x</b>", "extra": 1},
        }
    )
    values, problems = restore_state(doc.encode(), "explorer", PARAMS)
    assert values == {"d": 8192, "offset": 0.0, "dist": "normal", "x": ""}
    assert [(key, p.code) for key, _, p in problems] == [
        ("d", "above"),
        ("offset", "not_finite"),
        ("dist", "unknown_choice"),
    ]


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"\xff\xfe", "not_json"),
        (b"{not json", "not_json"),
        (b"[1, 2]", "not_view"),
        (b'{"format": "other"}', "not_view"),
        (b'{"format": "normlab-view", "page": "lesson", "state": {}}', "other_page"),
        (b'{"format": "normlab-view", "page": "explorer", "state": []}', "not_view"),
        (b" " * (MAX_JSON_BYTES + 1), "too_large"),
    ],
)
def test_files_that_are_not_a_view_are_refused(raw: bytes, code: str) -> None:
    with pytest.raises(ViewFileError) as info:
        restore_state(raw, "explorer", PARAMS)
    assert info.value.code == code
