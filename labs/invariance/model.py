"""The invariance lab: a change up close, the RMSNorm paper's Table 1, what a shift along 1 erases.

The table and the setups it changes are ``labs.invariance.table``'s. Here ``shift_sweep``
follows one case x + c 1 as c grows, and ``invariance_lab`` gathers one link state: the case a
change moved most, the whole table, the sweep, and every sentence the page says about them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
from numpy.typing import ArrayLike

from core.defaults import DEFAULT_RMS_EPS
from core.geometry import ones_direction
from core.norms import layer_norm, rms_norm
from core.stats import _as_float_array, cosine
from labkit.chart_words import ROUNDING, pair_words, rounding_of
from labkit.claims import Claim, at_least, at_most, close, pick
from labs.invariance.table import (
    NORMS,
    TABLE_TOL,
    TRANSFORMS,
    InvarianceRow,
    check_real,
    invariance_table,
    lookup_transform,
    make_setup,
    output_change,
    transformed_setup,
)


def _constant_weight(gain: float | None, d: int) -> np.ndarray | None:
    if gain is None:
        return None
    if isinstance(gain, bool) or not isinstance(gain, Real) or not math.isfinite(gain):
        raise ValueError(f"gain must be None or a finite nonzero number; got {gain!r}")
    if gain == 0:
        raise ValueError("gain must be None or a finite nonzero number; got 0")
    return np.full(d, float(gain))


def shift_sweep(
    x: ArrayLike, offsets: ArrayLike, *, eps: float = DEFAULT_RMS_EPS, gain: float | None = None
) -> dict[str, np.ndarray]:
    r"""What survives of x after adding c * 1, for every c in ``offsets`` at once.

    Returns arrays of shape (k,) for k offsets: ``offsets``; ``rms_cosine`` and ``layer_cosine``,
    the cosine between norm(x + c 1) and norm(x); and ``rms_energy_along_ones``, the fraction
    of RMSNorm's output energy :math:`\langle y, u \rangle^2 / \lVert y \rVert^2` along
    u = 1/sqrt(d). LayerNorm's cosine stays at 1 because centring deletes c. RMSNorm's output
    turns toward +-gain * 1 as |c| grows and its energy fraction goes to 1: the output then
    says almost nothing about x. Both norms use the same ``eps`` and the constant weight
    ``gain`` (None: no weight). A cosine with a zero output counts as 0, as in ``cosine``."""
    x = _as_float_array(x, name="x", ndim=1)
    offsets = _as_float_array(offsets, name="offsets", ndim=1)
    eps = check_real(eps, name="eps", allowed="a finite number >= 0", positive=False)
    d = x.shape[-1]
    weight = _constant_weight(gain, d)
    shifted = x + offsets[:, None]  # (k, d): one row per offset, normalised in one call
    rms_shifted = rms_norm(shifted, weight, eps=eps)
    u = ones_direction(d)
    energy = np.sum(rms_shifted**2, axis=-1)  # (k, d) -> (k,)
    along = (rms_shifted @ u) ** 2  # (k, d) -> (k,)
    # A zero output has no direction; report no energy along 1 rather than 0/0.
    fraction = np.where(energy > 0.0, along / np.where(energy > 0.0, energy, 1.0), 0.0)
    layer_shifted = layer_norm(shifted, weight, eps=eps)
    return {
        "offsets": offsets,
        "rms_cosine": cosine(rms_shifted, rms_norm(x, weight, eps=eps)),
        "layer_cosine": cosine(layer_shifted, layer_norm(x, weight, eps=eps)),
        "rms_energy_along_ones": fraction,
    }


# No factor 1 on the size ladder: it changes nothing, so every row would read "invariant".
SIZE_LADDER = (0.1, 0.25, 0.5, 2.0, 3.0, 5.0, 10.0)
# Beyond |c| = 1000 the cosine curve is flat to plotting precision; nothing new is shown.
SHIFT_LADDER = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 300.0, 1000.0)
SWEEP_POINTS = 401
# The collapse curves start at c = 0.1, well inside the range where x still dominates.
COLLAPSE_START = 0.1
COLLAPSE_POINTS = 120
# The shift sweep uses RMSNorm's usual eps for both norms; the table uses eps = 0, as the paper.
SWEEP_EPS = DEFAULT_RMS_EPS
# The two cases of the setup whose images the shift sweep follows.
CASE_A, CASE_B = 0, 1
# The sweep's cosine has "reached" its large-|c| limit when it is this close to it.
LIMIT_REACHED = 0.01
# c "dominates" when the spread is within this relative distance of its large-c form.
LARGE_C_RTOL = 0.01
# LayerNorm's distance "does not depend on c" within this relative change; rounding x + c at
# |c| = 1000 moves it by about 1e-13.
UNCHANGED_RTOL = 1e-9

Pair = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class CaseView:
    """The case (of the ``n`` in the batch) a change moved most: pre-activation and outputs,
    before and after. ``change[norm]`` is this case's residual; ``flip[norm]`` is
    ``|y' + y| / sqrt(d)``, which is 0 where the change only flipped the output's sign."""

    case: int
    n: int
    pre: Pair
    outputs: dict[str, Pair]
    change: dict[str, float]
    flip: dict[str, float]


@dataclass(frozen=True)
class ShiftView:
    """The shift sweep of case ``CASE_A`` and how cases ``CASE_A`` and ``CASE_B`` merge.

    ``sweep`` is ``shift_sweep`` over [-c_max, c_max]; ``offsets`` (k,) are the collapse curve's
    c values with ``spread`` (standard deviation of the coordinates of RMSNorm(x + c 1)),
    ``dist_rms`` and ``dist_layer`` (distance between the two cases' images); ``at_zero`` holds
    the same three at c = 0; ``pair_*`` are both images at c_max; ``x_*`` describe case A."""

    sweep: dict[str, np.ndarray]
    offsets: np.ndarray
    spread: np.ndarray
    dist_rms: np.ndarray
    dist_layer: np.ndarray
    at_zero: dict[str, float]
    pair_rms: Pair
    pair_layer: Pair
    x_mean: float
    x_std: float
    x_rms: float


@dataclass(frozen=True)
class InvarianceLab:
    """Everything the invariance lab shows for one link state, with the claims it makes."""

    transform: str
    size: float
    seed: int
    c_max: float
    case: CaseView
    residual: dict[str, float]
    rows: list[InvarianceRow]
    shift: ShiftView
    claims: dict[str, Claim]


def _case_view(transform: str, size: float, seed: int) -> tuple[CaseView, dict[str, float]]:
    before, after = transformed_setup(transform, size=size, seed=seed)
    change = output_change(before, after, eps=0.0)
    a_before, a_after = before.preactivations(), after.preactivations()
    moved = change["layer"] + change["rms"]  # (n,)
    # The first case that moved most; cases within rounding of each other tie (a sign flip
    # moves every case by 2), and where nothing moves beyond rounding that is case 0.
    case = int(np.argmax(moved >= np.max(moved) - TABLE_TOL))
    outputs, flip = {}, {}
    for name, norm in NORMS.items():
        y_before, y_after = norm(a_before[case], eps=0.0), norm(a_after[case], eps=0.0)
        outputs[name] = (y_before, y_after)
        flip[name] = float(np.linalg.norm(y_after + y_before) / math.sqrt(y_before.size))
    view = CaseView(
        case=case,
        n=a_before.shape[0],
        pre=(a_before[case], a_after[case]),
        outputs=outputs,
        change={name: float(c[case]) for name, c in change.items()},
        flip=flip,
    )
    return view, {name: float(np.max(c)) for name, c in change.items()}


def _images(a: np.ndarray, b: np.ndarray, offsets: np.ndarray) -> dict[str, np.ndarray]:
    """Both norms of a + c 1 and b + c 1 for every c: (k, d) each."""
    out = {}
    for name, norm in NORMS.items():
        out[f"{name}_a"] = norm(a + offsets[:, None], eps=SWEEP_EPS)
        out[f"{name}_b"] = norm(b + offsets[:, None], eps=SWEEP_EPS)
    return out


def _shift_view(seed: int, c_max: float) -> ShiftView:
    a = make_setup(seed=seed).preactivations()
    x_a, x_b = a[CASE_A], a[CASE_B]
    offsets = np.geomspace(COLLAPSE_START, c_max, COLLAPSE_POINTS)
    images = _images(x_a, x_b, np.concatenate([[0.0], offsets]))  # row 0 is c = 0
    spread = np.std(images["rms_a"], axis=-1)  # (k + 1, d) -> (k + 1,)
    dist = {n: np.linalg.norm(images[f"{n}_a"] - images[f"{n}_b"], axis=-1) for n in NORMS}
    return ShiftView(
        sweep=shift_sweep(x_a, np.linspace(-c_max, c_max, SWEEP_POINTS), eps=SWEEP_EPS),
        offsets=offsets,
        spread=spread[1:],
        dist_rms=dist["rms"][1:],
        dist_layer=dist["layer"][1:],
        at_zero={"spread": float(spread[0]), **{f"dist_{n}": float(dist[n][0]) for n in NORMS}},
        pair_rms=(images["rms_a"][-1], images["rms_b"][-1]),
        pair_layer=(images["layer_a"][-1], images["layer_b"][-1]),
        x_mean=float(np.mean(x_a)),
        x_std=float(np.std(x_a)),
        x_rms=float(math.sqrt(np.mean(x_a**2))),
    )


def moves(pair: Pair) -> np.ndarray:
    """|after - before| (or |case b - case a|) per coordinate: how far a pair of outputs part."""
    return np.abs(pair[1] - pair[0])


def _chart_words(case: CaseView, s: ShiftView) -> dict[str, Claim]:
    """Each chart's summary (its caption and accessible name), by ``labkit.chart_words``."""
    coords = range(case.pre[0].shape[-1])
    # Rounding, relative to what each chart's values come from: the outputs a move is taken
    # between, a cosine's 1, the distances themselves.
    outputs = rounding_of(*case.outputs["rms"], *case.outputs["layer"])
    images = rounding_of(*s.pair_rms, *s.pair_layer)
    charts = {
        "before_after": (coords, moves(case.outputs["rms"]), moves(case.outputs["layer"]), outputs),
        "sweep": (s.sweep["offsets"], s.sweep["rms_cosine"], s.sweep["layer_cosine"], ROUNDING),
        "collapse": (s.offsets, s.dist_rms, s.dist_layer, rounding_of(s.dist_rms, s.dist_layer)),
        "pair": (range(s.pair_rms[0].shape[-1]), moves(s.pair_rms), moves(s.pair_layer), images),
    }
    claims = {}
    for chart, (where, rms, layer, noise) in charts.items():
        words = pair_words(f"invariance.{chart}_words", list(where), rms, layer, noise=noise)
        claims |= {f"{chart}_{slot}": claim for slot, claim in words.items()}
    return claims


def _case_claims(view: CaseView) -> dict[str, Claim]:
    moved = at_least(max(view.change.values()), TABLE_TOL)
    claims = {
        "case_intro": pick(
            moved,
            "invariance.case_intro_moved",
            "invariance.case_intro_still",
            case=view.case,
            n=view.n,
        )
    }
    names = {"layer": "LayerNorm", "rms": "RMSNorm"}
    for name in ("rms", "layer"):
        if at_most(view.change[name], TABLE_TOL):
            key = "invariance.case_cancelled"
        elif at_most(view.flip[name], TABLE_TOL):
            key = "invariance.case_flipped"
        else:
            key = "invariance.case_moved"
        claims[f"case_{name}"] = Claim(
            key, {"norm": names[name], "change": view.change[name]}, TABLE_TOL
        )
    return claims


def _row_claims(rows: list[InvarianceRow], size: float, seed: int) -> dict[str, Claim]:
    in_paper = [row for row in rows if row.matches_paper is not None]
    agree = sum(bool(row.matches_paper) for row in in_paper)
    claims = {
        "table": Claim(
            "invariance.table_caption",
            {"tol": TABLE_TOL, "agree": agree, "total": len(in_paper), "size": size, "seed": seed},
        )
    }
    for row in rows:
        t = TRANSFORMS[row.id]
        expected = (row.layer_invariant, row.rms_invariant) == (t.layer_invariant, t.rms_invariant)
        claims[f"why_{row.id}"] = pick(
            expected,
            f"invariance.why_{row.id}",
            "invariance.why_unexpected",
            noise=TABLE_TOL,
            transform=row.id,
            layer=row.layer_residual,
            rms=row.rms_residual,
            tol=TABLE_TOL,
        )
    return claims


def _sweep_claims(s: ShiftView, c_max: float) -> dict[str, Claim]:
    sweep = s.sweep
    low = float(np.min(sweep["layer_cosine"]))
    cos_far = float(sweep["rms_cosine"][-1])
    # As c -> +inf, RMSNorm(x + c 1) -> 1 up to its length, and cos(1, x) = mean(x) / RMS(x).
    limit = s.x_mean / s.x_rms
    gap = abs(cos_far - limit)
    rms = {"case": CASE_A, "c": c_max, "cos_far": cos_far, "cos_neg": float(sweep["rms_cosine"][0])}
    rms["energy_far"] = float(sweep["rms_energy_along_ones"][-1])
    return {
        "sweep_layer": pick(
            at_least(low, 1.0 - TABLE_TOL),
            "invariance.sweep_layer_flat",
            "invariance.sweep_layer_moves",
            c=c_max,
            low=low,
        ),
        "sweep_rms": Claim("invariance.sweep_rms", rms),
        "sweep_limit": pick(
            at_most(gap, LIMIT_REACHED),
            "invariance.sweep_limit_reached",
            "invariance.sweep_limit_not_yet",
            limit=limit,
            neg_limit=-limit,
            c=c_max,
            cos_far=cos_far,
            gap=gap,
        ),
    }


def _collapse_claims(s: ShiftView, c_max: float) -> dict[str, Claim]:
    denom = abs(c_max + s.x_mean)
    bound = s.x_std / denom
    spread = float(s.spread[-1])
    collapse = {"c": c_max, "spread": spread, "std": s.x_std, "denom": denom, "bound": bound}
    collapse["off_pct"] = abs(bound - spread) / spread
    dist_layer, dist_layer0 = float(s.dist_layer[-1]), s.at_zero["dist_layer"]
    pair = {"a": CASE_A, "b": CASE_B, "c": c_max, "dist": float(s.dist_rms[-1])}
    pair.update(dist0=s.at_zero["dist_rms"], dist_layer=dist_layer, dist_layer0=dist_layer0)
    dominates = close(spread, bound, rtol=LARGE_C_RTOL)
    kept = close(dist_layer, dist_layer0, rtol=UNCHANGED_RTOL)
    return {
        "collapse": pick(
            dominates, "invariance.collapse_dominates", "invariance.collapse_not_yet", **collapse
        ),
        "pair": pick(kept, "invariance.pair_kept", "invariance.pair_changed", **pair),
    }


def invariance_lab(*, transform: str, size: float, seed: int, c_max: float) -> InvarianceLab:
    """The invariance lab's state: ``transform`` at ``size`` on the setup drawn from ``seed``
    (16 cases, 8 inputs, 8 units, eps = 0), the whole table, and the shift sweep up to ``c_max``
    (eps = ``SWEEP_EPS``), with every claim the page makes about them."""
    lookup_transform(transform)
    c_max = check_real(c_max, name="c_max", allowed="a finite number > 0", positive=True)
    case, residual = _case_view(transform, size, seed)
    rows = invariance_table(size=size, seed=seed)
    shift = _shift_view(seed, c_max)
    claims = {**_case_claims(case), **_row_claims(rows, size, seed), **_sweep_claims(shift, c_max)}
    claims |= {**_collapse_claims(shift, c_max), **_chart_words(case, shift)}
    return InvarianceLab(transform, size, seed, c_max, case, residual, rows, shift, claims)
