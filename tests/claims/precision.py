"""The precision page's sentences, checked with closed forms, torch transcriptions in each dtype
and correctly rounded scalar loops.

Nothing here calls ``labs.precision.model``'s helpers: the curves come from the closed forms
``sqrt(d) r / sqrt(r^2 + eps)`` and ``sqrt(d) r / (r + eps)``, the reductions from torch code
written out as the page describes it (x rounded into the dtype, squared, averaged, divided), and
the running sums from a Python loop that rounds every step correctly (exact float64 arithmetic,
then one rounding to the dtype's significand).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import torch
from hypothesis import strategies as st

from core.defaults import MIN_WIDTH
from labs.precision.model import MAX_SWEEP_WIDTH, PAGE_EPS, SCALE_LADDER, precision_view
from tests.claims.oracle import (
    SIGNIFICAND,
    check_lines_words,
    check_pair_words,
    pair_keys,
    round_to,
    ulps,
)

SCALES = np.logspace(-8, 4, 97)
SWEEP_EPS = (1e-8, 1e-6, 1e-5, 1e-3)
DTYPES = ("float64", "float32", "float16", "bfloat16")
F16_MAX, F16_INF = 65504.0, 65520.0
# Where each RMSNorm the pages offer squares x, from its upstream source: in float32 for a half
# x ("float32": hidden_states.to(torch.float32), or x.float(), in transformers' Llama, Gemma,
# T5, OLMo 2, Qwen3, Qwen3-Next, DeepSeek V3, gpt-oss and Llama 4 norms, Transformer Engine's
# float32 kernel; torch.nn.RMSNorm's opmath type), or in x's own
# dtype (rmsnorm_torch.py's x.norm(2), x-transformers' F.normalize).
SQUARES_IN = {
    "torch": "float32",
    "llama": "float32",
    "gemma": "float32",
    "t5": "float32",
    "olmo2": "float32",
    "qwen3": "float32",
    "qwen3-next": "float32",
    "deepseek-v3": "float32",
    "gpt-oss": "float32",
    "llama4-qk": "float32",
    "transformer-engine": "float32",
    "paper": "input",
    "x-transformers": "input",
}

_SEEDS = st.one_of(st.just(0), st.integers(0, 2**31 - 1))
_PLACEMENTS = st.sampled_from(["both", "inside", "outside"])
_ANY = st.fixed_dictionaries(
    {
        "d": st.one_of(st.sampled_from([MIN_WIDTH, 3, MAX_SWEEP_WIDTH]), st.integers(2, 4096)),
        "seed": _SEEDS,
        "placement": _PLACEMENTS,
        "scale": st.sampled_from(SCALE_LADDER),
        "eps": st.sampled_from(PAGE_EPS),
    }
)
# The corners: the smallest and largest width, scale and eps together.
_CORNERS = st.fixed_dictionaries(
    {
        "d": st.sampled_from([MIN_WIDTH, MAX_SWEEP_WIDTH]),
        "seed": _SEEDS,
        "placement": _PLACEMENTS,
        "scale": st.sampled_from((SCALE_LADDER[0], SCALE_LADDER[-1])),
        "eps": st.sampled_from((PAGE_EPS[0], PAGE_EPS[-1])),
    }
)
STATES = st.one_of(_ANY, _CORNERS)


def view(state: dict):
    return precision_view(**state, dtypes=DTYPES)


@cache
def draw(d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(d)


def z_of(state: dict) -> np.ndarray:
    return draw(state["d"], state["seed"])


def rms(z: np.ndarray) -> float:
    return float(np.linalg.norm(z) / math.sqrt(z.size))


def curve(z: np.ndarray, scales: np.ndarray, eps: float, placement: str) -> np.ndarray:
    r = np.asarray(scales) * rms(z)
    with np.errstate(invalid="ignore", divide="ignore"):
        shrink = r / np.sqrt(r * r + eps) if placement == "inside" else r / (r + eps)
    return math.sqrt(z.size) * np.where(r > 0, shrink, 0.0)


def near(shown: float, expected: float, *, rtol: float = 1e-9, atol: float = 0.0) -> None:
    assert abs(shown - expected) <= atol + rtol * abs(expected), (shown, expected)


# --- 1 and 2: the eps curves --------------------------------------------------------------------


def check_norm_caption(state: dict, claim) -> None:
    z, f = z_of(state), claim.fields
    shown = ("inside", "outside") if state["placement"] == "both" else (state["placement"],)
    curves = np.array([curve(z, SCALES, e, p) for p in shown for e in SWEEP_EPS])
    sqrt_d = math.sqrt(state["d"])
    top_gap = np.max(np.abs(curves[:, -1] / sqrt_d - 1))
    near(f["top_gap_pct"], top_gap, rtol=1e-6, atol=ulps(64, 1.0))  # a curve over sqrt(d)
    near(f["low_pct"], np.max(curves[:, 0] / sqrt_d), rtol=1e-9)
    assert (f["s_max"], f["s_min"], f["sqrt_d"]) == (SCALES[-1], SCALES[0], sqrt_d)
    assert (claim.key != "precision.norm_caption_unsettled") == (top_gap <= 0.01)
    # The knee: eps against the mean square inside the root (s r = sqrt(eps)), against the RMS
    # outside it (s r = eps); "below its knee" holds for a curve only where s_min is a tenth of
    # its knee or less.
    r = rms(z)
    knees = [math.sqrt(e) / r if p == "inside" else e / r for p in shown for e in SWEEP_EPS]
    above = sum(k < 10 * SCALES[0] for k in knees)  # "well below its knee": under a tenth of it
    if claim.key == "precision.norm_caption":
        assert above == 0, knees
    elif claim.key == "precision.norm_caption_knee":
        assert (f["above"], f["curves"]) == (above, len(knees)) and above > 0
        near(f["knee_low"], min(knees), rtol=1e-9)


def check_norm_explain(state: dict, claim) -> None:
    z, f = z_of(state), claim.fields
    r = rms(z)
    for name, knee in (
        ("in6", 1e-3 / r),
        ("in5", math.sqrt(1e-5) / r),
        ("in3", math.sqrt(1e-3) / r),
    ):
        near(f[name], knee)
    near(f["out6"], 1e-6 / r)
    near(f["ratio"], 1e3, rtol=1e-9)
    # The knee is where the norm is sqrt(d / 2) (inside) and sqrt(d) / 2 (outside): torch says so.
    d = state["d"]
    x = torch.tensor(z * f["in6"])
    y = torch.nn.functional.rms_norm(x, (d,), eps=1e-6)
    near(float(y.norm()), math.sqrt(d / 2), rtol=1e-9)
    x = torch.tensor(z * f["out6"])
    near(float((x / (x.square().mean().sqrt() + 1e-6)).norm()), math.sqrt(d) / 2, rtol=1e-9)


def check_matched(state: dict, claim) -> None:
    z, f, eps = z_of(state), claim.fields, state["eps"]
    r, sqrt_d = rms(z), math.sqrt(state["d"])
    near(f["eps_in"], eps)
    near(f["eps_out"], math.sqrt(eps))
    knee = math.sqrt(eps) / r
    near(f["knee"], knee)
    inside, outside = (
        curve(z, [knee], eps, "inside")[0],
        curve(z, [knee], f["eps_out"], "outside")[0],
    )
    near(f["gap_pct"], 1 - outside / inside, rtol=1e-9)
    near(outside, sqrt_d / 2, rtol=1e-9)
    assert f["agree_pct"] == 0.01
    # Within 1 % below agree_lo and above agree_hi, not just inside them.
    for edge, outward in ((f["agree_lo"], 1 / 1.05), (f["agree_hi"], 1.05)):
        grid = edge * np.geomspace(1.0, outward**40, 41)
        ratio = curve(z, grid, f["eps_out"], "outside") / curve(z, grid, eps, "inside")
        assert np.all(ratio >= 0.99 - 1e-9), ratio
        inward = curve(z, [edge / outward], f["eps_out"], "outside") / curve(
            z, [edge / outward], eps, "inside"
        )
        assert inward[0] < 0.99


def check_matched_zero(state: dict, claim) -> None:
    z, f = z_of(state), claim.fields
    d = state["d"]
    x = torch.tensor(SCALES[:, None] * z)
    inside = torch.nn.functional.rms_norm(x, (d,), eps=0.0).norm(dim=-1).numpy()
    outside = (x / x.square().mean(-1, keepdim=True).sqrt()).norm(dim=-1).numpy()
    gap = np.max(np.abs(np.concatenate([inside, outside]) / math.sqrt(d) - 1))
    # A sum of d squares, a root and a division: about d + 4 roundings of numbers of order 1.
    rounding = ulps(d + 4, 1.0)
    if claim.key == "precision.matched_zero":
        assert gap <= rounding, gap
    else:
        near(f["gap_pct"], gap, atol=rounding)


# --- 3: the reductions in each dtype ----------------------------------------------------------


@cache
def _errors(d: int, seed: int, eps: float, dtype: str) -> np.ndarray:
    """The page's reduction written out in torch: x rounded into ``dtype``, squared, averaged,
    eps added, rsqrt, multiplied, all in ``dtype``; the error against the same in float64."""
    x = torch.tensor(SCALES[:, None] * draw(d, seed))
    ref = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + eps)
    if dtype == "float32":
        # float32 the page computes with numpy (pairwise sums), so the transcription does too.
        xf = (SCALES[:, None] * draw(d, seed)).astype(np.float32)
        yf = xf * (1 / np.sqrt(np.mean(xf * xf, axis=-1, keepdims=True) + np.float32(eps)))
        y = torch.from_numpy(yf.astype(np.float64))
        return ((y - ref).norm(dim=-1) / ref.norm(dim=-1)).numpy()
    xh = x.to(getattr(torch, dtype))
    y = (xh * torch.rsqrt(xh.square().mean(-1, keepdim=True) + eps)).double()
    return ((y - ref).norm(dim=-1) / ref.norm(dim=-1)).numpy()


def errors(state: dict, dtype: str) -> np.ndarray:
    return _errors(state["d"], state["seed"], state["eps"], dtype)


def check_range(state: dict, claim) -> None:
    dtype = "float32" if "f32" in claim.key else "bfloat16"
    e, f = errors(state, dtype), claim.fields
    finite = e[np.isfinite(e)]
    near(f["hi"], finite.max(), rtol=1e-3)
    near(f["lo"], finite.min(), rtol=1e-3)
    assert f["count"] == e.size - finite.size
    assert claim.key.endswith("_nonfinite") == (f["count"] > 0)


def _good_run(e: np.ndarray) -> tuple[int, int] | None:
    """(first, last) index of the run of scales around s = 1 with an error within 1 %."""
    bad = [i for i, v in enumerate(e) if not v <= 0.01]  # NaN is not good
    centre = SCALES.tolist().index(1.0)
    if centre in bad:
        return None
    lo = max((i for i in bad if i < centre), default=-1) + 1
    hi = min((i for i in bad if i > centre), default=len(e)) - 1
    return lo, hi


def check_f16_range(state: dict, claim) -> None:
    run = _good_run(errors(state, "float16"))
    assert claim.fields["tol_pct"] == 0.01
    if claim.key == "precision.error_f16_range_none":
        assert run is None
        return
    lo, hi = run
    assert (claim.fields["good_lo"], claim.fields["good_hi"]) == (SCALES[lo], SCALES[hi])
    assert claim.key.startswith("precision.error_f16_range_below") == (lo > 0)
    if lo > 0:  # "over 1 % at {over} of the {below_n} smaller scales drawn" (or at every one)
        smaller = errors(state, "float16")[:lo]
        over = sum(1 for v in smaller if not v <= 0.01)
        assert claim.fields["below_n"] == lo == len(smaller) and claim.fields["over"] == over > 0
        assert claim.key.endswith("_all") == (over == lo)


def check_f16_low(state: dict, claim) -> None:
    e, f = errors(state, "float16"), claim.fields
    lo, _ = _good_run(e)
    assert lo > 0 and f["below"] == SCALES[lo - 1]
    shown, measured = f["error"], e[lo - 1]
    if np.isfinite(measured):
        near(shown, measured, rtol=1e-3)
        assert measured > 0.01
    else:
        assert not np.isfinite(shown)
    x16 = torch.tensor(f["below"] * z_of(state)).half()
    squares = x16.square().double().numpy()
    tiny, under = 2.0**-24, (x16.double().numpy() ** 2) < 2.0**-24
    near(f["underflow_pct"], np.count_nonzero(under) / under.size, rtol=ulps(1, 1.0))
    # "round to 0 or up to it": float16's own squares of those x are 0 or 2^-24.
    assert set(np.unique(squares[under])) <= {0.0, tiny}
    # The squares float16 stores below its smallest normal number, 2^-14 (0 included).
    subnormal = squares < 2.0**-14
    near(f["subnormal_pct"], np.count_nonzero(subnormal) / subnormal.size, rtol=ulps(1, 1.0))
    assert (f["tiny"], f["tiny_x"], f["min_normal"]) == (tiny, 2.0**-12, 2.0**-14)
    # Where every square lost (x / sqrt(eps) against x / sqrt(ms + eps)) would move the output by
    # under a tenth of the error, the squares are not named: x's own float16 subnormals are, if
    # any. Else a cause is named only where some square has it.
    held = x16.double().numpy()
    ms, x_sub = float(np.mean(held**2)), float(np.mean(np.abs(held) < 2.0**-14))
    r = ms / state["eps"] if state["eps"] else math.inf  # sqrt(1 + r) - 1, without cancelling:
    bound = r / (math.sqrt(1 + r) + 1) if state["eps"] else math.inf
    if bound < f["error"] / 10:
        near(f["bound"], bound, rtol=1e-9)
        assert claim.key == (
            "precision.error_f16_low_eps" if x_sub else "precision.error_f16_low_eps_only"
        )
        near(f["ms"], ms, rtol=1e-12)
        near(f["x_subnormal_pct"], x_sub, rtol=ulps(1, 1.0))
        assert f["eps"] == state["eps"]
        return
    named = {
        "precision.error_f16_low": (True, True),
        "precision.error_f16_low_subnormal": (False, True),
    }
    assert named.get(claim.key, (False, False)) == (bool(under.any()), bool(subnormal.any()))


def _square_is_inf(scale: float, z: np.ndarray) -> bool:
    return bool(torch.isinf(torch.tensor(scale * z).half().square()).any())


def check_f16_high(state: dict, claim) -> None:
    z, f = z_of(state), claim.fields
    square = f["square"]
    assert f["inf_from"] == F16_INF and f["s_max"] == SCALES[-1]
    assert _square_is_inf(square * (1 + 1e-9), z) and not _square_is_inf(square * (1 - 1e-6), z)
    over = SCALES >= square
    if claim.key == "precision.error_f16_high_none":
        assert not over.any()
        return
    collapsed = np.all(errors(state, "float16")[over] == 1.0)
    assert collapsed == (claim.key == "precision.error_f16_high")


def check_limits(state: dict, claim) -> None:
    z, f = z_of(state), claim.fields
    assert f["max"] == torch.finfo(torch.float16).max == F16_MAX
    assert f["inf_from"] == F16_INF
    assert torch.isinf(torch.tensor(F16_INF).half()) and torch.isfinite(
        torch.tensor(65519.99).half()
    )

    def sum_inf(s: float) -> bool:
        return bool(torch.isinf(torch.tensor(s * z).half().pow(2).sum()))

    def mean_inf(s: float) -> bool:
        return bool(torch.isinf(torch.tensor(s * z).half().pow(2).mean()))

    assert sum_inf(f["sum"] * 1.001) and not sum_inf(f["sum"] * 0.999)
    assert mean_inf(f["square"] * 1.0001) and not mean_inf(f["square"] * 0.9999)


# --- 4: running sums --------------------------------------------------------------------------


@cache
def _loops(d: int, seed: int, scale: float) -> dict[str, list[float]]:
    x = (scale * draw(d, seed)).tolist()
    out = {}
    for dtype in ("float32", "float16", "bfloat16"):
        total, sums = 0.0, []
        for v in x:
            xv = round_to(v, dtype)
            total = round_to(total + round_to(xv * xv, dtype), dtype)
            sums.append(total)
        out[dtype] = sums
    return out


def loops(state: dict) -> dict[str, list[float]]:
    return _loops(state["d"], state["seed"], state["scale"])


def check_drift_caption(state: dict, claim) -> None:
    sums, f = loops(state), claim.fields
    exact = math.fsum(v * v for v in (state["scale"] * z_of(state)).tolist())
    near(f["exact"], exact, rtol=1e-12)
    for name, dtype in (("f32", "float32"), ("f16", "float16"), ("bf16", "bfloat16")):
        final = sums[dtype][-1]
        if math.isinf(final):
            assert math.isinf(f[name])
        else:
            # A correctly rounded loop and the page's may part by a rounding now and then.
            near(f[name], final, rtol=2.0 ** -(SIGNIFICAND[dtype] - 2))
    if exact > 0:
        near(f["bf16_pct"], f["bf16"] / exact, rtol=1e-12)
    assert (f["d"], f["scale"]) == (state["d"], state["scale"])


def check_drift(state: dict, claim) -> None:
    sums, f = loops(state), claim.fields
    if claim.key == "precision.drift_overflow":
        index = next(i for i, v in enumerate(sums["float16"]) if math.isinf(v)) + 1
        assert f["index"] == index and f["inf_from"] == F16_INF
        return
    assert not any(math.isinf(v) for v in sums["float16"])
    exact = f["exact"]
    share = sums["bfloat16"][-1] / exact if exact > 0 else 1.0
    # The loops may differ from the page's by a rounding or two: decide away from the border.
    near(f["gap_pct"], abs(1 - share), atol=ulps(2, 1.0, "bfloat16"))
    near(f["rms_gap_pct"], abs(1 - math.sqrt(f["bf16_pct"])), rtol=1e-9)
    if abs(abs(1 - share) - 0.01) > ulps(2, 1.0, "bfloat16"):
        assert (claim.key == "precision.drift_holds") == (abs(1 - share) <= 0.01)


def check_drift_torch(state: dict, claim) -> None:
    f = claim.fields
    x = (state["scale"] * z_of(state)).tolist()
    exact = math.fsum(v * v for v in x)
    rounded = round_to(
        math.fsum(round_to(round_to(v, "bfloat16") ** 2, "bfloat16") for v in x), "bfloat16"
    )
    # torch sums in float32 in its own order: within a bfloat16 ulp of the exact sum, rounded.
    near(f["torch_pct"], rounded / exact, rtol=ulps(1, 1.0, "bfloat16"))
    cast, native = f["cast"].split(", "), f["native"].split(", ")
    assert sorted(cast + native) == sorted(SQUARES_IN)
    assert all(SQUARES_IN[name] == "float32" for name in cast), cast
    assert all(SQUARES_IN[name] == "input" for name in native), native


# --- the charts' words: each from the arrays its chart draws -------------------------------------


def check_chart_words(state: dict, claim) -> None:
    """A chart's summary from what it draws; the norm curves drawn are the closed forms', and
    the running sums the correctly rounded loops' up to a rounding now and then."""
    v, z = view(state), z_of(state)
    chart = claim.fields.get("chart", claim.key).removeprefix("precision.").split("_")[0]
    if chart == "norm":
        for placement, grid in v.norms.items():
            expected = [curve(z, SCALES, e, placement) for e in SWEEP_EPS]
            np.testing.assert_allclose(grid, expected, rtol=1e-9)
        check_lines_words(claim, SWEEP_EPS, SCALES, v.norms)
    elif chart == "matched":
        inside, outside = v.matched["inside"], v.matched["outside"]
        np.testing.assert_allclose(inside, curve(z, SCALES, state["eps"], "inside"), rtol=1e-9)
        root = math.sqrt(state["eps"])
        np.testing.assert_allclose(outside, curve(z, SCALES, root, "outside"), rtol=1e-9)
        check_pair_words(claim, list(SCALES), inside, outside)
    elif chart == "error":
        grid = np.stack(list(v.errors.values()))
        check_lines_words(claim, list(v.errors), SCALES, {"error": grid})
    else:
        sums = loops(state)
        for dtype, values in sums.items():
            drawn = v.sums[dtype]
            assert np.array_equal(np.isinf(drawn), np.isinf(values)), dtype
            finite = np.isfinite(values)
            rtol = 2.0 ** -(SIGNIFICAND[dtype] - 2)
            np.testing.assert_allclose(drawn[finite], np.asarray(values)[finite], rtol=rtol)
        grid = np.stack(list(v.sums.values()))
        check_lines_words(claim, list(v.sums), range(1, state["d"] + 1), {"sum": grid})


