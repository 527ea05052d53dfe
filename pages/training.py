"""Training lab: tiny transformers that differ only in their norm, shipped runs and live ones."""

from __future__ import annotations

import itertools
import time
from collections.abc import Sequence

import streamlit as st

from core.defaults import DEFAULT_LAYER_EPS
from labs.training import lab_view, run_cache, variants_section
from labs.training.claims import drawn_shares
from labs.training.curves import RunCurves, TrainingView
from labs.training.figures import final_loss_figure, loss_figure, per_run_figure
from labs.training.kernels_section import kernels_section
from labs.training.model import NORM_CLASSES, NORM_KINDS
from labs.training.reference import REFERENCE
from labs.training.scurve_section import SCURVE_PARAMS, VIEW, choose_view, scurve_section
from labs.training.sets_section import data_section, placement_section, qknorm_section, say
from labs.training.snippet import training_code
from ui import fmt, widgets
from ui.chart import chart
from ui.code import code_section
from ui.frame import begin_page, metric_row, metric_width, presenting, readable, share_box
from ui.i18n import Translator, translator
from ui.params import BoolParam, IntParam, LadderParam

# The link names of the variants (``none`` alone would read oddly in a link).
VARIANT_KEYS = {"rms": "rms", "layer": "layer", "none": "nonorm", "dyt": "dyt", "derf": "derf"}
DEFAULTS = lab_view.LIVE_DEFAULTS
PARAMS = (
    VIEW,
    # One flag per variant: RMSNorm and LayerNorm on at first.
    *(BoolParam(key, norm in ("rms", "layer")) for norm, key in VARIANT_KEYS.items()),
    LadderParam("width", float(DEFAULTS["width"]), tuple(map(float, lab_view.LIVE_WIDTHS))),
    IntParam("depth", DEFAULTS["depth"], *lab_view.LIVE_DEPTHS),
    LadderParam("eps", DEFAULT_LAYER_EPS, lab_view.LIVE_EPS),
    LadderParam("lr", DEFAULTS["lr"], lab_view.LIVE_LRS),
    IntParam("steps", DEFAULTS["steps"], *lab_view.LIVE_STEPS),
    IntParam("seed", 0, 0, 2**31 - 1),
    *variants_section.ARCHITECTURE_PARAMS,
    *SCURVE_PARAMS,
)
P = {p.key: p for p in PARAMS}
LIVE_KEY = "_training_live"
LIVE_ANCHOR = "train"
# The settings a live run depends on besides its variants, placement and QK norm (or clip).
RUN_SETTINGS = ("width", "depth", "eps", "lr", "steps", "seed", "tau")
# The growing chart is redrawn at most this often: each redraw sends every point again.
DRAW_EVERY_S = 0.5


@st.cache_resource(max_entries=1, show_spinner=False)
def shipped() -> TrainingView:
    return lab_view.reference_view()


def controls(tr: Translator) -> dict:
    """The sidebar controls, each bound to the URL under its key."""
    with st.sidebar:
        st.header(tr("common.controls"))
        st.markdown(f"**{tr('training.variants_label')}**")
        for norm, key in VARIANT_KEYS.items():
            widgets.flag(P[key], tr(f"training.variant_{norm}"))
        variants_section.architecture_controls(tr)
        widgets.ladder(P["width"], tr("training.width_label"))
        widgets.number(P["depth"], tr("training.depth_label"), step=1)
        widgets.ladder(P["eps"], tr("training.eps_label"), help=tr("training.eps_help"))
        widgets.ladder(P["lr"], tr("training.lr_label"))
        widgets.number(P["steps"], tr("training.steps_label"), kind="input", step=10)
        widgets.number(P["seed"], tr("training.seed_label"), kind="input", step=1)
    state = {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}
    state["width"] = int(state["width"])
    return state | {"norms": tuple(n for n, key in VARIANT_KEYS.items() if state[key])}


def figure_labels(tr: Translator, qk_norm: str = "off") -> dict[str, str]:
    """The variants' names (without a block norm, the QK norm it computes) and the charts'."""
    keys = ("validation", "training", "loss", "seed", "mean", "step_axis", "seconds_axis")
    labels = {n: tr(f"training.variant_{n}") for n in NORM_KINDS}
    if qk_norm in ("rms", "layer"):
        labels["none"] = tr("training.variant_none_qk", qk=NORM_CLASSES[qk_norm])
    return labels | {k: tr(f"training.{k}") for k in keys}


