"""Explorer: one vector, RMSNorm and LayerNorm side by side, with the geometry."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import streamlit as st

from core import (
    LAYER_FORMULA,
    RMS_FORMULA,
    NormWarning,
    available_devices,
    layer_norm,
    layer_norm_report,
    rms_norm,
    rms_norm_report,
    torch_available,
)
from core.geometry import plane_images, sphere_3d
from core.inputs import (
    DISTRIBUTIONS,
    GAIN_PATTERNS,
    MAX_ABS_VALUE,
    MAX_WIDTH,
    MIN_WIDTH,
    VectorParseError,
    gain_vector,
    make_input,
    parse_vector,
)
from core.stats import IDENTITY_FORMULA, STAT_NAMES, cosine, second_moment_identity, vector_stats
from ui import widgets
from ui.core_text import translate
from ui.export import coordinates_csv, statistics_csv, view_json
from ui.frame import begin_page, save_box, share_box
from ui.i18n import t
from ui.params import (
    ChoiceParam,
    FloatParam,
    IntParam,
    LadderParam,
    TextParam,
    fmt_number,
)
from viz import style
from viz.explorer import coordinates_figure, plane_figure, sphere_figure

EPS_LADDER = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
SCALE_LADDER = (
    0.0,
    1e-4,
    1e-3,
    0.01,
    0.03,
    0.1,
    0.3,
    0.5,
    1.0,
    2.0,
    3.0,
    5.0,
    10.0,
    30.0,
    100.0,
    1e3,
    1e4,
)
DTYPES = ("float64", "float32", "float16", "bfloat16")
# Offsets, gains and biases beyond these bounds teach nothing the edge values do not.
OFFSET_LIMIT = 20.0
GAIN_LIMIT = 4.0

PARAMS = (
    TextParam("x", "", max_len=200_000),
    IntParam("d", 16, MIN_WIDTH, MAX_WIDTH),
    ChoiceParam("dist", "normal", DISTRIBUTIONS),
    IntParam("seed", 0, 0, 2**31 - 1),
    FloatParam("offset", 0.0, -OFFSET_LIMIT, OFFSET_LIMIT),
    LadderParam("scale", 1.0, SCALE_LADDER),
    LadderParam("eps", 1e-5, EPS_LADDER),
    FloatParam("gain", 1.0, -GAIN_LIMIT, GAIN_LIMIT),
    ChoiceParam("gain_pattern", "constant", GAIN_PATTERNS),
    FloatParam("bias", 0.0, -GAIN_LIMIT, GAIN_LIMIT),
    ChoiceParam("backend", "numpy", ("numpy", "torch")),
    # Only the devices this server has; a link asking for another gets a notice.
    ChoiceParam("device", "cpu", tuple(available_devices()) or ("cpu",)),
    ChoiceParam("dtype", "float64", DTYPES),
)
P = {p.key: p for p in PARAMS}


def _to_numpy(a: object) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a.astype(np.float64)
    return a.detach().to("cpu").double().numpy()  # a torch tensor


@st.cache_data(max_entries=128, show_spinner=False)
def compute(
    x: np.ndarray,
    eps: float,
    gain: float,
    gain_pattern: str,
    seed: int,
    bias: float,
    backend: str,
    device: str,
    dtype: str,
) -> dict:
    """Everything the page shows for one setting, computed by the core (cached per setting)."""
    d = x.shape[-1]
    g = gain_vector(d, pattern=gain_pattern, value=gain, seed=seed)
    b = np.full(d, bias)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormWarning)
        if backend == "torch":
            import torch

            kind = getattr(torch, dtype)
            args = [torch.tensor(a, dtype=kind, device=device) for a in (x, g, b)]
            rep_rms = rms_norm_report(args[0], args[1], eps=eps)
            rep_layer = layer_norm_report(args[0], args[1], args[2], eps=eps)
            x_used = _to_numpy(args[0])
        else:
            rep_rms = rms_norm_report(x, g, eps=eps)
            rep_layer = layer_norm_report(x, g, b, eps=eps)
            x_used = x
        # The explanations speak of the normalised vectors before gain and bias, in float64.
        unit_rms = rms_norm(x, eps=eps)
        unit_layer = layer_norm(x, eps=eps)
        plane_gain = gain if gain_pattern == "constant" else 1.0
        plane = plane_images(x, eps_rms=eps, eps_layer=eps, gain=plane_gain)
        sphere = sphere_3d(x, eps_rms=eps, eps_layer=eps, gain=plane_gain) if d == 3 else None
    alerts = list(dict.fromkeys(str(w.message) for w in caught if w.category is NormWarning))
    notes = list(dict.fromkeys(rep_rms.notes + rep_layer.notes))
    y_rms, y_layer = _to_numpy(rep_rms.output), _to_numpy(rep_layer.output)
    result = {
        "x": x_used,
        "gain": g,
        "y_rms": y_rms,
        "y_layer": y_layer,
        "stats": {
            k: vector_stats(v) for k, v in (("x", x_used), ("rms", y_rms), ("layer", y_layer))
        },
        "unit": {"rms": vector_stats(unit_rms), "layer": vector_stats(unit_layer)},
        "cos_rms_x": float(cosine(unit_rms, x)),
        "cos_layer_x": float(cosine(unit_layer, x)),
        "identity": second_moment_identity(x),
        "rms_stat": float(rep_rms.stat.ravel()[0]),
        "layer_stat": float(rep_layer.stat.ravel()[0]),
        "plane": plane,
        "sphere": sphere,
        "alerts": alerts,
        "notes": [n for n in notes if n not in alerts],
    }
    return result


# Below this size a statistic of an O(1) vector is float64 rounding, not a value.
ROUNDING_FLOOR = 1e-12


def fmt(value: float) -> str:
    """Four significant digits, for prose and tables; rounding residue reads as ≈ 0."""
    if value != 0 and abs(value) < ROUNDING_FLOOR:
        return "≈ 0"
    return f"{value:.4g}"


def tex(value: float) -> str:
    """A number for LaTeX: ``1e-5`` becomes ``10^{-5}``, ``3e-8`` becomes ``3 \\times 10^{-8}``."""
    text = fmt_number(value)
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    power = f"10^{{{int(exponent)}}}"
    return power if mantissa == "1" else rf"{mantissa} \times {power}"


def controls(lang: str) -> dict:
    """The sidebar controls; every one is bound to the URL under its key."""
    has_torch = torch_available()
    with st.sidebar:
        st.header(t("common.controls", lang))
        st.subheader(t("explorer.group_input", lang))
        x_text = widgets.text(
            P["x"],
            t("explorer.x_label", lang),
            help=t("explorer.x_help", lang),
        )
        typed = bool(x_text.strip())
        widgets.number(
            P["d"],
            t("explorer.d_label", lang),
            kind="input",
            step=1,
            help=t("explorer.d_help", lang),
            disabled=typed,
        )
        # Option labels are the link's values, so they read the same in every language; the
        # caption says what the chosen one means.
        dist = widgets.choice(P["dist"], t("explorer.dist_label", lang), disabled=typed)
        st.caption(t(f"explorer.dist_{dist}", lang))
        widgets.number(
            P["seed"],
            t("explorer.seed_label", lang),
            kind="input",
            step=1,
            disabled=typed and st.session_state.get("gain_pattern") != "random",
        )
        widgets.number(P["offset"], t("explorer.offset_label", lang), step=0.1)
        widgets.ladder(P["scale"], t("explorer.scale_label", lang))
        st.subheader(t("explorer.group_norm", lang))
        widgets.ladder(P["eps"], t("explorer.eps_label", lang))
        widgets.number(P["gain"], t("explorer.gain_label", lang), step=0.05)
        pattern = widgets.choice(P["gain_pattern"], t("explorer.gain_pattern_label", lang))
        st.caption(t(f"explorer.gain_{pattern}", lang))
        widgets.number(P["bias"], t("explorer.bias_label", lang), step=0.05)
        st.subheader(t("explorer.group_compute", lang))
        if has_torch:
            backend = widgets.choice(
                P["backend"], t("explorer.backend_label", lang), kind="segmented"
            )
            if backend == "torch":
                widgets.choice(P["device"], t("explorer.device_label", lang))
                widgets.choice(P["dtype"], t("explorer.dtype_label", lang))
        else:
            st.info(t("common.torch_missing", lang, options="backend=torch, device, dtype"))
    state = {p.key: st.session_state.get(p.key, p.default) for p in PARAMS}
    if not has_torch or state["backend"] != "torch":
        state.update(backend="numpy", device="cpu", dtype="float64")
    return state


def input_vector(state: dict, lang: str) -> np.ndarray:
    """x from the typed text if it reads, otherwise from the distribution; scale and offset."""
    x_text = state["x"].strip()
    if x_text:
        try:
            typed = parse_vector(x_text)
        except VectorParseError as err:
            message = t(
                f"explorer.x_{err.code}",
                lang,
                token=f"`{err.token.replace('`', '')}`",
                position=err.position,
                count=err.count,
                limit=fmt_number(err.limit),
            )
            st.error(t("explorer.x_error", lang, message=message))
        else:
            x = state["scale"] * typed + state["offset"]
            if np.max(np.abs(x)) <= MAX_ABS_VALUE:
                st.caption(t("explorer.x_active", lang, d=typed.shape[-1]))
                return x
            # Typed values within the limit can still leave it once scaled; their squares would
            # overflow float64 and every statistic would read inf.
            message = t("explorer.x_scaled_too_large", lang, limit=fmt_number(MAX_ABS_VALUE))
            st.error(t("explorer.x_error", lang, message=message))
    return make_input(
        state["d"],
        dist=state["dist"],
        seed=state["seed"],
        offset=state["offset"],
        scale=state["scale"],
    )


def main() -> None:
    lang = begin_page("explorer", PARAMS)
    state = controls(lang)
    x = input_vector(state, lang)
    r = compute(
        x,
        state["eps"],
        state["gain"],
        state["gain_pattern"],
        state["seed"],
        state["bias"],
        state["backend"],
        state["device"],
        state["dtype"],
    )
    d = x.shape[-1]
    sx, s_rms, s_layer = r["stats"]["x"], r["stats"]["rms"], r["stats"]["layer"]

    cols = st.columns(5)
    for col, key, value in zip(
        cols,
        ("metric_rms", "metric_std", "metric_mean", "metric_norm_rms", "metric_norm_layer"),
        (sx.rms, np.sqrt(sx.variance), sx.mean, s_rms.l2, s_layer.l2),
        strict=False,
    ):
        col.metric(t(f"explorer.{key}", lang), fmt(value))

    labels = {
        "input": t("common.input", lang),
        "outputs": t("explorer.coords_outputs", lang),
        "x": "x",
        "rms": t("common.rms_norm", lang),
        "layer": t("common.layer_norm", lang),
        "coordinate": t("common.coordinate", lang),
        "value": t("common.value", lang),
    }
    st.subheader(t("explorer.coords_heading", lang))
    numbers = {
        "d": d,
        "m_rms": fmt(s_rms.mean),
        "m_layer": fmt(s_layer.mean),
        "rms": fmt(r["rms_stat"]),
        "mean": fmt(sx.mean),
        "std": fmt(r["layer_stat"]),
    }
    st.plotly_chart(
        coordinates_figure(r["x"], r["y_rms"], r["y_layer"], labels),
        key="coords",
        config=style.chart_config("normlab-coordinates"),
        alt=t("explorer.coords_alt", lang, **numbers),
    )
    st.caption(t("explorer.coords_caption", lang, **numbers))

    left, right = st.columns(2, gap="large")
    with left:
        st.subheader(t("explorer.stats_heading", lang))
        table = pd.DataFrame(
            {
                labels[k]: [fmt(getattr(r["stats"][k], name)) for name in STAT_NAMES if name != "d"]
                for k in ("x", "rms", "layer")
            },
            index=[t(f"explorer.stat_{name}", lang) for name in STAT_NAMES if name != "d"],
        )
        table.index.name = t("explorer.stat_column", lang)
        st.table(table)
        st.markdown(f"**{t('explorer.identity_heading', lang)}**")
        rms2, var, mean2 = r["identity"]
        st.latex(IDENTITY_FORMULA)
        st.latex(rf"{fmt(rms2)} = {fmt(var)} + {fmt(mean2)}")
    with right:
        st.subheader(t("explorer.formulas_heading", lang))
        eps = state["eps"]
        st.latex(RMS_FORMULA)
        st.latex(rf"\sqrt{{{fmt(sx.second_moment)} + {tex(eps)}}} = {fmt(r['rms_stat'])}")
        st.latex(LAYER_FORMULA)
        st.latex(
            rf"\mu = {fmt(sx.mean)},\quad \sqrt{{{fmt(sx.variance)} + {tex(eps)}}}"
            rf" = {fmt(r['layer_stat'])}"
        )

    st.subheader(t("explorer.geometry_heading", lang))
    plane = r["plane"]
    geo_labels = {
        **labels,
        **{
            k: t(f"explorer.{k}", lang)
            for k in (
                "axis_a",
                "axis_b",
                "circle",
                "ray",
                "x_short",
                "sphere",
                "plane",
                "circle3d",
                "ones",
            )
        },
    }
    left, right = st.columns(2, gap="large")
    with left:
        st.markdown(f"**{t('explorer.plane_title', lang)}**")
        (xa, xb), (ra, rb), (la, lb) = plane.point, plane.rms, plane.layer
        st.plotly_chart(
            plane_figure(plane.point, plane.rms, plane.layer, plane.radius, geo_labels),
            key="plane",
            config=style.chart_config("normlab-plane"),
            alt=t(
                "explorer.plane_alt",
                lang,
                xa=fmt(xa),
                xb=fmt(xb),
                ra=fmt(ra),
                rb=fmt(rb),
                la=fmt(la),
                lb=fmt(lb),
                radius=fmt(plane.radius),
            ),
        )
        angle = float(np.degrees(np.arctan2(abs(xa), xb)))
        st.caption(
            t(
                "explorer.plane_caption",
                lang,
                angle=f"{angle:.1f}",
                a=fmt(xa),
                r_rms=fmt(np.hypot(ra, rb)),
                r_layer=fmt(np.hypot(la, lb)),
                radius=fmt(plane.radius),
            )
        )
        if state["gain_pattern"] != "constant" or state["bias"] != 0:
            st.caption(t("explorer.plane_gain_note", lang))
    with right:
        sphere = r["sphere"]
        if sphere is None:
            st.info(t("explorer.sphere_hint", lang))
        else:
            st.markdown(f"**{t('explorer.sphere_title', lang)}**")
            st.plotly_chart(
                sphere_figure(
                    sphere.plane,
                    sphere.circle,
                    sphere.sphere,
                    (sphere.point, sphere.rms, sphere.layer),
                    geo_labels,
                ),
                key="sphere",
                config=style.chart_config("normlab-sphere"),
                alt=t("explorer.sphere_alt", lang),
            )
            st.caption(
                t(
                    "explorer.sphere_caption",
                    lang,
                    radius=fmt(sphere.radius),
                    r_rms=fmt(np.linalg.norm(sphere.rms)),
                    r_layer=fmt(np.linalg.norm(sphere.layer)),
                )
            )

    st.subheader(t("explorer.why_heading", lang))
    u_rms, u_layer = r["unit"]["rms"], r["unit"]["layer"]
    share = mean2 / rms2 if rms2 > 0 else 0.0
    st.markdown(
        t(
            "explorer.why_scale",
            lang,
            rms=fmt(sx.rms),
            cos_x=fmt(r["cos_rms_x"]),
            cos_layer_x=fmt(r["cos_layer_x"]),
        )
    )
    st.markdown(
        t(
            "explorer.why_offset",
            lang,
            m_rms=fmt(u_rms.mean),
            cos_rms=fmt(u_rms.cos_ones),
            m_layer=fmt(u_layer.mean),
            cos_layer=fmt(u_layer.cos_ones),
        )
    )
    st.markdown(
        t(
            "explorer.why_moment",
            lang,
            rms2=fmt(rms2),
            var=fmt(var),
            mean2=fmt(mean2),
            share=f"{100 * share:.1f} %",
        )
    )
    for alert in r["alerts"]:
        st.warning(translate(alert, lang))
    if r["notes"]:
        with st.expander(t("explorer.notes_heading", lang)):
            st.markdown("\n".join(f"- {note}" for note in r["notes"]))

    arrays = {"x": r["x"], "gain": r["gain"], "rmsnorm": r["y_rms"], "layernorm": r["y_layer"]}
    stats = {
        name: {k: v for k, v in r["stats"][key].as_dict().items() if k != "d"}
        for name, key in (("x", "x"), ("rmsnorm", "rms"), ("layernorm", "layer"))
    }
    save_box(
        "explorer",
        PARAMS,
        lang,
        [
            (
                "common.save_coordinates",
                lambda: coordinates_csv(arrays),
                "normlab-coordinates.csv",
                "text/csv",
            ),
            (
                "common.save_statistics",
                lambda: statistics_csv(stats),
                "normlab-statistics.csv",
                "text/csv",
            ),
            (
                "common.save_json",
                lambda: view_json("explorer", state, arrays, stats),
                "normlab-view.json",
                "application/json",
            ),
            (
                "common.save_figure",
                lambda: coordinates_figure(r["x"], r["y_rms"], r["y_layer"], labels).to_html(
                    include_plotlyjs=True, full_html=True
                ),
                "normlab-coordinates.html",
                "text/html",
            ),
        ],
    )
    share_box(PARAMS, lang)


if __name__ == "__main__":
    main()