CHECKS = {
    "precision.norm_words_both": check_chart_words,
    "precision.norm_words_inside": check_chart_words,
    "precision.norm_words_outside": check_chart_words,
    **dict.fromkeys(pair_keys("precision.matched_words"), check_chart_words),
    "precision.error_words": check_chart_words,
    "precision.drift_words": check_chart_words,
    "charts.not_finite": check_chart_words,
    "charts.no_finite": check_chart_words,
    "charts.lines_no_finite": check_chart_words,
    "precision.norm_caption": check_norm_caption,
    "precision.norm_caption_unsettled": check_norm_caption,
    "precision.norm_caption_knee": check_norm_caption,
    "precision.norm_explain": check_norm_explain,
    "precision.matched_caption": check_matched,
    "precision.matched_zero": check_matched_zero,
    "precision.matched_zero_unsettled": check_matched_zero,
    "precision.error_f32": check_range,
    "precision.error_f32_nonfinite": check_range,
    "precision.error_bf16": check_range,
    "precision.error_bf16_nonfinite": check_range,
    "precision.error_f16_range": check_f16_range,
    "precision.error_f16_range_none": check_f16_range,
    "precision.error_f16_range_below": check_f16_range,
    "precision.error_f16_range_below_all": check_f16_range,
    "precision.error_f16_low": check_f16_low,
    "precision.error_f16_low_subnormal": check_f16_low,
    "precision.error_f16_low_other": check_f16_low,
    "precision.error_f16_low_eps": check_f16_low,
    "precision.error_f16_low_eps_only": check_f16_low,
    "precision.error_f16_high": check_f16_high,
    "precision.error_f16_high_plain": check_f16_high,
    "precision.error_f16_high_none": check_f16_high,
    "precision.limits_explain": check_limits,
    "precision.drift_caption": check_drift_caption,
    "precision.drift_explain": check_drift,
    "precision.drift_holds": check_drift,
    "precision.drift_overflow": check_drift,
    "precision.drift_torch": check_drift_torch,
}
