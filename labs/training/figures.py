"""Figures for the training lab: loss curves against step and time, and the runs side by side.

Every function takes plain arrays and names. A run is a mapping with ``norm``, ``seed``,
``train_x``, ``train_y`` (training losses averaged over bins of steps), ``val_x`` and ``val_y``.
Each norm has its own colour, dash and marker. ``alpha_figure`` draws DyT's or Derf's learned
scalars per layer over the seeds."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from labkit import style

COLORS = {"rms": style.RMS, "layer": style.LAYER, "none": style.INPUT, "dyt": style.EXTRA[2]}
COLORS["derf"] = style.EXTRA[0]
DASHES = {"rms": "solid", "layer": "dash", "none": "dot", "dyt": "dashdot", "derf": "longdash"}
MARKERS = {"rms": "diamond", "layer": "square", "none": "circle", "dyt": "triangle-up"}
MARKERS["derf"] = "triangle-down"
# Bars differ by hatching too, not by colour alone.
PATTERNS = {"rms": "", "layer": "/", "none": ".", "dyt": "x", "derf": "+"}
# Loss in nats per byte: ln 256 = 5.55 at the start, about 1.5 after training. A log axis
# shows the early fall and the late differences at once; these ticks stay apart on a phone.
LOSS_TICKS = (1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0)
# The loss axis reaches this factor past the extreme losses; the legend sits above the plot
# with a gap of LEGEND_GAP (of the plot's height), clear of a curve at the top.
LOSS_PAD = 1.05
LEGEND_GAP = 0.05


def sized_layout(height: int) -> dict:
    """``style.layout`` with every text of the figure at ``style.FONT_SIZE``: Streamlit's chart
    theme writes ticks and legends smaller (12.75 px) unless the figure names a size."""
    layout = style.layout(height=height)
    return layout | {"legend": {**layout["legend"], "font": {"size": style.FONT_SIZE}}}


def sized_axis(title: str, **extra: object) -> dict:
    """An axis whose title and ticks are at ``style.FONT_SIZE`` (see ``sized_layout``)."""
    return {
        "title": {"text": title, "font": {"size": style.FONT_SIZE}},
        "tickfont": {"size": style.FONT_SIZE},
        **extra,
    }


def _categories(title: str, names: list[str]) -> dict:
    """An axis of ``names`` at x = 0, 1, ...: one category each."""
    n = len(names)
    return sized_axis(title, tickvals=list(range(n)), ticktext=names, range=[-0.6, n - 0.4])


def _loss_axis(values: Sequence[np.ndarray]) -> dict:
    finite = np.concatenate([v[np.isfinite(v) & (v > 0)] for v in values] or [np.ones(1)])
    if finite.size == 0:
        finite = np.ones(1)
    # Headroom beyond the lowest and highest loss: a spike's peak stays clear of the legend.
    lo, hi = float(finite.min()) / LOSS_PAD, float(finite.max()) * LOSS_PAD
    ticks = [t for t in LOSS_TICKS if lo <= t <= hi] or [round(float(np.median(finite)), 2)]
    return {
        "type": "log",
        "range": [np.log10(lo), np.log10(hi)],
        "tickvals": ticks,
        "ticktext": [f"{t:g}" for t in ticks],
    }


def loss_figure(
    runs: Sequence[Mapping],
    labels: Mapping[str, str],
    *,
    x_title: str,
    x_max: float | None = None,
    height: int = 430,
) -> go.Figure:
    """Validation loss (lines and markers) and training loss (thin, faint) of every run.

    ``labels`` names each norm and the two kinds: "validation", "training", "loss", "seed".
    Seeds of one norm share its colour; the legend has one entry per norm, which shows or
    hides its validation and training lines together. ``x_max`` fixes the x axis (a chart
    that grows while training keeps its scale)."""
    traces, shown = [], set()
    for run in runs:
        norm, color = run["norm"], COLORS[run["norm"]]
        name = labels[norm]
        for kind in ("training", "validation"):
            val = kind == "validation"
            traces.append(
                go.Scatter(
                    x=run["val_x" if val else "train_x"],
                    y=run["val_y" if val else "train_y"],
                    name=name,
                    legendgroup=norm,
                    # One legend entry per norm (its validation line); the faint training line
                    # belongs to it and is explained beside the chart.
                    showlegend=val and norm not in shown,
                    mode="lines+markers" if val else "lines",
                    opacity=1.0 if val else 0.35,
                    line={"color": color, "dash": DASHES[norm], "width": 2.5 if val else 1.2},
                    marker={"color": color, "symbol": MARKERS[norm], "size": 6},
                    hovertemplate=(
                        f"{name}, {labels[kind]}, {labels['seed']} {run['seed']}<br>"
                        f"%{{x:.4g}}: %{{y:.4g}}<extra></extra>"
                    ),
                )
            )
        shown.add(norm)
    layout = sized_layout(height)
    layout["legend"] = {**layout["legend"], "y": 1 + LEGEND_GAP}
    layout["xaxis"] = sized_axis(x_title, range=_x_range(runs, x_max))
    values = [np.asarray(r["train_y"], dtype=float) for r in runs]
    values += [np.asarray(r["val_y"], dtype=float) for r in runs]
    layout["yaxis"] = sized_axis(labels["loss"], **_loss_axis(values))
    return go.Figure(data=traces, layout=layout)


# Room beyond the first and last x of a loss chart, as a fraction of its span: a marker at step 0
# or at the last step is drawn whole, not halved by the plot's edge.
X_PAD = 0.04


def _x_range(runs: Sequence[Mapping], x_max: float | None) -> list[float]:
    """From 0 to ``x_max`` (or the largest x drawn), padded by ``X_PAD`` on both sides."""
    if not x_max:
        xs = [np.asarray(r[k], dtype=float) for r in runs for k in ("train_x", "val_x")]
        finite = np.concatenate([x[np.isfinite(x)] for x in xs] or [np.zeros(0)])
        x_max = float(finite.max()) if finite.size else 0.0
    span = x_max if x_max > 0 else 1.0
    return [-X_PAD * span, x_max + X_PAD * span]


def per_run_figure(
    runs: Sequence[Mapping], labels: Mapping[str, str], *, y_title: str, percent: bool = False
) -> go.Figure:
    """One bar per run, grouped by seed, coloured by norm: ``run["value"]`` (None: not
    measured, no bar). ``percent`` shows fractions as percentages."""
    traces = []
    for norm in dict.fromkeys(run["norm"] for run in runs):
        mine = [run for run in runs if run["norm"] == norm]
        values = [np.nan if run["value"] is None else run["value"] for run in mine]
        scale = 100.0 if percent else 1.0
        traces.append(
            go.Bar(
                x=[f"{labels['seed']} {run['seed']}" for run in mine],
                y=[scale * v for v in values],
                name=labels[norm],
                marker={"color": COLORS[norm], "pattern": {"shape": PATTERNS[norm]}},
                hovertemplate=(
                    f"{labels[norm]}, %{{x}}: %{{y:.4g}}{' %' if percent else ''}<extra></extra>"
                ),
            )
        )
    layout = sized_layout(360)
    layout["barmode"] = "group"
    layout["xaxis"] = sized_axis("")
    layout["yaxis"] = sized_axis(y_title, zeroline=True)
    return go.Figure(data=traces, layout=layout)


def _span(finals: Mapping[str, Mapping]) -> dict:
    values = np.concatenate([np.asarray(d["losses"], dtype=float) for d in finals.values()])
    values = values[np.isfinite(values)]
    if values.size == 0 or np.ptp(values) >= MIN_LOSS_SPAN * 0.8:
        return {}
    middle = (values.max() + values.min()) / 2
    return {"range": [middle - MIN_LOSS_SPAN / 2, middle + MIN_LOSS_SPAN / 2]}


# The loss axis of the seeds figure spans at least this much (nats per byte), so that a gap of
# a few thousandths between two single runs does not fill the whole height.
MIN_LOSS_SPAN = 0.1


def final_loss_figure(
    finals: Mapping[str, Mapping], labels: Mapping[str, str], *, height: int = 380
) -> go.Figure:
    """Each norm's validation loss over its seeds: one marker per seed (side by side), a bar from
    the lowest to the highest, and a black line at the mean (with more than one seed).

    ``finals[norm]`` holds ``seeds`` and ``losses`` (same length) and ``mean``."""
    several = any(len(data["losses"]) > 1 for data in finals.values())
    traces = [
        trace
        for i, (norm, data) in enumerate(finals.items())
        for trace in _seed_traces(i, norm, data, labels, mean=several)
    ]
    layout = sized_layout(height)
    # Two-word names on two lines: three categories fit a phone without turning their labels; with
    # four or more RMSNorm and LayerNorm meet on a phone, and there plotly turns them (its
    # tickangle left to plotly, which turns labels only where they would overlap).
    layout["xaxis"] = _categories("", [labels[norm].replace(" ", "<br>") for norm in finals])
    layout["yaxis"] = sized_axis(labels["loss"], **_span(finals))
    layout["showlegend"] = True
    return go.Figure(data=traces, layout=layout)


def _range_bar(i: int, values: np.ndarray, color: str) -> list[go.Scatter]:
    """A pale bar at x = i from the lowest finite value to the highest (none without one)."""
    shown = values[np.isfinite(values)]
    if not shown.size:
        return []
    bar = go.Scatter(
        x=[i, i],
        y=[shown.min(), shown.max()],
        mode="lines",
        line={"color": color, "width": 10},
        opacity=0.25,
        showlegend=False,
        hoverinfo="skip",
    )
    return [bar]


def _seed_traces(
    i: int, norm: str, data: Mapping, labels: Mapping[str, str], *, mean: bool
) -> list[go.Scatter]:
    """The range bar, the seeds' markers and the mean line of one norm, at x = i."""
    losses = np.asarray(data["losses"], dtype=float)
    color, n = COLORS[norm], losses.size
    traces = _range_bar(i, losses, color)
    traces.append(
        go.Scatter(
            x=i + 0.12 * (np.arange(n) - (n - 1) / 2),
            y=losses,
            mode="markers",
            name=labels[norm],
            marker={"color": color, "symbol": MARKERS[norm], "size": 13},
            customdata=np.asarray(data["seeds"]),
            hovertemplate=(
                f"{labels[norm]}, {labels['seed']} %{{customdata}}: %{{y:.4g}}<extra></extra>"
            ),
        )
    )
    if mean:
        traces.append(
            go.Scatter(
                x=[i - 0.3, i + 0.3],
                y=[data["mean"]] * 2,
                mode="lines",
                name=labels["mean"],
                legendgroup="mean",
                showlegend=i == 0,
                line={"color": "black", "width": 3},
                hovertemplate=f"{labels[norm]}, {labels['mean']}: %{{y:.4g}}<extra></extra>",
            )
        )
    return traces


