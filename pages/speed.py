"""Speed lab: RMSNorm against LayerNorm and a memory copy, measured on this server."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core import available_devices, torch_available
from core.speedlab import (
    DTYPES,
    IMPLEMENTATIONS,
    MAX_BATCH,
    MAX_TENSOR_BYTES,
    MAX_WIDTH,
    MIN_SWEEP_BATCH,
    MIN_SWEEP_WIDTH,
    PAPER_CITATION,
    PAPER_SAVING,
    TIME_CAP_S,
    SpeedRun,
    exclusive,
    measure,
    saving,
    sweep_points,
)
from ui import widgets
from ui.frame import begin_page, share_box
from ui.i18n import t
from ui.params import ChoiceParam, IntParam, LadderParam, fmt_number
from viz.speed import bandwidth_figure, time_figure

# Powers of two from the smallest sweep point to the largest size the lab allows.
WIDTH_LADDER = tuple(
    float(1 << k) for k in range(MIN_SWEEP_WIDTH.bit_length() - 1, MAX_WIDTH.bit_length())
)
BATCH_LADDER = tuple(
    float(1 << k) for k in range(MIN_SWEEP_BATCH.bit_length() - 1, MAX_BATCH.bit_length())
)
# Beyond this many repeats a run at the larger sizes only meets the time cap sooner.
MAX_REPEATS = 15
RESULT_KEY = "_speed_result"

PARAMS = (
    ChoiceParam("sweep", "width", ("width", "batch")),
    LadderParam("d", 4096.0, WIDTH_LADDER),
    LadderParam("batch", 256.0, BATCH_LADDER),
    ChoiceParam("impl", "torch", IMPLEMENTATIONS),
    ChoiceParam("device", "cpu", ("cpu", "cuda")),
    ChoiceParam("dtype", "float32", DTYPES),
    IntParam("repeats", 5, 1, MAX_REPEATS),
)
P = {p.key: p for p in PARAMS}


def controls(lang: str) -> dict:
    """The sidebar controls, each bound to the URL under its key."""
    has_torch = torch_available()
    with st.sidebar:
        st.header(t("common.controls", lang))
        sweep = widgets.choice(P["sweep"], t("speed.sweep_label", lang), kind="segmented")
        st.caption(t(f"speed.sweep_{sweep}", lang))
        widgets.ladder(P["d"], t("speed.d_label", lang))
        widgets.ladder(P["batch"], t("speed.batch_label", lang))
        if has_torch:
            impl = widgets.choice(P["impl"], t("speed.impl_label", lang), kind="segmented")
            st.caption(t(f"speed.impl_{impl}", lang))
            if impl == "torch":
                devices = tuple(available_devices())
                if st.session_state.get("device") not in devices:
                    st.session_state["device"] = "cpu"
                widgets.choice(P["device"], t("speed.device_label", lang), options=devices)
        else:
            st.info(t("common.torch_missing", lang, options="impl=torch, device"))
        widgets.choice(P["dtype"], t("speed.dtype_label", lang))
        widgets.number(
            P["repeats"],
            t("speed.repeats_label", lang),
            kind="input",
            step=1,
            help=t("speed.repeats_help", lang),
        )
    state = {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}
    if not has_torch or state["impl"] != "torch":
        state.update(impl="numpy", device="cpu")
    state["d"], state["batch"] = int(state["d"]), int(state["batch"])
    return state


def sizes(state: dict) -> tuple[list[int], list[int]]:
    """The widths and batches of the sweep: one of them swept in powers of two, one fixed."""
    if state["sweep"] == "width":
        return sweep_points(MIN_SWEEP_WIDTH, state["d"]), [state["batch"]]
    return [state["d"]], sweep_points(MIN_SWEEP_BATCH, state["batch"])


def run_measurement(state: dict, lang: str) -> None:
    """Measure now, if no other visitor is; keep the result in this session only."""
    widths, batches = sizes(state)
    with exclusive() as acquired:
        if not acquired:
            st.warning(t("speed.busy", lang))
            return
        bar = st.progress(0.0, text=t("speed.progress", lang, done=0, total="…"))

        def report(done: int, total: int) -> None:
            bar.progress(done / total, text=t("speed.progress", lang, done=done, total=total))

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
    st.session_state[RESULT_KEY] = {"state": dict(state), "run": run}


def fmt(value: float) -> str:
    """Three significant digits: timings are not reproducible beyond that."""
    return f"{value:.3g}"


def shape_text(shapes: tuple[tuple[int, int], ...]) -> str:
    return ", ".join(f"{b} × {w}" for b, w in shapes)


def show_run(run: SpeedRun, used: dict, lang: str) -> None:
    """Figures, the paper's claim beside the measured saving, the explanation, the table."""
    cap = fmt_number(run.time_cap_s)
    if run.skipped:
        st.info(
            t("speed.skipped", lang, mib=MAX_TENSOR_BYTES >> 20, shapes=shape_text(run.skipped))
        )
    if not run.complete:
        st.warning(t("speed.capped", lang, cap=cap, shapes=shape_text(run.unmeasured)))
    shapes = run.shapes()
    if not shapes:
        st.error(t("speed.nothing", lang))
        return
    st.caption(
        t(
            "speed.run_info",
            lang,
            impl=run.implementation,
            device=run.device,
            dtype=run.dtype,
            threads=run.threads,
            repeats=run.repeats,
            elapsed=f"{run.elapsed_s:.2f}",
        )
    )

    swept = 1 if used["sweep"] == "width" else 0
    axis = np.array([shape[swept] for shape in shapes])
    kernels = tuple(run.at(*shapes[0]))
    per_kernel = {k: [run.at(*s)[k] for s in shapes] for k in kernels}
    labels = {k: t(f"speed.kernel_{k}", lang) for k in kernels}
    labels.update(
        size=t(f"speed.size_{used['sweep']}", lang),
        time=t("speed.time", lang),
        bandwidth=t("speed.bandwidth", lang),
    )
    largest = run.at(*shapes[-1])
    big = {
        "size": labels["size"],
        "largest": f"{shapes[-1][0]} × {shapes[-1][1]}",
        **{f"{k}_ms": fmt(largest[k].median_s * 1e3) for k in kernels},
        **{f"{k}_gbs": fmt(largest[k].gb_per_s) for k in kernels},
        **{f"{k}_x": fmt(largest[k].vs_copy) for k in kernels},
    }

    left, right = st.columns(2, gap="large")
    with left:
        st.markdown(f"**{t('speed.time_heading', lang)}**")
        times = {k: np.array([m.median_s * 1e3 for m in v]) for k, v in per_kernel.items()}
        st.plotly_chart(
            time_figure(axis, times, labels), key="time", alt=t("speed.time_alt", lang, **big)
        )
    with right:
        st.markdown(f"**{t('speed.bandwidth_heading', lang)}**")
        rates = {k: np.array([m.gb_per_s for m in v]) for k, v in per_kernel.items()}
        st.plotly_chart(
            bandwidth_figure(axis, rates, labels),
            key="bandwidth",
            alt=t("speed.bandwidth_alt", lang, **big),
        )
    st.caption(t("speed.bandwidth_caption", lang, **big))

    st.subheader(t("speed.claim_heading", lang))
    savings = [
        100 * saving(r.median_s, y.median_s)
        for r, y in zip(per_kernel["rms"], per_kernel["layer"], strict=True)
    ]
    measured = savings[-1]
    lo, hi = (100 * s for s in PAPER_SAVING)
    cols = st.columns(4 if "rms_fast" in kernels else 3)
    cols[0].metric(
        t("speed.paper_metric", lang), t("speed.paper_value", lang, lo=f"{lo:.0f}", hi=f"{hi:.0f}")
    )
    cols[1].metric(
        t("speed.measured_metric", lang), t("speed.percent", lang, value=f"{measured:.0f}")
    )
    cols[2].metric(
        t("speed.range_metric", lang),
        t("speed.percent_range", lang, lo=f"{min(savings):.0f}", hi=f"{max(savings):.0f}"),
    )
    if "rms_fast" in kernels:
        fast = 100 * saving(largest["rms_fast"].median_s, largest["layer"].median_s)
        cols[3].metric(t("speed.fast_metric", lang), t("speed.percent", lang, value=f"{fast:.0f}"))
    st.markdown(
        t(
            "speed.claim_text",
            lang,
            citation=PAPER_CITATION,
            largest=big["largest"],
            measured=f"{measured:.0f}",
            lo=f"{min(savings):.0f}",
            hi=f"{max(savings):.0f}",
        )
    )

    st.subheader(t("speed.why_heading", lang))
    st.markdown(t("speed.why_memory", lang))
    if run.implementation == "numpy":
        st.markdown(t("speed.why_numpy", lang))
    else:
        st.markdown(t("speed.why_fused", lang, **big))
        if "rms_fast" in kernels:
            st.markdown(t("speed.why_fast", lang, **big))
    st.markdown(t("speed.why_gpu", lang))

    with st.expander(t("speed.table_heading", lang)):
        table = pd.DataFrame(
            [
                {
                    t("speed.col_batch", lang): m.batch,
                    t("speed.col_width", lang): m.width,
                    t("speed.col_kernel", lang): labels[m.kernel],
                    t("speed.col_ms", lang): fmt(m.median_s * 1e3),
                    t("speed.col_gbs", lang): fmt(m.gb_per_s),
                    t("speed.col_vs_copy", lang): fmt(m.vs_copy),
                    t("speed.col_samples", lang): m.samples,
                }
                for m in run.measurements
            ]
        )
        st.dataframe(table, hide_index=True, key="numbers")


def main() -> None:
    lang = begin_page("speed", PARAMS)
    state = controls(lang)
    st.caption(t("speed.limits", lang, mib=MAX_TENSOR_BYTES >> 20, cap=fmt_number(TIME_CAP_S)))
    if st.button(t("speed.measure", lang), key="measure", type="primary", icon=":material/timer:"):
        run_measurement(state, lang)
    result = st.session_state.get(RESULT_KEY)
    if result is None:
        st.info(t("speed.not_started", lang))
    else:
        if result["state"] != state:
            st.caption(t("speed.stale", lang))
        show_run(result["run"], result["state"], lang)
    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
