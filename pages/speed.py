"""Speed lab: RMSNorm against LayerNorm and a memory copy, measured on this server."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import available_devices, torch_available
from core.defaults import MAX_WIDTH
from labkit.lock import exclusive
from labs.speed.figures import bandwidth_figure, partial_figure, time_figure
from labs.speed.kernels import PARTIALS, partial_size
from labs.speed.model import (
    MIN_SWEEP_BATCH,
    MIN_SWEEP_WIDTH,
    PAPER_CITATION,
    PAPER_PARTIAL,
    PAPER_SAVING,
    Plan,
    SpeedView,
    plan,
    shape_text,
    speed_view,
    sweep_sizes,
)
from labs.speed.snippet import speed_code
from labs.speed.timing import (
    DTYPES,
    IMPLEMENTATIONS,
    MAX_BATCH,
    MAX_TENSOR_BYTES,
    TIME_CAP_S,
    measure,
)
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, readable, share_box
from ui.i18n import Translator, translator
from ui.params import ChoiceParam, IntParam, LadderParam

# Powers of two from the smallest sweep point to the largest size the lab allows.
WIDTH_LADDER = tuple(
    float(1 << k) for k in range(MIN_SWEEP_WIDTH.bit_length() - 1, MAX_WIDTH.bit_length())
)
BATCH_LADDER = tuple(
    float(1 << k) for k in range(MIN_SWEEP_BATCH.bit_length() - 1, MAX_BATCH.bit_length())
)
# Beyond this many rounds a run at the larger sizes only meets the time cap sooner.
MAX_REPEATS = 15
RESULT_KEY = "_speed_result"
REQUEST_KEY = "_speed_requested"
SWEEPS = ("width", "batch")


PARAMS = (
    ChoiceParam("sweep", "width", SWEEPS),
    LadderParam("d", 4096.0, WIDTH_LADDER),
    LadderParam("batch", 256.0, BATCH_LADDER),
    ChoiceParam("impl", "torch", IMPLEMENTATIONS),
    # Only the devices this server has: a link asking for another gets a notice naming `device`.
    ChoiceParam("device", "cpu", tuple(available_devices()) or ("cpu",)),
    ChoiceParam("dtype", "float32", DTYPES),
    IntParam("repeats", 5, 1, MAX_REPEATS),
)
P = {p.key: p for p in PARAMS}


def controls(tr: Translator) -> dict:
    """The sidebar controls, each bound to the URL under its key."""
    has_torch = torch_available()
    with st.sidebar:
        st.header(tr("common.controls"))
        options = {s: tr(f"speed.sweep_option_{s}") for s in SWEEPS}
        sweep = widgets.labelled_choice(P["sweep"], tr("speed.sweep_label"), options.__getitem__)
        st.caption(tr(f"speed.sweep_{sweep}"))
        widgets.ladder(P["d"], tr("speed.d_label"))
        widgets.ladder(P["batch"], tr("speed.batch_label"))
        if has_torch:
            impl = widgets.choice(P["impl"], tr("speed.impl_label"), kind="segmented")
            st.caption(tr(f"speed.impl_{impl}"))
            if impl == "torch":
                widgets.choice(P["device"], tr("speed.device_label"))
        else:
            st.info(tr("common.torch_missing", options="impl=torch, device"))
        widgets.choice(P["dtype"], tr("speed.dtype_label"))
        widgets.number(P["repeats"], tr("speed.repeats_label"), kind="input", step=1)
        st.caption(tr("speed.repeats_help"))
    state = {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}
    if not has_torch or state["impl"] != "torch":
        state.update(impl="numpy", device="cpu")
    state["d"], state["batch"] = int(state["d"]), int(state["batch"])
    return state


def kernel_names(tr: Translator, labels: dict[str, str]) -> dict[str, str]:
    return {k: tr(f"speed.kernel_{label}") for k, label in labels.items()}


def show_plan(p: Plan, state: dict, tr: Translator) -> None:
    """What Measure will time, and the paper's figures, before anything runs."""
    st.subheader(tr("speed.plan_heading"))
    st.markdown(tr("speed.plan_shapes", shapes=shape_text(p.shapes) or "–"))
    if p.skipped:
        st.caption(
            tr("speed.plan_skipped", mib=MAX_TENSOR_BYTES >> 20, shapes=shape_text(p.skipped))
        )
    names = kernel_names(tr, p.kernels)
    table = pd.DataFrame(
        {tr("speed.col_what"): [tr(f"speed.what_{p.kernels[k]}") for k in p.kernels]},
        index=[names[k] for k in p.kernels],
    )
    table.index.name = tr("speed.col_kernel")
    st.table(table)
    if p.partial_shape is not None:
        ps = ", ".join(fmt.pct(v) for v in p.partials)
        st.markdown(tr("speed.plan_partial", shape=shape_text([p.partial_shape]), ps=ps))
    st.caption(
        tr("speed.plan_limits", mib=MAX_TENSOR_BYTES >> 20, cap=TIME_CAP_S, rounds=state["repeats"])
    )