def _alpha_means(values: np.ndarray, label: str) -> go.Scatter:
    """A short black line at each layer's mean over the seeds."""
    means = np.mean(values, axis=0)
    return go.Scatter(
        x=[x for i in range(values.shape[1]) for x in (i - 0.3, i + 0.3, None)],
        y=[y for m in means for y in (m, m, None)],
        mode="lines",
        name=label,
        line={"color": "black", "width": 3},
        hovertemplate=f"{label}: %{{y:.4g}}<extra></extra>",
    )


def alpha_figure(
    norm: str,
    layers: Sequence[str],
    seeds: Sequence[int],
    values: np.ndarray,
    init: float,
    labels: Mapping[str, str],
    *,
    height: int = 380,
) -> go.Figure:
    """``norm``'s alpha (or shift) at the end of training, by layer (``values``: seeds x layers): a
    bar from the lowest seed to the highest, a marker per seed (side by side), a black line at the
    mean over the seeds (with more than one seed) and a dashed line across at the initial ``init``.

    ``labels`` names "variant", "seed", "mean", "alpha" (the y axis), "init" and "layer" (x axis).
    """
    values = np.asarray(values, dtype=float).reshape(len(seeds), len(layers))
    color, n = COLORS[norm], len(seeds)
    traces = [bar for i in range(len(layers)) for bar in _range_bar(i, values[:, i], color)]
    offsets = 0.12 * (np.arange(n) - (n - 1) / 2)
    traces.append(
        go.Scatter(
            x=np.concatenate([i + offsets for i in range(len(layers))]),
            y=values.T.ravel(),
            mode="markers",
            name=labels["variant"],
            marker={"color": color, "symbol": MARKERS[norm], "size": 12},
            customdata=np.array([[layer, seed] for layer in layers for seed in seeds]),
            hovertemplate=(
                f"%{{customdata[0]}}, {labels['seed']} %{{customdata[1]}}: %{{y:.4g}}"
                "<extra></extra>"
            ),
        )
    )
    if n > 1:
        traces.append(_alpha_means(values, labels["mean"]))
    traces.append(
        go.Scatter(
            x=[-0.5, len(layers) - 0.5],
            y=[init, init],
            mode="lines",
            name=labels["init"],
            line={"color": style.MUTED, "width": 2, "dash": "dash"},
            hovertemplate=f"{labels['init']}: %{{y:.4g}}<extra></extra>",
        )
    )
    layout = sized_layout(height)
    layout["xaxis"] = _categories(labels["layer"], list(layers))
    layout["yaxis"] = sized_axis(labels["alpha"])
    layout["showlegend"] = True
    return go.Figure(data=traces, layout=layout)
