"""The training lab's sections on the three sets beyond the two norms (``labs.training.sets_view``):
where the norm sits, QK norm against the learning rate, and DyT on little data and on more.

``pages/training.py`` calls :func:`placement_section`, :func:`qknorm_section` and
:func:`data_section` after the shipped runs. Every number comes from the lab's view of
``assets/train/placement.json``, ``qknorm.json`` and ``data.json``; every sentence is one of its
claims."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import streamlit as st

from labs.training.sets_claims import NAMES
from labs.training.sets_figures import spread_figure
from labs.training.sets_view import (
    DataView,
    PlacementView,
    QKNormView,
    shipped_data_view,
    shipped_placement_view,
    shipped_qknorm_view,
)
from ui import fmt
from ui.chart import chart
from ui.frame import readable
from ui.i18n import Translator


@st.cache_resource(max_entries=3, show_spinner=False)
def shipped(name: str) -> PlacementView | QKNormView | DataView:
    """The shipped set ``name``, read once per server process. Read-only."""
    views = {"placement": shipped_placement_view, "qknorm": shipped_qknorm_view}
    return (views | {"data": shipped_data_view})[name]()


def _series(
    tr: Translator, kind: str, name: str, x: np.ndarray, grid: np.ndarray
) -> dict[str, object]:
    """A variant's seeds (rows of ``grid``) as the figure's band and mean."""
    band = tr("training_sets.seeds_band", name=name)
    spread = {"lo": grid.min(axis=0), "hi": grid.max(axis=0), "mean": grid.mean(axis=0)}
    return {"kind": kind, "name": name, "band": band, "x": x, **spread}


def _table(
    x_key: str, value_key: str, lines: Sequence[tuple[str, Sequence, Sequence]]
) -> dict[str, list]:
    """Every seed's values a chart's band spans: position, the run (variant, seed), value."""
    table: dict[str, list] = {x_key: [], "run": [], value_key: []}
    for label, x, values in lines:
        table[x_key] += [float(v) for v in x]
        table["run"] += [label] * len(values)
        table[value_key] += [float(v) for v in values]
    return table


def say(tr: Translator, claims: Mapping, slots: Sequence[str]) -> None:
    """The sentences of ``slots`` that ``claims`` holds, in that order."""
    for slot in slots:
        if slot in claims:
            st.markdown(tr.claim(claims[slot]))


def _spread_chart(
    view: PlacementView | QKNormView | DataView,
    tr: Translator,
    stems: tuple[str, str],
    what: str,
    x: np.ndarray,
    variants: Mapping[str, tuple[str, Sequence[int], np.ndarray]],
    columns: Mapping[str, str],
    **axes: object,
) -> None:
    """The chart ``what`` of a set (``stems``: its texts' and its file's, "qk" and "qknorm"):
    each variant's seeds (variant: its name, the seeds, their rows against ``x``) as a band and
    a mean line. ``columns``: the table's position and value, each with its header; ``axes``:
    :func:`spread_figure`'s titles and scales."""
    series = [_series(tr, v, name, x, grid) for v, (name, _, grid) in variants.items()]
    lines = [
        (f"{name}, {tr('training.seed')} {seed}", x, row)
        for name, seeds, grid in variants.values()
        for seed, row in zip(seeds, grid, strict=True)
    ]
    (x_key, x_header), (y_key, y_header) = columns.items()
    st.markdown(f"**{tr(f'training_sets.{stems[0]}_{what}_heading')}**")
    chart(
        readable(spread_figure(series, **axes)),
        key=f"sets_{stems[0]}_{what}",
        title=tr(f"training_sets.{stems[0]}_{what}_chart"),
        words=tr.runs_words(view.claims, what),
        table=_table(x_key, y_key, lines),
        headers={x_key: x_header, "run": tr("training.run"), y_key: y_header},
        file_name=f"normlab-training-{stems[1]}-{what}.csv",
    )


def _placement_chart(view: PlacementView, tr: Translator, what: str) -> None:
    """The validation loss against the step, or the stream's RMS against the position."""
    if what == "loss":
        x, grids, step = view.val_steps, view.val_loss, tr("training.step_axis")
        columns = {"step": step, "loss": tr("training.loss")}
        axes = {"x_title": step, "y_title": columns["loss"]}
    else:
        x, grids = np.arange(view.n_layer + 1), view.hidden_rms
        columns = {"position": tr("training_sets.place_position")}
        columns["rms"] = tr("training_sets.place_rms_axis")
        axes = {"x_title": tr("training_sets.place_position_axis"), "y_title": columns["rms"]}
        axes["whole_x"] = True
    variants = {p: (NAMES[p], view.seeds[p], grids[p]) for p in view.placements}
    _spread_chart(view, tr, ("place", "placement"), what, x, variants, columns, log_y=True, **axes)