def figure_runs(runs: Sequence[RunCurves], x: str) -> list[dict]:
    """The curves as ``labs.training.figures`` draws them, against step or against seconds."""
    return [
        {
            "norm": r.norm,
            "seed": r.seed,
            "train_x": r.train_steps if x == "step" else r.train_seconds,
            "train_y": r.train_loss,
            "val_x": r.val_steps if x == "step" else r.val_seconds,
            "val_y": r.val_loss,
        }
        for r in runs
    ]


def loss_table(view: TrainingView, labels: dict, x: str) -> dict[str, list]:
    """Every point a loss chart draws: its position, the run (variant, kind, seed), the loss."""
    table: dict[str, list] = {x: [], "run": [], "loss": []}
    for run in figure_runs(view.runs, x):
        for kind, prefix in (("validation", "val"), ("training", "train")):
            run_label = f"{labels[run['norm']]}, {labels[kind]}, {labels['seed']} {run['seed']}"
            table[x] += [float(v) for v in run[f"{prefix}_x"]]
            table["run"] += [run_label] * len(run[f"{prefix}_y"])
            table["loss"] += [float(v) for v in run[f"{prefix}_y"]]
    return table


def seed_table(runs: Sequence[dict], labels: dict, mean: dict | None = None) -> dict[str, list]:
    """Bars or markers by seed, one column per variant (None: not drawn); ``mean`` adds a row."""
    seeds = list(dict.fromkeys(run["seed"] for run in runs))
    norms = list(dict.fromkeys(run["norm"] for run in runs))
    values = {(run["norm"], run["seed"]): run["value"] for run in runs}
    table = {"seed": [f"{labels['seed']} {seed}" for seed in seeds]}
    table |= {norm: [values.get((norm, seed)) for seed in seeds] for norm in norms}
    if mean:
        table["seed"].append(labels["mean"])
        for norm in norms:
            table[norm].append(mean[norm])
    return table


def seed_chart(
    view: TrainingView, tr: Translator, labels: dict, fig, key: str, text: str, table: dict
) -> None:
    """A chart of values by seed, ``table`` its data (:func:`seed_table`): ``key`` names its
    widget and, with dashes, its file; ``text`` its title and words."""
    chart(
        readable(fig),
        key=key,
        title=tr(f"training.{text}_chart"),
        words=tr.runs_words(view.claims, text),
        table=table,
        headers={"seed": labels["seed"], **labels},
        file_name=f"normlab-training-{key.replace('_', '-')}.csv",
    )


def curves(view: TrainingView, tr: Translator, labels: dict, key: str) -> None:
    """Loss against step and against training time, side by side, and what they say."""
    left, right = st.columns(2, gap="large")
    for column, x in ((left, "step"), (right, "seconds")):
        with column:
            st.markdown(f"**{tr(f'training.{x}_heading')}**")
            fig = loss_figure(figure_runs(view.runs, x), labels, x_title=labels[f"{x}_axis"])
            chart(
                readable(fig),
                key=f"{key}_{x}",
                title=tr(f"training.loss_{x}_chart"),
                words=tr.runs_words(view.claims, f"loss_{x}"),
                table=loss_table(view, labels, x),
                headers={x: labels[f"{x}_axis"], "run": tr("training.run"), "loss": labels["loss"]},
                file_name=f"normlab-training-{key}-loss-{x}.csv",
            )
    st.caption(tr("training.loss_note"))
    say(tr, view.claims, [f"diverged_{n}" for n in NORM_KINDS] + ["steps", "time"])


def finals(view: TrainingView, tr: Translator, labels: dict, key: str) -> None:
    """The validation loss at the equal step: per norm over its seeds."""
    heading = "final_heading" if view.equal_step else "final_heading_start"  # a run stopped early
    st.subheader(tr(f"training.{heading}", step=view.equal_step))
    with metric_row():
        for norm, summary in view.norms.items():
            with st.container(width=metric_width(), gap=None):
                st.metric(labels[norm], fmt.num(summary.mean_at_step))
                if len(summary.seeds) > 1:
                    lo, hi, n = summary.lowest, summary.highest, len(summary.seeds)
                    st.caption(tr("training.final_range", lo=lo, hi=hi, n=n))
    data = {
        n: {"seeds": s.seeds, "losses": s.at_step, "mean": s.mean_at_step}
        for n, s in view.norms.items()
    }
    seeds = [
        {"norm": n, "seed": seed, "value": float(loss)}
        for n, s in view.norms.items()
        for seed, loss in zip(s.seeds, s.at_step, strict=True)
    ]
    # The chart draws the means as lines where a variant has several seeds.
    several = any(len(s.seeds) > 1 for s in view.norms.values())
    means = {n: s.mean_at_step for n, s in view.norms.items()} if several else None
    fig = final_loss_figure(data, labels)
    seed_chart(view, tr, labels, fig, f"{key}_finals", "finals", seed_table(seeds, labels, means))
    say(tr, view.claims, ["spread", "none", "dyt", "derf", "derf_dyt"])


