"""The S-curve view's sentences (``/training?view=scurve``), rechecked from the shipped
checkpoints through a forward pass and a fit written here.

Each checkpoint's tensors are read with ``safetensors`` in float64 and its config from the JSON
beside it; ``norm_inputs`` runs the text through the model (embeddings, causal attention with an
explicit mask, GELU MLP, the norms from ``torch.nn.functional``) and keeps what enters every norm
layer, never calling ``labs.training``. The output before the gain is ``oracle.f_norm``.

The fit is another method than the page's Levenberg-Marquardt: for each α the best A is
closed-form (:math:`A = \\sum y t / \\sum t^2`, :math:`t = \\tanh(\\alpha x)`), and α is the
best point of a logarithmic grid, refined by a golden-section search; R² against the mean.
The page reads float32 activations, this check float64 ones, so the two fits agree to
``FIT_RTOL``, and a verdict within that of its threshold may go either way.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st
from safetensors.torch import load_file
from scipy import optimize, special

from labkit.claims import Claim
from labs.training.activations import DEFAULT_TEXT
from labs.training.scurve import FIT_FORMS, FLAT_REACH, GOOD_FIT, LINE_TIE, LINEAR_REACH, SAMPLE
from labs.training.scurve_view import scurve_view
from tests.claims.oracle import check_lines_words, f_norm

CHECKPOINTS = Path(__file__).resolve().parents[2] / "assets" / "train"
SEEDS = (0, 1, 2)
NORMS = {"RMSNorm": "rms", "LayerNorm": "layer"}
STATES = st.sampled_from([{"seed": seed} for seed in SEEDS])
# Between this check's float64 reading and fit and the page's float32 reading and its search:
# α, A, k and the ratios relative, R² and shares absolute.
FIT_RTOL = 2e-4
R2_ATOL = 2e-6
# The α grid: from a line (|α·x| at most 1e-3 over the data) to a step (1e3), points per
# decade; then a golden-section search in log10 α down to this width (α to 2e-7 relative).
GRID_DECADES, GRID_STEPS = (-3, 3), 10
GOLDEN_TOL = 1e-7


# The page's view of each seed, computed once (it reads and fits both models).
_VIEWS: dict[int, object] = {}


def view(state: dict):
    if state["seed"] not in _VIEWS:
        _VIEWS[state["seed"]] = scurve_view(seed=state["seed"])
    return _VIEWS[state["seed"]]


# --- The models, run here ------------------------------------------------------------------------


def load(norm: str, seed: int) -> tuple[dict, dict]:
    path = CHECKPOINTS / f"{norm}-seed{seed}.safetensors"
    tensors = {k: v.double() for k, v in load_file(str(path)).items()}
    return tensors, json.loads(path.with_suffix(".json").read_text())


def _norm(w: dict, cfg: dict, name: str, h: torch.Tensor) -> torch.Tensor:
    d = (cfg["n_embd"],)
    if cfg["norm"] == "layer":
        return F.layer_norm(h, d, w[f"{name}.weight"], w[f"{name}.bias"], cfg["eps"])
    return F.rms_norm(h, d, w[f"{name}.weight"], cfg["eps"])


def _attend(w: dict, cfg: dict, block: str, z: torch.Tensor) -> torch.Tensor:
    """Causal self-attention of one row z (t, d): every head at once, the future masked out."""
    t, d, heads = z.shape[0], cfg["n_embd"], cfg["n_head"]
    qkv = torch.einsum("td,ed->te", z, w[f"{block}.attn.c_attn.weight"])
    q, k, v = (part.reshape(t, heads, d // heads) for part in qkv.split(d, dim=-1))
    scores = torch.einsum("qhc,khc->hqk", q, k) / math.sqrt(d // heads)
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    weights = scores.where(allowed, torch.tensor(-math.inf, dtype=scores.dtype)).softmax(-1)
    mixed = torch.einsum("hqk,khc->qhc", weights, v).reshape(t, d)
    return mixed @ w[f"{block}.attn.c_proj.weight"].T


def norm_inputs(w: dict, cfg: dict, text: str) -> dict[str, np.ndarray]:
    """What enters each norm layer while the model reads ``text`` in rows of its block size:
    name -> (bytes, d), float64."""
    ids = torch.tensor(list(text.encode("utf-8")), dtype=torch.long)
    seen: dict[str, list[torch.Tensor]] = defaultdict(list)
    with torch.no_grad():
        for row in ids.split(cfg["block_size"]):
            h = w["wte.weight"][row] + w["wpe.weight"][: row.numel()]
            for i in range(cfg["n_layer"]):
                block = f"blocks.{i}"
                seen[f"{block}.ln_1"].append(h)
                h = h + _attend(w, cfg, block, _norm(w, cfg, f"{block}.ln_1", h))
                seen[f"{block}.ln_2"].append(h)
                hidden = F.gelu(_norm(w, cfg, f"{block}.ln_2", h) @ w[f"{block}.mlp.c_fc.weight"].T)
                h = h + hidden @ w[f"{block}.mlp.c_proj.weight"].T
            seen["ln_f"].append(h)
    return {name: torch.cat(parts).numpy() for name, parts in seen.items()}


# --- The fit, by grid -----------------------------------------------------------------------------


def _best_amplitude(alpha: float, x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(A, residual sum of squares) of the best A·tanh(alpha·x) for this alpha."""
    t = np.tanh(alpha * x)
    amplitude = float(t @ y) / float(t @ t)
    return amplitude, float(np.sum((y - amplitude * t) ** 2))


