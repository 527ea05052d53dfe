"""The training lab's sections on the three sets (labs/training/sets_section.py) in both
languages: the six charts draw the shipped files' seeds as bands with their means, and every
sentence the core chose is on the page."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labs.training.runs import REFERENCE_DIR
from labs.training.sets import SET_FILES
from labs.training.sets_view import (
    shipped_data_view,
    shipped_placement_view,
    shipped_qknorm_view,
)
from tests.apptest_util import assert_claims_shown, decode, figures, open_app, shown_text
from ui.i18n import translator

FIGURES = {"sets_place_loss", "sets_place_rms", "sets_qk_logit", "sets_qk_loss"}
FIGURES |= {"sets_data_loss", "sets_data_sat"}
NAMES = {"pre": "Pre-LN", "post": "Post-LN", "peri": "Peri-LN", "output": "Output-LN"}
NAMES["scaled"] = "LN Scaling"


def drawn(spec: dict, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) of the mean line called ``name``, and the band beside it as (lowest, highest)."""
    (mean,) = [t for t in spec["data"] if t.get("name") == name]
    (band,) = [t for t in spec["data"] if t.get("legendgroup") == mean["legendgroup"]
               and t is not mean]  # fmt: skip
    x, y = decode(mean["x"]), decode(mean["y"])
    outline = decode(band["y"])
    return np.stack([outline[x.size :][::-1], outline[: x.size]]), y


@pytest.fixture(scope="module")
def pages() -> dict:
    """The training page in each language, opened once for this file's tests."""
    return {lang: open_app("training", lang=lang) for lang in ("en", "id")}


@pytest.mark.parametrize("lang", ["en", "id"])
def test_both_sets_are_drawn_and_said_in_both_languages(pages, lang: str) -> None:
    at = pages[lang]
    assert not at.exception, [e.value for e in at.exception]
    tr = translator(lang)
    headers = [h.value for h in at.header]
    assert tr("training_sets.place_heading") in headers
    assert tr("training_sets.qk_heading") in headers
    assert tr("training_sets.data_heading") in headers
    assert FIGURES <= set(figures(at))
    assert_claims_shown(at, shipped_placement_view().claims, lang)
    assert_claims_shown(at, shipped_qknorm_view().claims, lang)
    assert_claims_shown(at, shipped_data_view().claims, lang)
    page = "\n".join(shown_text(at))
    for name in ("placement", "qknorm", "data"):
        assert f"python -m labs.training.runs --set {name}" in page


def test_the_charts_draw_the_shipped_seeds(pages) -> None:
    charts = figures(pages["en"])
    runs = json.loads((REFERENCE_DIR / SET_FILES["placement"]).read_text())["runs"]
    for p, name in NAMES.items():
        mine = [r for r in runs if r["placement"] == p]
        loss = np.array([r["val_loss"] for r in mine])
        rms = np.array([r["val_hidden_rms"][-1] for r in mine])
        for key, grid in (("sets_place_loss", loss), ("sets_place_rms", rms)):
            band, mean = drawn(charts[key], name)
            np.testing.assert_array_equal(band, [grid.min(axis=0), grid.max(axis=0)])
            np.testing.assert_allclose(mean, grid.mean(axis=0), rtol=1e-15)
    runs = json.loads((REFERENCE_DIR / SET_FILES["qknorm"]).read_text())["runs"]
    tr = translator("en")
    for mode in ("off", "rms", "clip"):
        lrs = sorted({r["lr"] for r in runs})
        by_seed = {}
        for r in runs:
            if r["qk_norm"] == mode:
                by_seed.setdefault(r["seed"], {})[r["lr"]] = max(r["val_max_logit"])
        grid = np.array([[row[lr] for lr in lrs] for _, row in sorted(by_seed.items())])
        band, mean = drawn(charts["sets_qk_logit"], tr(f"training_sets.qk_mode_{mode}"))
        np.testing.assert_array_equal(band, [grid.min(axis=0), grid.max(axis=0)])
        np.testing.assert_allclose(mean, grid.mean(axis=0), rtol=1e-15)
    assert charts["sets_qk_logit"]["layout"]["xaxis"]["type"] == "log"
    assert charts["sets_qk_logit"]["layout"]["yaxis"]["type"] == "log"


def test_the_data_charts_draw_every_run_of_the_shipped_data_set(pages) -> None:
    """Each norm on each slice: its seeds' validation losses; DyT on each slice: its seeds'
    saturated shares in percent, layer 1 first. The slices are told apart by their byte counts."""
    data = json.loads((REFERENCE_DIR / SET_FILES["data"]).read_text())
    whole, charts = data["data"]["train_bytes"], figures(pages["en"])
    sizes = sorted({r["train_bytes"] or whole for r in data["runs"]})
    assert len(sizes) == 2 and sizes[-1] == whole
    for size in sizes:
        for norm, name in (("rms", "RMSNorm"), ("dyt", "DyT")):
            mine = [
                r for r in data["runs"] if (r["norm"], r["train_bytes"] or whole) == (norm, size)
            ]
            mine.sort(key=lambda r: r["seed"])
            assert len(mine) == 3
            label = f"{name}, {size:,} bytes"
            grid = np.array([r["val_loss"] for r in mine])
            band, mean = drawn(charts["sets_data_loss"], label)
            np.testing.assert_array_equal(band, [grid.min(axis=0), grid.max(axis=0)])
            np.testing.assert_allclose(mean, grid.mean(axis=0), rtol=1e-15)
            if norm == "dyt":
                shares = 100 * np.array([r["saturated"] for r in mine])
                band, mean = drawn(charts["sets_data_sat"], label)
                np.testing.assert_allclose(band, [shares.min(axis=0), shares.max(axis=0)])
                np.testing.assert_allclose(mean, shares.mean(axis=0), rtol=1e-14)
