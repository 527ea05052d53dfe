r"""Epsilon and precision: how eps bends the output norm, and what low-precision sums do.

RMSNorm's output norm is :math:`\sqrt{d}` only while the mean square dominates eps:

.. math:: \lVert y \rVert_2 = \sqrt{d}\,\frac{r}{\sqrt{r^{2} + \epsilon}} \ \text{(inside)},
    \qquad \sqrt{d}\,\frac{r}{r + \epsilon} \ \text{(outside)}, \qquad r = \mathrm{RMS}(x)

The knee (where eps weighs as much as the statistic it is added to) sits at
:math:`r = \sqrt{\epsilon}` inside the root and at :math:`r = \epsilon` outside it, so an outside
eps of :math:`\sqrt{\epsilon_{in}}` puts the knee where an inside :math:`\epsilon_{in}` does.

Here that is swept over input scales. ``labs.precision.reduced`` measures float32, float16 and
bfloat16 reductions against float64 and replays sums of squares kept in a low precision."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from core._backend import FLOAT_NAMES
from core.defaults import DEFAULT_LAYER_EPS, DEFAULT_RMS_EPS, EPS_LADDER, PAPER_EPS, ladder_upto
from core.device import torch_available
from core.inputs import make_input
from core.messages import NormWarning
from core.norms import rms_norm
from labkit.chart_words import lines_words, pair_words, rounding_of
from labkit.claims import Claim, at_most, pick
from labs.precision.reduced import (
    FLOAT16_INF_FROM,
    FLOAT16_MAX,
    FLOAT16_MIN_NORMAL,
    FLOAT16_TINY,
    Float16Limits,
    float16_overflow_scales,
    reduction_error,
    running_sum_of_squares,
    torch_half_sum_of_squares,
)

NORM_FORMULA_INSIDE = r"\lVert y \rVert_2 = \sqrt{d}\,\frac{r}{\sqrt{r^{2} + \epsilon}}"
NORM_FORMULA_OUTSIDE = r"\lVert y \rVert_2 = \sqrt{d}\,\frac{r}{r + \epsilon}"

# Placements whose knee has a closed form in the RMS alone ("clamp" also depends on d).
KNEE_PLACEMENTS = ("inside", "outside")


def output_norm_vs_scale(
    d: int,
    scales: Sequence[float] | np.ndarray,
    eps_list: Sequence[float],
    *,
    placement: str = "inside",
    seed: int = 0,
) -> np.ndarray:
    """``||RMSNorm(s z)||_2`` for every eps and scale s, with ``z`` a seeded normal draw.

    One batched call of the (S, d) scaled inputs per eps. Returns shape (E, S), float64."""
    scales = np.asarray(scales, dtype=np.float64)
    z = make_input(d, dist="normal", seed=seed)
    x = scales[:, None] * z[None, :]  # (S, d)
    norms = np.empty((len(eps_list), scales.size))
    with warnings.catch_warnings():
        # eps = 0 at scale 0 is 0/0: the convention (0) is what the curve shows.
        warnings.simplefilter("ignore", NormWarning)
        for row, eps in enumerate(eps_list):
            y = rms_norm(x, eps=eps, eps_placement=placement)
            norms[row] = np.linalg.norm(y, axis=-1)  # (S, d) -> (S,)
    return norms


def eps_knee(eps: float, *, placement: str = "inside", rms: float = 1.0) -> float:
    r"""The input scale at which eps weighs as much as the statistic it is added to.

    Inside the root that is :math:`s^2 r^2 = \epsilon` (the output norm is then
    :math:`\sqrt{d/2}`); outside it is :math:`s r = \epsilon` (norm :math:`\sqrt{d}/2`). ``rms``
    is the RMS of the unscaled input."""
    if placement not in KNEE_PLACEMENTS:
        raise ValueError(f"placement must be one of {list(KNEE_PLACEMENTS)} (got {placement!r})")
    if eps < 0 or rms <= 0:
        raise ValueError(f"eps must be >= 0 and rms > 0 (got eps={eps}, rms={rms})")
    return math.sqrt(eps) / rms if placement == "inside" else eps / rms


def matched_agreement(tolerance: float = 0.01) -> tuple[float, float]:
    r"""Where the inside curve (eps) and the outside curve (sqrt(eps)) agree within ``tolerance``.

    With :math:`u = s r / \sqrt{\epsilon}` the two norms are :math:`u/\sqrt{u^2 + 1}` and
    :math:`u/(u + 1)`; their ratio :math:`\sqrt{u^2+1}/(u+1)` is 1 at both ends and
    :math:`1/\sqrt{2}` at the knee u = 1. Returns (u_lo, u_hi) where the ratio is
    ``1 - tolerance``: they agree below u_lo and above u_hi (u_lo = 1 / u_hi)."""
    c = (1.0 - tolerance) ** 2
    # (1 - c) u^2 - 2 c u + (1 - c) = 0
    a, b = 1.0 - c, -2.0 * c
    root = math.sqrt(b * b - 4 * a * a)
    return (-b - root) / (2 * a), (-b + root) / (2 * a)


# --- the page: one view per link state -------------------------------------------------------

# 1e-8 to 1e4, eight points per decade, smooth on log axes. s = 1 is one of them (index 64).
SWEEP_SCALES = np.logspace(-8, 4, 97)
# The paper's port (1e-8), Llama / Gemma / T5 (1e-6), torch's LayerNorm (1e-5), 1e-3: knee mid-plot.
SWEEP_EPS = (PAPER_EPS, DEFAULT_RMS_EPS, DEFAULT_LAYER_EPS, 1e-3)
# The input scales a link may choose for the table and the running sums.
SCALE_LADDER = tuple(float(f"{m}e{k}") for k in range(-8, 4) for m in (1, 3)) + (1e4,)
# Up to 1e-2: its matched outside eps, 0.1, still knees inside the sweep.
PAGE_EPS = ladder_upto(EPS_LADDER, 1e-2)
# Widths up to a large model's hidden size; the sweeps cost S * d per dtype.
MAX_SWEEP_WIDTH = 4096
PLACEMENTS = ("both", "inside", "outside")
# Two curves "agree" within this relative gap; float16 "works" while its error stays under it.
AGREE = 0.01
# Below this a curve's gap to sqrt(d) at the largest scale counts as flat.
FLAT_GAP = 0.01
# A bfloat16 loop total "holds" while it keeps this share of the true sum.
HOLDS = 0.99


@dataclass(frozen=True)
class DtypeRow:
    """One dtype's reduction at the chosen scale (the page's table)."""

    dtype: str
    mean_square: float
    mean_square_error: float
    output_error: float
    overflow: bool


@dataclass(frozen=True)
class PrecisionView:
    """Everything the precision page shows for one link state.

    ``norms[placement]`` is (E, S) over ``SWEEP_EPS`` x ``SWEEP_SCALES``; ``matched`` holds the
    inside curve for ``eps`` and the outside one for ``eps_out = sqrt(eps)``; ``errors[dtype]`` is
    the output error over the sweep; ``sums[dtype]`` the running sums of squares at ``scale``."""

    d: int
    rms: float
    scale: float
    norms: dict[str, np.ndarray]
    eps: float
    eps_out: float
    knee: float
    matched: dict[str, np.ndarray]
    errors: dict[str, np.ndarray]
    limits: Float16Limits
    rows: tuple[DtypeRow, ...]
    sums: dict[str, np.ndarray]
    claims: dict[str, Claim]


def precision_view(
    d: int, seed: int, placement: str, scale: float, eps: float, dtypes: Sequence[str]
) -> PrecisionView:
    """The page state: both sweeps, the matched curves, the table and the running sums."""
    z = make_input(d, dist="normal", seed=seed)
    rms = float(np.sqrt(np.mean(np.square(z))))  # (d,) -> ()
    shown = KNEE_PLACEMENTS if placement == "both" else (placement,)
    norms = {
        p: output_norm_vs_scale(d, SWEEP_SCALES, SWEEP_EPS, placement=p, seed=seed) for p in shown
    }
    eps_out = math.sqrt(eps)
    matched = {
        p: output_norm_vs_scale(d, SWEEP_SCALES, [e], placement=p, seed=seed)[0]
        for p, e in (("inside", eps), ("outside", eps_out))
    }
    sweep = reduction_error(SWEEP_SCALES[:, None] * z, dtypes, eps=eps)
    # At a scale the sweep holds, the table is the sweep's row: torch's half root of a lone row
    # may round apart from the same row in a batch, and the table would not read as the chart.
    on_grid = np.flatnonzero(SWEEP_SCALES == scale)
    if on_grid.size:
        here, k = sweep, int(on_grid[0])
    else:
        here, k = reduction_error((scale * z)[None, :], dtypes, eps=eps), 0
    rows = tuple(
        DtypeRow(
            dt,
            float(r.mean_square[k]),
            float(r.mean_square_error[k]),
            float(r.output_error[k]),
            bool(r.overflow[k]),
        )
        for dt, r in here.items()
    )
    view = PrecisionView(
        d=d,
        rms=rms,
        scale=scale,
        norms=norms,
        eps=eps,
        eps_out=eps_out,
        knee=eps_knee(eps, placement="inside", rms=rms),
        matched=matched,
        errors={dt: sweep[dt].output_error for dt in dtypes if dt != "float64"},
        limits=float16_overflow_scales(z),
        rows=rows,
        sums={dt: running_sum_of_squares(scale * z, dt) for dt in FLOAT_NAMES},
        claims={},
    )
    view.claims.update(_eps_claims(view))
    view.claims.update(_dtype_claims(view, z))
    view.claims.update(_drift_claims(view, scale * z))
    view.claims.update(_chart_words(view))
    return view


def _chart_words(view: PrecisionView) -> dict[str, Claim]:
    """Each chart's caption and accessible name: extremes per placement or dtype, and the
    matched curves as a pair (inside first)."""
    shown = "both" if len(view.norms) == 2 else next(iter(view.norms))
    inside, outside = view.matched["inside"], view.matched["outside"]
    scales, errors = list(SWEEP_SCALES), {"error": np.stack(list(view.errors.values()))}
    charts = {
        "norm": lines_words(f"precision.norm_words_{shown}", SWEEP_EPS, scales, view.norms),
        "matched": pair_words(
            "precision.matched_words", scales, inside, outside, noise=rounding_of(inside, outside)
        ),
        "error": lines_words("precision.error_words", list(view.errors), scales, errors),
        "drift": lines_words(
            "precision.drift_words",
            list(view.sums),
            range(1, view.d + 1),
            {"sum": np.stack(list(view.sums.values()))},
        ),
    }
    return {f"{chart}_{slot}": c for chart, words in charts.items() for slot, c in words.items()}


def _eps_claims(view: PrecisionView) -> dict[str, Claim]:
    d, rms = view.d, view.rms
    sqrt_d = math.sqrt(d)
    curves = np.concatenate(list(view.norms.values()))  # (P * E, S)
    fields = {"d": d, "sqrt_d": sqrt_d, "s_max": float(SWEEP_SCALES[-1])}
    fields["s_min"] = float(SWEEP_SCALES[0])
    fields["top_gap_pct"] = float(np.max(np.abs(curves[:, -1] / sqrt_d - 1.0)))
    fields["low_pct"] = float(np.max(curves[:, 0] / sqrt_d))
    knees = {
        f"{'in' if p == 'inside' else 'out'}{-round(math.log10(e))}": eps_knee(
            e, placement=p, rms=rms
        )
        for p in KNEE_PLACEMENTS
        for e in SWEEP_EPS
    }
    # A curve falls in proportion to the input only well below its knee (a tenth of it): the
    # sweep's smallest scale is, for every curve, or the caption counts the curves it is not.
    low = [eps_knee(e, placement=p, rms=rms) for p in view.norms for e in SWEEP_EPS]
    above = sum(knee < 10 * SWEEP_SCALES[0] for knee in low)
    fields |= {"above": above, "curves": len(low), "knee_low": min(low)} if above else {}
    settled = "precision.norm_caption_knee" if above else "precision.norm_caption"
    claims = {
        "norm_caption": pick(
            at_most(fields["top_gap_pct"], FLAT_GAP),
            settled,
            "precision.norm_caption_unsettled",
            **fields,
        ),
        "norm_explain": Claim(
            "precision.norm_explain",
            {
                **{k: knees[k] for k in ("in6", "in5", "in3", "out6")},
                "ratio": knees["in6"] / knees["out6"],
            },
        ),
    }
    claims["matched"] = _matched_claim(view)
    return claims


def _matched_claim(view: PrecisionView) -> Claim:
    sqrt_d = math.sqrt(view.d)
    if view.eps == 0:
        gap = float(np.max(np.abs(np.concatenate(list(view.matched.values())) / sqrt_d - 1)))
        # Rounding alone moves a float64 ||x / RMS(x)|| / sqrt(d) from 1: the sum of d squares,
        # the mean, the root and the division each round once, by at most an ulp at 1.
        return pick(
            at_most(gap, (view.d + 4) * float(np.finfo(np.float64).eps)),
            "precision.matched_zero",
            "precision.matched_zero_unsettled",
            sqrt_d=sqrt_d,
            gap_pct=gap,
        )
    u_lo, u_hi = matched_agreement(AGREE)
    # At the knee s r = sqrt(eps): sqrt(d / 2) inside, sqrt(d) / 2 outside.
    gap_at_knee = 1.0 - math.sqrt(2.0) / 2.0
    unit = math.sqrt(view.eps) / view.rms
    fields = {"eps_in": view.eps, "eps_out": view.eps_out, "knee": view.knee}
    fields |= {"gap_pct": gap_at_knee, "agree_pct": AGREE, "agree_lo": u_lo * unit}
    fields["agree_hi"] = u_hi * unit
    return Claim("precision.matched_caption", fields)


def _dtype_claims(view: PrecisionView, z: np.ndarray) -> dict[str, Claim]:
    errors = view.errors
    claims = {"error_f32": _finite_range_claim("float32", errors["float32"])}
    if "bfloat16" in errors:
        claims["error_bf16"] = _finite_range_claim("bfloat16", errors["bfloat16"])
    if "float16" in errors:
        claims.update(_float16_claims(errors["float16"], z, view.limits, view.eps))
        claims["limits"] = Claim(
            "precision.limits_explain",
            {
                "max": int(FLOAT16_MAX),
                "inf_from": int(FLOAT16_INF_FROM),
                "sum": view.limits.sum,
                "square": view.limits.square,
            },
        )
    return claims


def _finite_range_claim(dtype: str, errors: np.ndarray) -> Claim:
    finite = errors[np.isfinite(errors)]
    fields = {"lo": float(finite.min()) if finite.size else math.nan}
    fields["hi"] = float(finite.max()) if finite.size else math.nan
    fields["count"] = int(errors.size - finite.size)
    stem = "precision.error_f32" if dtype == "float32" else "precision.error_bf16"
    return pick(at_most(fields["count"], 0), stem, f"{stem}_nonfinite", **fields)


def _good_run(errors: np.ndarray) -> tuple[int, int] | None:
    """(first, last) of the run of sweep scales around s = 1 with errors within AGREE, or None."""
    good = np.nan_to_num(errors, nan=np.inf) <= AGREE
    centre = int(np.argmin(np.abs(np.log10(SWEEP_SCALES))))
    if not good[centre]:
        return None
    lo = hi = centre
    while lo > 0 and good[lo - 1]:
        lo -= 1
    while hi < good.size - 1 and good[hi + 1]:
        hi += 1
    return lo, hi


def _float16_claims(
    errors: np.ndarray, z: np.ndarray, limits: Float16Limits, eps: float
) -> dict[str, Claim]:
    run = _good_run(errors)
    if run is None:
        return {"error_f16_range": Claim("precision.error_f16_range_none", {"tol_pct": AGREE})}
    lo, hi = run
    # Below the run the error need not stay high: count the smaller scales it is over AGREE at.
    over = int(np.sum(~(np.nan_to_num(errors[:lo], nan=np.inf) <= AGREE)))
    fields = {"good_lo": float(SWEEP_SCALES[lo]), "good_hi": float(SWEEP_SCALES[hi])}
    fields |= {"tol_pct": AGREE, "over": over, "below_n": lo}
    ending = "" if not lo else "_below_all" if over == lo else "_below"
    claims = {"error_f16_range": Claim(f"precision.error_f16_range{ending}", fields)}
    if lo > 0:
        claims["error_f16_low"] = _float16_low_claim(
            float(SWEEP_SCALES[lo - 1]), errors[lo - 1], z, eps
        )
    claims["error_f16_high"] = _float16_high_claim(errors, limits)
    return claims


def _float16_low_claim(below: float, error: float, z: np.ndarray, eps: float) -> Claim:
    """Just below float16's good run, the causes that apply: if losing every square moves the
    output by under a tenth of the error, not the squares (x's own subnormals, under 2^-14, may
    be). Else squares lost under 2^-24, or short of bits under 2^-14."""
    with np.errstate(over="ignore"):
        x16 = np.abs((below * z).astype(np.float16).astype(np.float64))
    squares = x16 * x16
    fields = {"below": below, "error": float(error)}
    fields["underflow_pct"] = float(np.mean(squares < FLOAT16_TINY))
    fields["subnormal_pct"] = float(np.mean(squares.astype(np.float16) < FLOAT16_MIN_NORMAL))
    fields |= {"x_subnormal_pct": float(np.mean(x16 < FLOAT16_MIN_NORMAL)), "eps": eps}
    fields |= {"ms": float(np.mean(squares)), "tiny": FLOAT16_TINY}
    fields |= {"tiny_x": math.sqrt(FLOAT16_TINY), "min_normal": FLOAT16_MIN_NORMAL}
    # Every square lost (mean square 0) moves the output by sqrt(1 + ms / eps) - 1 at most.
    fields["bound"] = math.expm1(math.log1p(fields["ms"] / eps) / 2) if eps > 0 else math.inf
    if fields["bound"] < error / 10:
        cause = "_eps" if fields["x_subnormal_pct"] else "_eps_only"
    elif fields["underflow_pct"]:
        cause = ""
    else:
        cause = "_subnormal" if fields["subnormal_pct"] else "_other"
    return Claim(f"precision.error_f16_low{cause}", fields)


def _float16_high_claim(errors: np.ndarray, limits: Float16Limits) -> Claim:
    fields = {"square": limits.square, "s_max": float(SWEEP_SCALES[-1])}
    fields["inf_from"] = int(FLOAT16_INF_FROM)
    over = SWEEP_SCALES >= limits.square
    if not over.any():
        return Claim("precision.error_f16_high_none", fields)
    collapsed = at_most(float(np.max(np.abs(errors[over] - 1.0))), 1e-12)
    return pick(collapsed, "precision.error_f16_high", "precision.error_f16_high_plain", **fields)


def _drift_claims(view: PrecisionView, x: np.ndarray) -> dict[str, Claim]:
    sums = view.sums
    exact = float(sums["float64"][-1])
    finals = {dt: float(v[-1]) for dt, v in sums.items()}
    share = finals["bfloat16"] / exact if exact > 0 else 1.0
    fields = {
        "d": view.d,
        "scale": view.scale,
        "exact": exact,
        "f32": finals["float32"],
        "f16": finals["float16"],
        "bf16": finals["bfloat16"],
        "bf16_pct": share,
        "gap_pct": abs(1.0 - share),
        # The RMS is the root of the mean square: a share q of the sum is sqrt(q) of the RMS.
        "rms_gap_pct": abs(1.0 - math.sqrt(share)),
    }
    claims = {"drift_caption": Claim("precision.drift_caption", fields)}
    overflow_at = np.flatnonzero(~np.isfinite(sums["float16"]))
    if overflow_at.size:
        claims["drift"] = Claim(
            "precision.drift_overflow",
            {**fields, "index": int(overflow_at[0]) + 1, "inf_from": int(FLOAT16_INF_FROM)},
        )
    else:
        claims["drift"] = pick(
            at_most(fields["gap_pct"], 1.0 - HOLDS),
            "precision.drift_holds",
            "precision.drift_explain",
            **fields,
        )
    if torch_available() and exact > 0:
        claims["drift_torch"] = _torch_drift_claim(x, exact)
    return claims


def _torch_drift_claim(x: np.ndarray, exact: float) -> Claim:
    """What torch's own bfloat16 sum gives, and which presets cast to float32 first."""
    from core.presets import get_preset, preset_names

    widened = ("float32", "opmath")
    presets = [get_preset(name, "rms") for name in preset_names("rms")]
    fields = {"torch_pct": torch_half_sum_of_squares(x, "bfloat16") / exact}
    fields["cast"] = ", ".join(p.name for p in presets if p.reduction_dtype in widened)
    fields["native"] = ", ".join(p.name for p in presets if p.reduction_dtype not in widened)
    return Claim("precision.drift_torch", fields)