def show_paper(tr: Translator, view: SpeedView | None) -> None:
    """The paper's figures beside this server's, two to a row (they fit a phone that way)."""
    st.subheader(tr("speed.paper_heading"))
    lo, hi = 1.0 - PAPER_SAVING[1], 1.0 - PAPER_SAVING[0]
    with st.container(horizontal=True, gap="small"):
        st.metric(tr("speed.paper_metric"), tr("speed.paper_value", lo=lo, hi=hi), width="content")
        st.metric(
            tr("speed.paper_partial_metric"),
            tr("speed.paper_partial_value", p_pct=PAPER_PARTIAL),
            width="content",
        )
        for technique in ("composite", "fused"):
            claim = view.claims.get(f"headline_{technique}") if view is not None else None
            if claim is not None:
                stem = claim.key.split("_", 1)[1].rsplit("_", 1)[0]
                st.metric(
                    tr(f"speed.paper_here_{stem}_metric"),
                    tr("speed.times_value", value=claim.fields["ratio"]),
                    width="content",
                )
    st.caption(tr("speed.paper_metrics_caption"))
    st.markdown(tr("speed.paper_text", citation=PAPER_CITATION, lo=lo, hi=hi))


def run_measurement(state: dict, tr: Translator) -> None:
    """Measure now, if no other visitor is; keep the result in this session only."""
    widths, batches = sweep_sizes(state["sweep"], state["d"], state["batch"])
    with exclusive() as acquired:
        if not acquired:
            st.warning(tr("speed.busy"))
            return
        bar = st.progress(0.0, text=tr("speed.progress", done=0, total="…"))

        def report(done: int, total: int) -> None:
            bar.progress(done / total, text=tr("speed.progress", done=done, total=total))

        run = measure(
            widths,
            batches,
            implementation=state["impl"],
            device=state["device"],
            dtype=state["dtype"],
            repeats=state["repeats"],
            progress=report,
        )
        bar.empty()
    st.session_state[RESULT_KEY] = {"state": dict(state), "view": speed_view(run, state["sweep"])}


def show_figures(view: SpeedView, tr: Translator) -> None:
    names = kernel_names(tr, view.run.labels)
    labels = {**names, "size": tr(f"speed.size_{view.swept}")}
    labels |= {k: tr(f"speed.{k}") for k in ("time", "bandwidth")}
    spread = {k: (view.q1_ms[k], view.q3_ms[k]) for k in view.median_ms}
    shapes = [shape_text([s]) for s in view.run.shapes()]
    shape_header = f"{tr('speed.col_batch')} × {tr('speed.col_width')}"
    techniques = [t for t in ("composite", "fused") if f"rms_{t}" in view.median_ms]
    figures = {
        "time": (time_figure(view.axis, view.median_ms, spread, labels, fmt.num), view.median_ms),
        "bandwidth": (bandwidth_figure(view.axis, view.gb_per_s, labels, fmt.num), view.gb_per_s),
    }
    columns = st.columns(2, gap="large")
    for column, (name, (fig, values)) in zip(columns, figures.items(), strict=True):
        with column:
            st.markdown(f"**{tr(f'speed.{name}_heading')}**")
            chart(
                readable(fig),
                key=name,
                title=tr(f"speed.{name}_chart"),
                words=tr.chart_words(view.claims, *(f"{name}_{t}" for t in techniques)),
                table={"shape": shapes, **values},
                headers={"shape": shape_header, **names},
                file_name=f"normlab-speed-{name}.csv",
            )


