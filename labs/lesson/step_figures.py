"""The figure each lesson step draws, from the step's arrays and the names the page gives them
(``lab``: translated labels, keyed as the figures read them)."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go

from core.knobs import EPS_PLACEMENTS
from labs.explorer.figures import coordinates_figure, plane_figure
from labs.invariance.figures import sweep_figure
from labs.lesson.figures import (
    eps_figure,
    gain_figure,
    gradient_figure,
    identity_figure,
    outputs_figure,
    residual_figure,
    ulp_figure,
)
from labs.lesson.model import StepResult
from labs.residual.figures import layers_figure


def _table(r: StepResult, lab: dict[str, str]) -> go.Figure:
    names = [lab[f"transform_{row['id']}"] for row in r.rows]
    return residual_figure(names, r.arrays["rms"], r.arrays["layer"], r.numbers["tol"], lab)


def _coordinates(r: StepResult, lab: dict[str, str]) -> go.Figure:
    """The explorer's coordinate chart for the step's x: every coordinate, dashed output means."""
    values = {"x": r.arrays["x"], "rms": r.arrays["y_rms"], "layer": r.arrays["y_layer"]}
    index = list(range(len(values["x"])))
    series = {key: (index, v) for key, v in values.items()}
    means = {"rms": r.numbers["mean_rms"], "layer": r.numbers["mean_layer"]}
    return coordinates_figure(series, means, lab, d=len(index))


def _residual(r: StepResult, lab: dict[str, str]) -> go.Figure:
    readings = {"rms": r.arrays["rms_readings"], "layer": r.arrays["layer_readings"]}
    return layers_figure(r.arrays["layers"], readings, ("input_cos_ones", "token_cosine"), lab)


FIGURES: dict[str, Callable[[StepResult, dict[str, str]], go.Figure]] = {
    "centre": lambda r, lab: _coordinates(r, lab),
    "identity": lambda r, lab: identity_figure(r.arrays["before"], r.arrays["after"], lab),
    "rescale": lambda r, lab: outputs_figure([("", r.arrays)], lab),
    "scales": lambda r, lab: outputs_figure(
        [
            (lab["neg"], {k[4:]: v for k, v in r.arrays.items() if k.startswith("neg_")}),
            (lab["coord"], {k[6:]: v for k, v in r.arrays.items() if k.startswith("coord_")}),
        ],
        lab,
    ),
    "shift": lambda r, lab: outputs_figure([("", r.arrays)], lab),
    "sweep": lambda r, lab: sweep_figure(r.arrays, lab),
    "plane": lambda r, lab: plane_figure(
        *(tuple(r.arrays[k]) for k in ("point", "rms", "layer")), r.numbers["radius"], lab
    ),
    "recenter": lambda r, lab: outputs_figure([(lab["case"], r.arrays)], lab),
    "table": _table,
    "eps": lambda r, lab: eps_figure(
        r.arrays["input_rms"], {p: r.arrays[p] for p in EPS_PLACEMENTS}, r.numbers["rms_x"], lab
    ),
    "precision": lambda r, lab: ulp_figure(r.arrays["ulps"], r.arrays["counts"], lab),
    "gradient": lambda r, lab: gradient_figure(
        r.arrays["eps"], r.arrays["rms"], r.arrays["layer"], lab
    ),
    "residual": _residual,
    "gain": lambda r, lab: gain_figure(r.arrays["meant"], r.arrays["loaded"], lab),
}