def timings(view: TrainingView, tr: Translator, labels: dict, key: str) -> None:
    """Median time per step, the norms' share of a forward pass, and the paper beside them."""
    st.subheader(tr("training.time_heading"))
    with metric_row():
        for norm, summary in view.norms.items():
            ms = tr("training.ms_value", ms=summary.median_step_ms)
            st.metric(labels[norm], ms, width=metric_width())
    left, right = st.columns(2, gap="large")
    step_runs = [{"norm": r.norm, "seed": r.seed, "value": r.median_step_ms} for r in view.runs]
    # The norms' share where the sentences give one (the no-norm variant's is no share at all).
    shares = zip(view.runs, drawn_shares(view, view.claims.get("share")), strict=True)
    share_runs = [dict(norm=r.norm, seed=r.seed, value=s) for r, s in shares if r.norm != "none"]
    with left:
        st.markdown(f"**{tr('training.step_time_heading')}**")
        fig = per_run_figure(step_runs, labels, y_title=tr("training.ms_axis"))
        seed_chart(view, tr, labels, fig, f"{key}_step_time", "ms", seed_table(step_runs, labels))
    with right:
        st.markdown(f"**{tr('training.share_heading')}**")
        if any(run["value"] is not None for run in share_runs):
            y_title = tr("training.share_axis")
            fig = per_run_figure(share_runs, labels, y_title=y_title, percent=True)
            # In percent, as the chart draws them (None: no bar).
            percent = [{**run, "value": run["value"] and 100 * run["value"]} for run in share_runs]
            seed_chart(view, tr, labels, fig, f"{key}_share", "share", seed_table(percent, labels))
        else:  # a chart of axes alone: say instead why it has nothing to draw
            st.info(tr("training.share_nothing"))
    later = [slot for slot in view.claims if slot.startswith("machine_later")]
    say(tr, view.claims, ["step_time", "share", "noise", "why", "paper", "machine", *later])


def shipped_section(tr: Translator, labels: dict) -> None:
    st.header(tr("training.shipped_heading"))
    st.caption(tr("training.shipped_setup", **vars(REFERENCE.model), **vars(REFERENCE)))
    view = shipped()
    curves(view, tr, labels, "shipped")
    finals(view, tr, labels, "shipped")
    variants_section.alpha_section(view, tr, "shipped")
    timings(view, tr, labels, "shipped")


def settings_text(state: dict, tr: Translator) -> str:
    variants = ", ".join(figure_labels(tr, state["qk_norm"])[n] for n in state["norms"]) or "–"
    fields = {k: state[k] for k in ("width", "depth", "eps", "lr", "steps", "seed")}
    fields |= variants_section.architecture_names(state, tr)
    return tr("training.live_settings", variants=variants, **fields)


def run_live(state: dict, tr: Translator, labels: dict) -> None:
    """The run with these settings: from the server's finished runs, or the one training now
    with them, or trained in this visitor's turn on the line (``labs.training.run_cache``)."""
    cap = lab_view.live_seconds()
    settings = {k: state[k] for k in (*RUN_SETTINGS, "norms", "placement", "qk_norm")}
    key = run_cache.run_key(settings | {"cap": cap, "work": lab_view.LIVE_WORK})
    same = lab_view.TRAIN_LINE.same(key)
    if same is not None:  # watched as it trains, then served from the kept runs
        st.info(tr("training.same_waiting"))
        bar, chart = st.progress(0.0, text=tr("training.starting")), st.empty()
        deadline = time.monotonic() + cap + 60
        while not same.wait(DRAW_EVERY_S) and time.monotonic() < deadline:
            if (shown := same.shown) is not None:
                draw_progress(bar, chart, shown, tr, labels)
        bar.empty()
        chart.empty()
    records, cached = run_cache.load(key), True
    if records is None:
        waiting = st.empty()
        show_place = lambda ahead: waiting.info(tr("training.in_line", ahead=ahead))  # noqa: E731
        with lab_view.TRAIN_LINE.turn(key, show_place) as turn:
            waiting.empty()
            if not turn:
                st.warning(tr("training.busy", limit=run_cache.LINE_MAX))
                return
            records = run_cache.load(key)  # trained by the visitor just ahead
            if records is None:
                records, cached = train_with_chart(settings, tr, labels, cap, turn), False
                run_cache.store(key, records)
    live = {"state": dict(state), "records": records, "view": None, "cached": cached}
    st.session_state[LIVE_KEY] = live
    finish(live)