def _section(tr: Translator, stem: str, view, chart, columns, after=(), **setup) -> None:
    """A set's section: heading, setup (``view.setup`` and ``setup``), what to look for, and two
    columns, each ``chart(view, tr, what)`` for its (what, slots) of ``columns`` with the slots'
    sentences under it; then the sentences of the slots ``after``."""
    st.header(tr(f"training_sets.{stem}_heading"))
    st.caption(tr(f"training_sets.{stem}_setup", **view.setup, **setup))
    st.markdown(tr(f"training_sets.{stem}_why", **view.setup))
    for column, (what, slots) in zip(st.columns(2, gap="large"), columns, strict=True):
        with column:
            chart(view, tr, what)
            say(tr, view.claims, slots)
    say(tr, view.claims, after)


def placement_section(tr: Translator) -> None:
    """The placement set: its setup, the two charts and what the runs say."""
    view = shipped("placement")
    slots = [f"{kind}_{p}" for kind in ("diverged", "depth") for p in view.placements]
    slots += [slot for slot in view.claims if slot.startswith(("growth_", "loss_"))]
    _section(tr, "place", view, _placement_chart, [("loss", []), ("rms", [])], slots)


def _qk_chart(view: QKNormView, tr: Translator, what: str) -> None:
    """The largest attention logit, or the final loss, against the learning rate."""
    grids = view.peak_logit if what == "logit" else view.final_loss
    lr, y_title = tr("training_sets.qk_lr_axis"), tr(f"training_sets.qk_{what}_axis")
    variants = {m: (tr(f"training_sets.qk_mode_{m}"), view.seeds, grids[m]) for m in view.modes}
    axes = {"x_title": lr, "y_title": y_title, "log_x": True, "log_y": what == "logit"}
    columns = {"lr": lr, what: y_title}
    _spread_chart(view, tr, ("qk", "qknorm"), what, view.lrs, variants, columns, **axes)


def qknorm_section(tr: Translator) -> None:
    """The QK-norm set: its setup, why QK norm bounds a logit, both charts, what the runs say."""
    view = shipped("qknorm")
    losses = [s for s in view.claims if s.startswith(("rms_loss", "clip_loss"))] + ["best"]
    columns = [("logit", ["rise", "blowup", "clip"]), ("loss", losses)]
    _section(tr, "qk", view, _qk_chart, columns, lrs=fmt.vector(view.lrs, tr.lang))


def _data_chart(view: DataView, tr: Translator, what: str) -> None:
    """The validation loss of each norm on each slice against the step, or DyT's saturated
    share (in %) layer by layer on each slice."""

    def name(norm: str, slice_: str) -> str:
        return tr("training_sets.data_run", name=NAMES[norm], size=view.sizes[slice_])

    if what == "loss":
        x, step = view.val_steps, tr("training.step_axis")
        runs = {k: (name(*k.split("_")), view.seeds, grid) for k, grid in view.val_loss.items()}
        columns = {"step": step, "loss": tr("training.loss")}
        axes = {"x_title": step, "y_title": columns["loss"], "log_y": True}
    else:
        x = np.arange(1, view.saturated["small"].shape[1] + 1)
        runs = {s: (name("dyt", s), view.seeds, 100 * view.saturated[s]) for s in view.saturated}
        columns = {"layer": tr("training_sets.data_layer")}
        columns["sat"] = tr("training_sets.data_sat_axis")
        axes = {"x_title": tr("training_sets.data_layer_axis"), "y_title": columns["sat"]}
        axes["whole_x"] = True
    _spread_chart(view, tr, ("data", "data"), what, x, runs, columns, **axes)


def data_section(tr: Translator) -> None:
    """The data set: its setup, what to look for, the two charts and what the runs say."""
    view = shipped("data")
    columns = [("loss", ["gap_small", "gap_large", "sign"]), ("sat", ["saturation"])]
    after = [f"{kind}_{slice_}" for kind in ("best", "floor") for slice_ in ("small", "large")]
    after += [slot for slot in view.claims if slot.startswith("rise_")]
    _section(tr, "data", view, _data_chart, columns, after)