def show_partial(view: SpeedView, tr: Translator) -> None:
    if not view.partial:
        return
    st.subheader(tr("speed.partial_heading"))
    ps = np.array(PARTIALS)
    ratio = np.array([view.partial[p][0] for p in PARTIALS])
    spread = tuple(np.array([view.partial[p][i] for p in PARTIALS]) for i in (1, 2))
    error = np.array([view.run.partial_error[p] for p in PARTIALS])
    labels = {"p": tr("speed.partial_axis")}
    labels |= {k: tr(f"speed.partial_{k}_axis") for k in ("ratio", "error")}
    chart(
        readable(partial_figure(ps, ratio, spread, error, labels, fmt.pct)),
        key="partial",
        title=tr("speed.partial_chart"),
        words=tr.chart_words(view.claims, "partial_chart"),
        table={"p": [fmt.pct(p, lang=tr.lang) for p in PARTIALS], "ratio": ratio, "error": error},
        headers={"p": "p", **labels},
        file_name="normlab-speed-partial.csv",
        full={"p": ps, "ratio": ratio, "error": error},
    )
    st.markdown(tr.claim(view.claims["partial"]))
    st.caption(tr("speed.partial_paper"))


def number_tables(view: SpeedView, tr: Translator) -> None:
    names = kernel_names(tr, view.run.labels)
    rows = [
        {
            tr("speed.col_batch"): m.batch,
            tr("speed.col_width"): m.width,
            tr("speed.col_kernel"): names[m.kernel],
            tr("speed.col_ms"): fmt.num(m.median_s * 1e3),
            tr("speed.col_q1"): fmt.num(float(np.percentile(m.samples, 25)) * 1e3),
            tr("speed.col_q3"): fmt.num(float(np.percentile(m.samples, 75)) * 1e3),
            tr("speed.col_gbs"): fmt.num(m.gb_per_s),
            tr("speed.col_samples"): len(m.samples),
        }
        for m in view.run.measurements
    ]
    with st.expander(tr("speed.table_heading")):
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="numbers")
        if view.partial:
            width = view.largest[1]
            columns = {"p": [fmt.pct(p) for p in PARTIALS]}
            columns["k"] = [f"{partial_size(p, width)} / {width}" for p in PARTIALS]
            columns["ratio"] = [fmt.num(view.partial[p][0]) for p in PARTIALS]
            columns["error"] = [fmt.pct(view.run.partial_error[p]) for p in PARTIALS]
            frame = pd.DataFrame({tr(f"speed.col_{k}"): v for k, v in columns.items()})
            st.dataframe(frame, hide_index=True, key="partial_numbers")


def show_run(view: SpeedView, tr: Translator) -> None:
    """A run's notes, figures, headlines, the partial chart, why, and its numbers."""
    for slot, show in (("skipped", st.info), ("capped", st.warning)):
        if slot in view.claims:
            show(tr.claim(view.claims[slot]))
    st.caption(tr("speed.run_info", **vars(view.run)))
    if view.largest is None:
        st.error(tr("speed.nothing"))
        return
    show_figures(view, tr)
    st.subheader(tr("speed.headline_heading"))
    for technique in ("composite", "fused"):
        lines = [f"headline_{technique}", f"range_{technique}", f"copy_{technique}"]
        shown = [tr.claim(view.claims[s]) for s in lines if s in view.claims]
        if shown:
            st.markdown("\n\n".join(shown))
    show_partial(view, tr)
    st.subheader(tr("speed.why_heading"))
    st.markdown(tr("speed.why_memory"))
    st.markdown(tr("speed.why_composite"))
    if "rms_fused" in view.median_ms:
        st.markdown(tr("speed.why_fused"))
    st.markdown(tr("speed.why_gpu"))
    number_tables(view, tr)


def main() -> None:
    tr = translator(begin_page("speed", PARAMS))
    state = controls(tr)
    the_plan = plan(
        state["sweep"], state["d"], state["batch"], state["impl"], state["device"], state["dtype"]
    )
    show_plan(the_plan, state, tr)
    # The click is kept in the session state by the callback (a rerun before this line, such as
    # the router's first one, would otherwise drop it) and consumed here, once.
    st.button(
        tr("speed.measure"),
        key="measure",
        type="primary",
        icon=":material/timer:",
        on_click=st.session_state.__setitem__,
        args=(REQUEST_KEY, True),
    )
    if st.session_state.pop(REQUEST_KEY, False):
        run_measurement(state, tr)
    result = st.session_state.get(RESULT_KEY)
    view = result["view"] if result is not None else None
    show_paper(tr, view)
    if view is None:
        st.info(tr("speed.not_started"))
    else:
        if result["state"] != state:
            st.caption(tr("speed.stale"))
        show_run(view, tr)
    code_section(tr, speed_code(state))
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