def train_with_chart(
    settings: dict, tr: Translator, labels: dict, cap: float, training: run_cache.Training
) -> list[dict]:
    """Train with ``settings`` (``run_live``'s), the growing loss chart drawn as they go (and
    left in ``training`` for the visitors who watch it); the runs' records."""
    configs = lab_view.live_configs(**settings, max_seconds=cap)
    bar = st.progress(0.0, text=tr("training.starting"))
    chart = st.container(key="live_growing").empty()
    started, drawn = time.perf_counter(), [0.0]

    def draw(results) -> None:
        now = time.perf_counter()
        if now - drawn[0] < DRAW_EVERY_S:
            return
        drawn[0] = now
        records = [lab_view.run_record(r) for r in results]
        shown = {"records": records, "progress": vars(lab_view.progress(results, now - started))}
        training.show(shown)
        draw_progress(bar, chart, shown, tr, labels)

    # The models are dropped: only their records are kept.
    records = [lab_view.run_record(r) for r in lab_view.train_live(configs, draw)]
    bar.empty()
    chart.empty()
    return records


# A key for each drawing of a growing chart: a placeholder drawn twice with the same figure in
# one run would otherwise give two elements one id.
DRAWS = itertools.count()


def draw_progress(bar, chart, shown: dict, tr: Translator, labels: dict) -> None:
    """A run's progress bar and its growing loss chart, in this visitor's language: ``shown``
    holds the records of the runs so far and their ``lab_view.progress``."""
    curves, p = lab_view.live_curves(shown["records"]), lab_view.Progress(**shown["progress"])
    text = tr("training.progress", done=p.steps_done, steps=p.steps, seconds=p.seconds)
    bar.progress(p.fraction, text=text)
    runs = figure_runs(curves, "step")
    fig = readable(loss_figure(runs, labels, x_title=labels["step_axis"], x_max=p.steps))
    chart.plotly_chart(fig, key=f"growing_{next(DRAWS)}", alt=tr("training.growing_alt"))


def finish(live: dict) -> None:
    """Turn the session's runs into the page state."""
    if live["view"] is None and live["records"]:
        spread = lab_view.reference_spread(shipped())
        live["view"] = lab_view.training_view(live["records"], reference_spread=spread, live=True)


def live_section(state: dict, tr: Translator, labels: dict) -> None:
    st.header(tr("training.live_heading"), anchor=LIVE_ANCHOR)
    st.caption(tr("training.live_limits", cap=lab_view.live_seconds(), work=lab_view.LIVE_WORK))
    st.caption(tr("training.live_settings_heading") + " " + settings_text(state, tr))
    if not presenting():
        st.caption(tr("training.live_pick"))
    if not state["norms"]:
        st.info(tr("training.no_variant"))
    button = {"key": "train", "type": "primary", "icon": ":material/model_training:"}
    if st.button(tr("training.train"), **button, disabled=not state["norms"]):
        run_live(state, tr, labels)
    live = st.session_state.get(LIVE_KEY)
    if live is not None:
        finish(live)
    if live is None or live["view"] is None:
        st.info(tr("training.not_started"))
        return
    if live["state"] != state:
        st.caption(tr("training.stale", settings=settings_text(live["state"], tr)))
    view, labels = live["view"], figure_labels(tr, live["state"]["qk_norm"])
    if live["cached"]:
        st.caption(tr("training.cached"))
    say(tr, view.claims, ["stopped"])
    curves(view, tr, labels, "live")
    finals(view, tr, labels, "live")
    variants_section.alpha_section(view, tr, "live")
    timings(view, tr, labels, "live")


def main() -> None:
    tr = translator(begin_page("training", PARAMS))
    if choose_view(tr) == "scurve":  # each norm layer's input against its output
        scurve_section(tr)
        share_box(PARAMS, tr.lang)
        return
    state = controls(tr)
    # The live run is the page's last section: on a phone, many screens down.
    st.markdown(f"[{tr('training.live_jump')}](#{LIVE_ANCHOR})")
    labels = figure_labels(tr)
    shipped_section(tr, labels)
    kernels_section(tr)
    placement_section(tr)
    qknorm_section(tr)
    data_section(tr)
    live_section(state, tr, figure_labels(tr, state["qk_norm"]))
    code_section(tr, training_code(), "training.code_caption")
    share_box(PARAMS, tr.lang)


if __name__ == "__main__":
    main()
