"""The training lab's section on the speed question asked fairly (``labs.training.fair_view``):
RMSNorm against LayerNorm with both computed as separate operations and both fused, a step and
the norm layer alone, DyT beside them, and the RMSNorm paper's saving beside each.
Every number comes from the lab's view of ``assets/train/kernels.json``; every sentence is one
of its claims."""

from __future__ import annotations

import streamlit as st

from labs.training.fair import DYT, FAIR_KERNELS, FAIR_NORMS
from labs.training.fair_view import KernelView, shipped_kernel_view
from labs.training.kernels_figures import kernel_bars
from ui.chart import chart
from ui.frame import metric_row, metric_width, readable
from ui.i18n import Translator

# Each chart: the timing it draws, the unit of its values (the axis's text key) and their scale.
CHARTS = {"step": ("training.ms_axis", 1e3), "layer": ("training.fair_us_axis", 1e6)}


@st.cache_resource(max_entries=1, show_spinner=False)
def shipped() -> KernelView:
    """The shipped measurement, read once per server process. Read-only."""
    return shipped_kernel_view()


def _labels(tr: Translator) -> dict[str, str]:
    labels = {norm: tr(f"training.variant_{norm}") for norm in FAIR_NORMS}
    labels[DYT] = tr("training.fair_variant_dyt")
    return labels | {kernel: tr(f"training.fair_kernel_{kernel}") for kernel in FAIR_KERNELS}


def _bars(view: KernelView, labels: dict[str, str], what: str) -> list[dict]:
    """Every bar of a chart: each variant's median in the chart's unit."""
    scale = CHARTS[what][1]
    pairs = [(norm, kernel) for kernel in FAIR_KERNELS for norm in FAIR_NORMS]
    timed = [(norm, labels[kernel], view.timings[(norm, kernel)]) for norm, kernel in pairs]
    if view.dyt is not None:
        timed.append((DYT, labels[DYT], view.dyt))
    return [{"norm": n, "group": g, "value": scale * getattr(t, what).median} for n, g, t in timed]


def _table(bars: list[dict]) -> dict[str, list]:
    """The bars by group, one column per norm (None: no bar there)."""
    groups = list(dict.fromkeys(bar["group"] for bar in bars))
    norms = list(dict.fromkeys(bar["norm"] for bar in bars))
    values = {(bar["norm"], bar["group"]): bar["value"] for bar in bars}
    return {"group": groups, **{n: [values.get((n, g)) for g in groups] for n in norms}}


def _chart(view: KernelView, tr: Translator, labels: dict[str, str], what: str) -> None:
    bars = _bars(view, labels, what)
    st.markdown(f"**{tr(f'training.fair_{what}_heading')}**")
    chart(
        readable(kernel_bars(bars, labels, y_title=tr(CHARTS[what][0]))),
        key=f"fair_{what}",
        title=tr(f"training.fair_{what}_chart"),
        words=tr.claim(view.claims[f"{what}_words"]),
        table=_table(bars),
        headers={"group": tr("training.fair_kernel_label"), **labels},
        file_name=f"normlab-training-fair-{what}.csv",
    )


def _metrics(view: KernelView, tr: Translator) -> None:
    with metric_row():
        for what, kernel in (("step", "ops"), ("step", "fused"), ("layer", "fused")):
            value = tr("training.fair_ratio_value", ratio=view.ratios[(what, kernel)])
            st.metric(tr(f"training.fair_metric_{what}_{kernel}"), value, width=metric_width())
        if view.dyt is not None:
            value = tr("training.ms_value", ms=view.dyt.step_ms)
            st.metric(tr("training.fair_metric_dyt"), value, width=metric_width())


def kernels_section(tr: Translator) -> None:
    """The section: the setup, the ratios, the two charts and what the timings say."""
    view = shipped()
    labels = _labels(tr)
    st.header(tr("training.fair_heading"))
    st.caption(tr("training.fair_setup", **view.setup))
    _metrics(view, tr)
    for column, what in zip(st.columns(2, gap="large"), ("step", "layer"), strict=True):
        with column:
            _chart(view, tr, labels, what)
    st.markdown(tr.claim(view.claims["graph"]))
    for kernel in FAIR_KERNELS:
        st.markdown(f"##### {tr(f'training.fair_{kernel}_heading')}")
        for what in ("layer", "step"):  # where the saving shows, then the whole step
            for slot in (f"{what}_{kernel}", f"{what}_paper_{kernel}"):
                st.markdown(tr.claim(view.claims[slot]))
    for slot in ("share", "dyt", "machine"):
        st.markdown(tr.claim(view.claims[slot]))