def grid_fit(x: np.ndarray, y: np.ndarray) -> dict:
    """The least-squares A·tanh(α·x), α > 0: the best point of a log grid, then a golden-section
    search between its neighbours; the line k·x in closed form; R² of both; whether the best α
    lies inside the grid (a least-squares tanh exists)."""
    top = float(np.max(np.abs(x)))
    total = float(np.sum((y - y.mean()) ** 2))
    lo, hi = GRID_DECADES
    logs = np.linspace(lo, hi, (hi - lo) * GRID_STEPS + 1) - math.log10(top)

    def error(log_alpha: float) -> float:
        return _best_amplitude(10.0**log_alpha, x, y)[1]

    errors = [error(g) for g in logs]
    best = int(np.argmin(errors))
    inside = 0 < best < len(logs) - 1
    a, b = logs[max(best - 1, 0)], logs[min(best + 1, len(logs) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = error(c), error(d)
    while b - a > GOLDEN_TOL:
        if fc <= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = error(c)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = error(d)
    alpha = 10.0 ** ((a + b) / 2)
    amplitude, residual = _best_amplitude(alpha, x, y)
    slope = float(x @ y) / float(x @ x)
    return {
        "alpha": alpha,
        "amplitude": amplitude,
        "r2": 1.0 - residual / total,
        "slope": slope,
        "line_r2": 1.0 - float(np.sum((y - slope * x) ** 2)) / total,
        "reach": alpha * top,
        # How far each side of 0 reaches along the curve: an S needs both arms in the data.
        "reach_neg": -alpha * float(np.min(x)),
        "reach_pos": alpha * float(np.max(x)),
        "flat": float(np.mean(alpha * np.abs(x) >= FLAT_REACH)),
        "inside": inside,
        "x": x,
        "y": y,
    }


# Derf's curve A·erf(α·x + s): the shifts of the starting grid (|s| well past the page's fits,
# which stay within 0.02), then a Nelder-Mead search over (log10 α, s) with A in closed form.
SHIFT_GRID = np.linspace(-0.25, 0.25, 11)


def _erf_error(log_alpha: float, shift: float, x: np.ndarray, y: np.ndarray) -> tuple:
    """(A, residual sum of squares) of the best A·erf(α·x + s) for this α and s."""
    e = special.erf(10.0**log_alpha * x + shift)
    amplitude = float(e @ y) / float(e @ e)
    return amplitude, float(np.sum((y - amplitude * e) ** 2))


def erf_fit(x: np.ndarray, y: np.ndarray) -> dict:
    """The least-squares A·erf(α·x + s), α > 0, written apart from the page's Levenberg-Marquardt:
    the best point of a grid, then Nelder-Mead; R²; whether α lies inside the grid."""
    top, total = float(np.max(np.abs(x))), float(np.sum((y - y.mean()) ** 2))
    lo, hi = GRID_DECADES
    logs = np.linspace(lo, hi, (hi - lo) * GRID_STEPS + 1) - math.log10(top)
    grid = [(a, b) for a in logs[:: GRID_STEPS // 5] for b in SHIFT_GRID]
    start = min(grid, key=lambda p: _erf_error(*p, x, y)[1])
    found = optimize.minimize(
        lambda p: _erf_error(p[0], p[1], x, y)[1] / total,
        start,
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 4000},
    )
    log_alpha, shift = (float(v) for v in found.x)
    amplitude, residual = _erf_error(log_alpha, shift, x, y)
    fit = {"alpha": 10.0**log_alpha, "shift": shift, "amplitude": amplitude}
    return fit | {"r2": 1.0 - residual / total, "inside": logs[0] < log_alpha < logs[-1]}


def denominators(x: np.ndarray, norm: str, eps: float) -> np.ndarray:
    """Each token's divisor, written without the page's helpers: (n, d) -> (n,)."""
    if norm == "layer":
        return np.sqrt(np.var(x, axis=1) + eps)
    return np.sqrt(np.einsum("nd,nd->n", x, x) / x.shape[1] + eps)


@lru_cache(maxsize=len(SEEDS))
def readings(seed: int) -> dict:
    """Per norm key: the config and, per layer name (forward order), the grid fit and the
    spread of the tokens' denominators."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # width 48: a second thread only waits
    try:
        out = {}
        for norm in NORMS.values():
            w, config = load(norm, seed)
            cfg = config["model"]
            layers = {}
            for name, x in norm_inputs(w, cfg, DEFAULT_TEXT).items():
                y = f_norm(norm, x, cfg["eps"])
                div = denominators(x, norm, cfg["eps"])
                layers[name] = {**grid_fit(x.ravel(), y.ravel()), "ratio": div.max() / div.min()}
                layers[name]["erf"] = erf_fit(x.ravel(), y.ravel())
            out[norm] = {"config": config, "layers": layers}
        return out
    finally:
        torch.set_num_threads(threads)


def layer_of(state: dict, claim: Claim) -> dict:
    return readings(state["seed"])[NORMS[claim.fields["norm"]]]["layers"][claim.fields["layer"]]


def near(shown: float, value: float, rtol: float = FIT_RTOL) -> None:
    assert abs(shown - value) <= rtol * abs(value), (shown, value)


def r2_near(shown: float, value: float) -> None:
    assert abs(shown - value) <= R2_ATOL, (shown, value)


def sides(value: float, line: float, tol: float) -> set[bool]:
    """Whether ``value >= line``: {True}, {False}, or both within ``tol`` of it."""
    if value >= line + tol:
        return {True}
    if value < line - tol:
        return {False}
    return {True, False}


def flat_sides(fit: dict) -> list[set[bool]]:
    """Whether |α·x| reaches ``FLAT_REACH`` on the negative and on the positive side of 0."""
    return [sides(fit[k], FLAT_REACH, FIT_RTOL * abs(fit[k])) for k in ("reach_neg", "reach_pos")]


def shapes(fit: dict) -> set[str]:
    """The shapes the fit may be called, both sides of a threshold within the tolerances: flat
    on both sides of 0 an S ("saturated"), on one side only "one_arm"."""
    out = set()
    negative, positive = flat_sides(fit)
    for linear_reach in sides(LINEAR_REACH, fit["reach"], FIT_RTOL * fit["reach"]):
        for tied in sides(LINE_TIE, abs(fit["r2"] - fit["line_r2"]), 2 * R2_ATOL):
            for flat_neg in negative:
                for flat_pos in positive:
                    if linear_reach and tied:
                        out.add("linear")
                    elif flat_neg and flat_pos:
                        out.add("saturated")
                    else:
                        out.add("one_arm" if flat_neg or flat_pos else "bending")
    return out


# --- Checks: one layer ----------------------------------------------------------------------------


def check_fit(state: dict, claim: Claim) -> None:
    """The fitted curve and line, recomputed by grid over float64 activations."""
    fit, f = layer_of(state, claim), claim.fields
    assert fit["inside"]  # a least-squares tanh exists: its α is no edge of the grid
    near(f["alpha"], fit["alpha"])
    near(f["amplitude"], fit["amplitude"])
    near(f["slope"], fit["slope"])
    r2_near(f["r2"], fit["r2"])
    r2_near(f["line_r2"], fit["line_r2"])
    # The page's fit is a least-squares one: its own α and A score as well here as this one's.
    t = f["amplitude"] * np.tanh(f["alpha"] * fit["x"])
    total = float(np.sum((fit["y"] - fit["y"].mean()) ** 2))
    r2_near(1.0 - float(np.sum((fit["y"] - t) ** 2)) / total, fit["r2"])


def check_quality(state: dict, claim: Claim) -> None:
    fit, f = layer_of(state, claim), claim.fields
    assert f["good"] == GOOD_FIT == 0.95
    assert (claim.key == "scurve.fit_close") in sides(fit["r2"], GOOD_FIT, R2_ATOL)
    if claim.key == "scurve.fit_loose":
        near(f["ratio"], fit["ratio"])


def check_shape(state: dict, claim: Claim) -> None:
    fit, f = layer_of(state, claim), claim.fields
    shape = claim.key.removeprefix("scurve.shape_").removeprefix("scurve.cell_")
    side = ""
    if shape.startswith("one_arm_"):
        shape, side = "one_arm", shape.removeprefix("one_arm_")
    assert shape in shapes(fit), (shape, shapes(fit))
    if claim.key.startswith("scurve.cell_"):
        return
    near(f["reach"], fit["reach"])
    u = fit["reach"]
    near(f["bend_pct"], 1.0 - math.tanh(u) / u, rtol=10 * FIT_RTOL)
    if shape == "linear":
        assert abs(f["gap"] - abs(fit["r2"] - fit["line_r2"])) <= 2 * R2_ATOL
        assert f["reach"] <= LINEAR_REACH == 1.0 and f["gap"] <= LINE_TIE == 0.01
    if shape == "one_arm":
        assert side in ("negative", "positive")
        flat, other = ("reach_neg", "reach_pos")[:: 1 if side == "negative" else -1]
        reaches = sides(fit[flat], FLAT_REACH, FIT_RTOL * abs(fit[flat]))
        assert True in reaches, (side, fit["reach_neg"], fit["reach_pos"])
        near(f["reach"], fit[flat])  # the far side is the data's edge
        if fit[other] > 0:
            near(f["other"], fit[other])
        else:  # no point on that side: the page says 0
            assert f["other"] == 0.0
        assert True in sides(FLAT_REACH, f["other"], FIT_RTOL * FLAT_REACH)
    if shape in ("saturated", "one_arm"):
        assert f["flat_reach"] == FLAT_REACH == 2.0 and f["reach"] >= 2.0
        # tanh'(u) / tanh'(0) = 1 - tanh(u)² = 1 / cosh(u)²
        assert abs(f["slope_pct"] - 1.0 / math.cosh(2.0) ** 2) <= 1e-15
        # Points this close to |α·x| = 2 may fall either side between the two readings.
        margin = np.abs(fit["alpha"] * np.abs(fit["x"]) - FLAT_REACH) <= 2 * FIT_RTOL * FLAT_REACH
        assert abs(f["flat_pct"] - fit["flat"]) <= float(np.mean(margin)) + 1e-12


def check_no_fit(state: dict, claim: Claim) -> None:
    """No fit is said only where none exists: the points do not vary, or the least-squares α
    is an edge of the grid (a line, α -> 0, or a step, α -> ∞)."""
    fit = layer_of(state, claim)
    flat = np.ptp(fit["y"]) == 0 or np.ptp(fit["x"]) == 0
    if claim.key == "scurve.no_fit_flat":
        assert flat
        return
    assert flat or not fit["inside"]
    if claim.key == "scurve.no_fit_search":
        r2_near(claim.fields["line_r2"], fit["line_r2"])


# --- Checks: one model, both models ------------------------------------------------------------


def fitted(state: dict, norm: str) -> dict[str, dict]:
    return {n: f for n, f in readings(state["seed"])[norm]["layers"].items() if f["inside"]}


def check_summary(state: dict, claim: Claim) -> None:
    f = claim.fields
    fits = fitted(state, NORMS[f["norm"]])
    if claim.key == "scurve.summary_no_fit":
        assert not fits
        return
    assert f["n"] == len(fits) and f["good"] == GOOD_FIT
    r2 = {name: fit["r2"] for name, fit in fits.items()}
    r2_near(f["best"], max(r2.values()))
    r2_near(f["worst"], min(r2.values()))
    r2_near(r2[f["best_at"]], max(r2.values()))
    r2_near(r2[f["worst_at"]], min(r2.values()))
    good = {name: sides(v, GOOD_FIT, R2_ATOL) for name, v in r2.items()}
    which = claim.key.removeprefix("scurve.summary_")
    if which == "all":
        assert all(True in g for g in good.values())
    elif which == "none":
        assert all(False in g for g in good.values())
    else:
        named = f["good_layers"].split(", ")
        assert f["good_count"] == len(named) and 0 < len(named) < len(fits)
        assert all(True in good[n] for n in named)
        assert all(False in good[n] for n in set(fits) - set(named))


def check_group(state: dict, claim: Claim) -> None:
    f = claim.fields
    shape = claim.key.removeprefix("scurve.group_")
    layers = readings(state["seed"])[NORMS[f["norm"]]]["layers"]
    named = f["layers"].split(", ")
    assert f["count"] == len(named) and list(layers) == sorted(layers, key=list(layers).index)
    # Forward order, and exactly the layers of this shape (either side of a threshold is fair).
    assert named == [n for n in layers if n in named]
    for name, fit in layers.items():
        possible = shapes(fit) if fit["inside"] else {"no_fit"}
        if name in named:
            assert shape in possible, (name, shape, possible)
        else:
            assert possible != {shape}, (name, shape)
    assert f["tie"] == LINE_TIE
    if shape in ("linear", "one_arm", "saturated"):
        assert f["reach"] == (LINEAR_REACH if shape == "linear" else FLAT_REACH)


def check_divisors(state: dict, claim: Claim) -> None:
    f = claim.fields
    layers = readings(state["seed"])[NORMS[f["norm"]]]["layers"]
    ratios = {name: fit["ratio"] for name, fit in layers.items()}
    near(f["lo"], min(ratios.values()))
    near(f["hi"], max(ratios.values()))
    near(ratios[f["lo_at"]], min(ratios.values()))
    near(ratios[f["hi_at"]], max(ratios.values()))
    assert f["lo"] >= 1.0


def check_depth(state: dict, claim: Claim) -> None:
    f = claim.fields
    first, later = [], []
    for norm in NORMS.values():
        for name, fit in readings(state["seed"])[norm]["layers"].items():
            (first if name.startswith("blocks.0.") else later).append(fit["ratio"])
    near(f["first_hi"], max(first))
    near(f["later_lo"], min(later))
    near(f["later_hi"], max(later))
    grows = max(first) < min(later)
    assert (claim.key == "scurve.depth_grows") == grows


def check_model(state: dict, claim: Claim) -> None:
    f, seed = claim.fields, state["seed"]
    configs = [readings(seed)[n]["config"] for n in NORMS.values()]
    tokens = len(DEFAULT_TEXT.encode("utf-8"))
    model = configs[0]["model"]
    assert f["seed"] == seed and all(c["training"]["seed"] == seed for c in configs)
    assert (f["layers"], f["d"]) == (model["n_layer"], model["n_embd"])
    assert all(c["training"]["steps_done"] == f["steps"] for c in configs)
    assert f["tokens"] == tokens and f["points"] == tokens * model["n_embd"]
    first = next(iter(readings(seed)["rms"]["layers"].values()))
    assert first["x"].size == f["points"]


def check_sample(state: dict, claim: Claim) -> None:
    """What every chart draws: the same ``sample`` positions in every layer (the charts of
    both models share at least that many), and each layer's extremes of x and ŷ, each point
    once; no count of the whole is quoted, since it differs by layer."""
    f, v = claim.fields, view(state)
    points = len(DEFAULT_TEXT.encode("utf-8")) * v.d
    assert f["points"] == points and f["sample"] == min(SAMPLE, points)
    charts = [curve for curves in v.curves.values() for curve in curves]
    shared = set.intersection(*(set(curve.sample.tolist()) for curve in charts))
    assert len(shared) >= f["sample"]
    for norm, curves in v.curves.items():
        for curve in curves:
            assert f["sample"] <= curve.sample.size <= f["sample"] + 4
            fit = readings(state["seed"])[norm]["layers"][curve.name]
            drawn_x, drawn_y = curve.x[curve.sample], curve.y[curve.sample]
            assert np.unique(curve.sample).size == curve.sample.size >= SAMPLE
            for drawn, every in ((drawn_x, fit["x"]), (drawn_y, fit["y"])):
                scale = np.max(np.abs(every))
                assert abs(drawn.max() - every.max()) <= 1e-5 * scale
                assert abs(drawn.min() - every.min()) <= 1e-5 * scale


def check_r2_words(state: dict, claim: Claim) -> None:
    """The R² chart: each model's extremes over both fits and every layer, recomputed."""
    data = readings(state["seed"])
    grids = {
        norm: [[fit[key] for fit in data[norm]["layers"].values()] for key in ("r2", "line_r2")]
        + [[fit["erf"]["r2"] for fit in data[norm]["layers"].values()]]
        for norm in NORMS.values()
    }
    where = list(data["rms"]["layers"])
    check_lines_words(claim, list(FIT_FORMS), where, grids, rtol=R2_ATOL)


# --- Checks: Derf's curve ------------------------------------------------------------------------


def check_erf_words(state: dict, claim: Claim) -> None:
    """Derf's fitted curve in one layer, recomputed by grid and Nelder-Mead; the page's own α, s
    and A score as well here."""
    fit, f = layer_of(state, claim)["erf"], claim.fields
    if claim.key == "scurve.erf_no_fit":
        assert not fit["inside"]
        return
    assert fit["inside"]
    near(f["alpha"], fit["alpha"])
    near(f["amplitude"], fit["amplitude"])
    assert abs(f["shift"] - fit["shift"]) <= FIT_RTOL, (f["shift"], fit["shift"])
    r2_near(f["r2"], fit["r2"])
    x, y = layer_of(state, claim)["x"], layer_of(state, claim)["y"]
    e = f["amplitude"] * special.erf(f["alpha"] * x + f["shift"])
    r2_near(1.0 - float(np.sum((y - e) ** 2)) / float(np.sum((y - y.mean()) ** 2)), fit["r2"])


def check_erf_model(state: dict, claim: Claim) -> None:
    """Derf's curve's R² minus the tanh's, in each layer where both fits exist: the extremes and
    how many lie beyond ``LINE_TIE`` either way (a gain within rounding of it counts either way)."""
    f = claim.fields
    layers = readings(state["seed"])[NORMS[f["norm"]]]["layers"]
    gains = {n: v["erf"]["r2"] - v["r2"] for n, v in layers.items() if v["inside"]}
    gains = {n: g for n, g in gains.items() if layers[n]["erf"]["inside"]}
    assert f["n"] == len(gains) > 0 and f["tie"] == LINE_TIE
    for end, pick in (("lo", min), ("hi", max)):
        assert abs(f[end] - pick(gains.values())) <= 2 * R2_ATOL
        assert abs(gains[f[f"{end}_at"]] - pick(gains.values())) <= 2 * R2_ATOL
    above = [sides(g, LINE_TIE, 2 * R2_ATOL) for g in gains.values()]
    below = [sides(-g, LINE_TIE, 2 * R2_ATOL) for g in gains.values()]
    assert sum(a == {True} for a in above) <= f["above"] <= sum(True in a for a in above)
    assert sum(b == {True} for b in below) <= f["below"] <= sum(True in b for b in below)
    assert (claim.key == "scurve.erf_close") == (f["above"] + f["below"] == 0)


CHECKS = {
    "scurve.erf_words": check_erf_words,
    "scurve.erf_no_fit": check_erf_words,
    "scurve.erf_close": check_erf_model,
    "scurve.erf_apart": check_erf_model,
    "scurve.model_caption": check_model,
    "scurve.sample_caption": check_sample,
    "scurve.fit_words": check_fit,
    "scurve.fit_close": check_quality,
    "scurve.fit_loose": check_quality,
    **{f"scurve.shape_{s}": check_shape for s in ("linear", "bending", "saturated")},
    **{f"scurve.shape_one_arm_{side}": check_shape for side in ("negative", "positive")},
    **{f"scurve.cell_{s}": check_shape for s in ("linear", "bending", "one_arm", "saturated")},
    "scurve.cell_no_fit": check_no_fit,
    "scurve.no_fit_search": check_no_fit,
    "scurve.no_fit_flat": check_no_fit,
    **{f"scurve.summary_{k}": check_summary for k in ("all", "some", "none", "no_fit")},
    **{
        f"scurve.group_{s}": check_group
        for s in ("linear", "bending", "one_arm", "saturated", "no_fit")
    },
    "scurve.divisors": check_divisors,
    "scurve.depth_grows": check_depth,
    "scurve.depth_mixed": check_depth,
    "scurve.r2_words": check_r2_words,
    "charts.not_finite": check_r2_words,
    "charts.lines_no_finite": check_r2_words,
}
