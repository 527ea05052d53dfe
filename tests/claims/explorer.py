"""The explorer's sentences, recomputed from the link state from first principles.

Nothing here calls or copies ``labs.explorer`` or ``core.norms``: the input and gain vectors
come from ``core.inputs`` (the link's seeded generators, not under test); the statistics of x are
exact rational sums (``fractions.Fraction``) rounded once, and every sentence's number is
derived from them by its own closed form (cos(x - mu, x) = std / RMS, a = mu sqrt(d), the
difference of two RMSNorms = max|x| |1/den_k - 1/den|, ...). Outputs in the compute dtype are
recomputed with torch in that dtype. RMS(x) is always the root mean square without eps; the
quantities with eps are the denominators.

Verdicts are checked outside a thin band around their threshold (where the exact value and any
float64 computation of it may fall on either side), and every "≈ 0" a sentence shows is checked
twice: the exact value is within the rounding level the sentence used, and that level is small
against the operands (it hides no real value).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import strategies as st

from core.defaults import DTYPES, EPS_LADDER, SCALE_LADDER
from core.inputs import DISTRIBUTIONS, GAIN_PATTERNS, gain_vector, make_input
from labs.explorer import CHART_BUCKETS, PARTIAL_LADDER, explore
from tests.claims.oracle import check_pair_words, check_point_words

U64 = float(np.finfo(np.float64).eps)
# Relative tolerance of a statistic computed in each dtype against torch recomputing it there
# in another order.
DTYPE_RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 4e-3, "bfloat16": 3e-2}
# A rounding level a sentence shows as "≈ 0" must stay below this share of the quantities it
# belongs with: it may hide rounding, never a value a reader should see.
HIDES_NOTHING = 1e-6
# Verdicts are not checked where the exact value lies within this relative band of the limit.
BAND = 1e-6

# Typed vectors: magnitudes from 1e-15 to 1e15, zeros and repeats, one magnitude per vector or
# mixed, nearly constant ones (a repeat and one ulp-sized step).
_mantissa = st.builds(lambda sign, m: sign * m, st.sampled_from([-1, 1]), st.floats(1, 9.99))
_magnitude = st.builds(lambda m, e: m * 10.0**e, _mantissa, st.integers(-15, 15))
_entry = st.one_of(_magnitude, st.just(0.0))
_typed = st.one_of(
    st.lists(_entry, min_size=2, max_size=12),
    st.builds(
        lambda ms, e: [m * 10.0**e for m in ms],
        st.lists(st.one_of(_mantissa, st.just(0.0)), min_size=2, max_size=12),
        st.sampled_from([-15, -12, -8, 0, 8, 12, 15]),
    ),
    st.builds(lambda v, n: [v] * n, _entry, st.integers(2, 40)),
    st.builds(
        lambda v, n, ulps: [v] * n + [v * (1 + ulps * U64)],
        _magnitude,
        st.integers(1, 20),
        st.sampled_from([1, 2, 16, 1e6]),
    ),
)
_number = lambda lo, hi, edges: st.one_of(st.sampled_from(edges), st.floats(lo, hi))  # noqa: E731
# Extremes are drawn often, so that they meet one another (scale 1e4 with eps 10 in float16).
_extreme = lambda edges, ladder: st.one_of(st.sampled_from(edges), st.sampled_from(ladder))  # noqa: E731

STATES = st.fixed_dictionaries(
    {
        # Typed vectors and the link's generated ones (d up to 8192), about half each.
        "typed": st.booleans().flatmap(lambda typed: _typed if typed else st.none()),
        "d": st.one_of(st.sampled_from([2, 3, 8, 1201, 8192]), st.integers(2, 300)),
        "dist": st.sampled_from(DISTRIBUTIONS),
        "seed": st.integers(0, 2**31 - 1),
        "offset": _number(-20.0, 20.0, [-20.0, 0.0, 20.0, 0.1]),
        "scale": _extreme([1e-4, 1e4], SCALE_LADDER),
        "eps": _extreme([0.0, 1e-12, 10.0], EPS_LADDER),
        "gain": _number(-4.0, 4.0, [-4.0, -1.0, 0.0, 1.0, 4.0]),
        "gain_pattern": st.sampled_from(GAIN_PATTERNS),
        "bias": _number(-4.0, 4.0, [0.0, -4.0, 4.0]),
        "rms_bias": _number(-4.0, 4.0, [0.0, 0.5]),
        "partial": st.sampled_from(PARTIAL_LADDER),
        "dtype": st.sampled_from(DTYPES),
        "torch": st.booleans(),
    }
)


def _x(state: dict) -> np.ndarray:
    """x as the page builds it from the link."""
    if state["typed"] is not None:
        return state["scale"] * np.array(state["typed"], dtype=np.float64) + state["offset"]
    return make_input(
        state["d"], dist=state["dist"], seed=state["seed"], offset=state["offset"],
        scale=state["scale"],
    )  # fmt: skip


def _backend(state: dict) -> tuple[str, str]:
    torch_on = state["torch"] or state["dtype"] != "float64"
    return ("torch", state["dtype"]) if torch_on else ("numpy", "float64")


_VIEWS: dict[str, object] = {}


def view(state: dict):
    key = json.dumps(state, sort_keys=True)
    if key not in _VIEWS:
        _VIEWS.clear()
        backend, dtype = _backend(state)
        _VIEWS[key] = explore(
            _x(state), eps=state["eps"], gain=state["gain"], gain_pattern=state["gain_pattern"],
            seed=state["seed"], bias=state["bias"], rms_bias=state["rms_bias"],
            partial=state["partial"], backend=backend, device="cpu", dtype=dtype,
        )  # fmt: skip
    return _VIEWS[key]


def _root(q: Fraction) -> float:
    """sqrt of an exact non-negative rational, without underflow of its float."""
    if q == 0:
        return 0.0
    shift = (q.numerator.bit_length() - q.denominator.bit_length()) // 2
    return math.ldexp(math.sqrt(float(q / Fraction(4) ** shift)), shift)


class Ref:
    """The state's numbers, exact where they can be: rational sums over the x the norms saw."""

    def __init__(self, state: dict) -> None:
        self.state = state
        self.backend, self.dtype = _backend(state)
        raw = _x(state)
        if (
            self.dtype != "float64"
            and np.max(np.abs(raw)) > torch.finfo(getattr(torch, self.dtype)).max
        ):
            self.dtype = "float64"  # x does not fit: the page computes in float64 and says so
        self.d = d = raw.shape[-1]
        self.kind = getattr(torch, self.dtype)
        self.xt = torch.tensor(raw, dtype=self.kind)
        self.x = x = self.xt.double().numpy()
        self.g = gain_vector(
            d, pattern=state["gain_pattern"], value=state["gain"], seed=state["seed"]
        )
        self.g_plane = state["gain"] if state["gain_pattern"] == "constant" else 1.0
        self.eps = eps = state["eps"]
        # pRMSNorm keeps ceil(p d) coordinates (p d rounded first, so 0.07 * 100 keeps 7).
        self.k = k = min(d, max(1, math.ceil(round(state["partial"] * d, 9))))
        exact = [Fraction(v) for v in x.tolist()]
        squares = [v * v for v in exact]
        mu = sum(exact) / d
        ms, ms_k = sum(squares) / d, sum(squares[:k]) / k
        var = ms - mu * mu  # exact: no cancellation in rationals
        e = Fraction(eps)
        self.mu_q, self.ms_q, self.var_q = mu, ms, var
        self.mean, self.ms, self.var = float(mu), float(ms), float(var)
        self.rms, self.rms_k, self.std = _root(ms), _root(ms_k), _root(var)
        self.den_k, self.den = _root(ms_k + e), _root(ms + e)
        self.den_layer = _root(var + e)
        self.top = float(np.max(np.abs(x)))
        self.mean_abs = math.fsum(np.abs(x).tolist()) / d
        # mu / RMS(x), and cos(x - mu 1, x) = sqrt(Var / mean(x^2)), both exact ratios.
        self.ratio = math.copysign(_root(mu * mu / ms), mu) if ms else 0.0
        self.cos_centred = _root(var / ms) if ms else 0.0

    def flat(self) -> bool | None:
        """Whether x is constant to within float64 rounding (None: too close to tell)."""
        spread, limit = self.var_q, Fraction(4 * U64) ** 2 * self.ms_q
        if spread <= limit / 4:
            return True
        if spread >= limit * 4:
            return False
        return None


_REFS: dict[str, Ref] = {}


def ref(state: dict) -> Ref:
    key = json.dumps(state, sort_keys=True)
    if key not in _REFS:
        _REFS.clear()
        _REFS[key] = Ref(state)
    return _REFS[key]


def _near(shown: float, expected: float, *, rtol: float, atol: float = 0.0, what: str = "") -> None:
    if math.isnan(expected):
        assert math.isnan(shown), (what, shown, expected)
        return
    if math.isinf(expected):
        assert shown == expected, (what, shown, expected)
        return
    assert abs(shown - expected) <= atol + rtol * abs(expected), (what, shown, expected)


def _zero_shown(claim, name: str) -> bool:
    """Whether field ``name`` reads 0 or ≈ 0 in the sentence."""
    value = claim.fields[name]
    return value == 0 or abs(value) <= claim.noise_of(name)


def _rounding_only(claim, name: str, exact: float, size: float) -> None:
    """A field shown as ≈ 0: its exact value is within the rounding level the sentence used,
    and that level is small against ``size``, the operands it belongs with."""
    noise = claim.noise_of(name)
    assert abs(exact) <= 2 * noise, (name, exact, noise)
    assert noise <= HIDES_NOTHING * size, (name, noise, size)


def _decided(claimed: bool, value: float, limit: float, what: str) -> None:
    """``claimed`` says value <= limit; checked outside the band around the limit."""
    if abs(value - limit) <= BAND * abs(limit):
        return
    assert claimed == (value <= limit), (what, claimed, value, limit)


# --- the coordinates ------------------------------------------------------------------------


def _outputs_in_dtype(r: Ref, state: dict) -> tuple[np.ndarray, np.ndarray]:
    """RMSNorm and LayerNorm of x in the dtype, squares and means taken in it, as torch does
    them written out (never torch.nn.functional, whose half types compute in float32)."""
    xt, d, k = r.xt, r.d, r.k
    with torch.no_grad():
        g = torch.tensor(r.g, dtype=r.kind)
        head = xt[:k]
        den = torch.sqrt((head * head).mean() + r.eps)
        # The core's 0 / 0 = 0: a zero x over a zero denominator stays 0.
        y_rms = torch.where(xt == 0, torch.zeros_like(xt), xt / den) * g
        if state["rms_bias"]:
            y_rms = y_rms + torch.full((d,), state["rms_bias"], dtype=r.kind)
        centred = xt - xt.mean()
        den = torch.sqrt((centred * centred).mean() + r.eps)
        y_layer = torch.where(centred == 0, torch.zeros_like(xt), centred / den) * g
        y_layer = y_layer + torch.full((d,), state["bias"], dtype=r.kind)
    return y_rms.double().numpy(), y_layer.double().numpy()


def check_coords(state: dict, claim) -> None:
    v, r, f = view(state), ref(state), claim.fields
    assert f["d"] == r.d
    for name, y in (("m_rms", v.y_rms), ("m_layer", v.y_layer)):
        finite = bool(np.all(np.isfinite(y)))
        mean = math.fsum(y.tolist()) / r.d if finite else float(np.mean(y))
        if _zero_shown(claim, name):
            _rounding_only(claim, name, mean, float(np.max(np.abs(y))))
        else:
            _near(f[name], mean, rtol=1e-12, atol=claim.noise_of(name), what=name)


def check_envelope(state: dict, claim) -> None:
    """The chart shows each group of ``width`` coordinates by its smallest and largest finite
    value, each at its own index and exact (to the float32 the chart sends); ``d`` is the width
    of x. Both the caption and the chart's label quote ``width``."""
    v, f = view(state), claim.fields
    d = _x(state).shape[-1]
    width = math.ceil(d / CHART_BUCKETS)  # the chart's columns: one group each
    assert d > 2 * CHART_BUCKETS and f["width"] == width and f.get("d", d) == d
    for key, full in (("x", v.x), ("rms", v.y_rms), ("layer", v.y_layer)):
        shown = v.chart[key]
        exact = full[shown.index].astype(shown.values.dtype)
        assert np.array_equal(shown.values, exact, equal_nan=True), key
        group = shown.index // width
        for start in range(0, d, width):
            part = full[start : start + width]
            finite = part[np.isfinite(part)].astype(shown.values.dtype)
            here = shown.values[group == start // width]
            assert 1 <= len(here) <= 2, (key, start, len(here))
            if finite.size:
                assert here.min() == finite.min() and here.max() == finite.max(), (key, start)


def check_divisors(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    xt, rtol = r.xt, DTYPE_RTOL[r.dtype]
    with torch.no_grad():
        head = xt[: r.k]
        rms = torch.sqrt(torch.sum(head * head) / r.k + r.eps).double().item()
        mean_t = xt.mean()
        c = xt - mean_t
        std = torch.sqrt(torch.sum(c * c) / r.d + r.eps).double().item()
        mean = mean_t.double().item()
    # The sum of squares may overflow where their mean does not (a half sum is rounded to
    # half): then only the mean-first order is the dtype's own.
    if math.isinf(rms) or math.isinf(std):
        with torch.no_grad():
            rms = torch.sqrt((head * head).mean() + r.eps).double().item()
            std = torch.sqrt((c * c).mean() + r.eps).double().item()
    _near(f["rms"], rms, rtol=rtol, what="rms")
    # A (near-)constant x leaves only rounding in x - mu: a few ulps of x's size.
    ulps = 64 * torch.finfo(r.kind).eps * r.rms
    _near(f["std"], std, rtol=rtol, atol=ulps, what="std")
    if _zero_shown(claim, "mean"):
        # The mean the dtype computed, shown as ≈ 0 only below float64's rounding of a mean.
        assert abs(mean) <= 2 * claim.noise_of("mean")
        assert claim.noise_of("mean") <= 4 * r.d * U64 * r.mean_abs
    else:
        _near(f["mean"], mean, rtol=rtol, atol=ulps, what="mean")


# --- what this shows ------------------------------------------------------------------------


def _gx_direction(r: Ref) -> tuple[float, bool]:
    """cos(g * x, x) = sum g x^2 / (|g x| |x|), in units of max|g| and max|x|."""
    gs = r.g / np.max(np.abs(r.g)) if np.any(r.g) else r.g
    xs = r.x / r.top if r.top > 0 else r.x
    gx = gs * xs
    na, nb = math.sqrt(math.fsum((gx * gx).tolist())), math.sqrt(math.fsum((xs * xs).tolist()))
    if na == 0 or nb == 0:
        return 0.0, False
    return math.fsum((gx * xs).tolist()) / (na * nb), True


def check_why_scale(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    key = claim.key.rsplit("_", 1)[-1]
    _near(f["rms"], r.den_k, rtol=1e-12, what="denominator")
    if key == "infinite":
        assert r.den_k == 0 and np.any(r.x[r.k :]) and not np.any(r.x[: r.k])
        return
    cos, nonzero = _gx_direction(r)
    if key == "zero":
        assert not nonzero and (not np.any(r.x) or not np.any(r.g))
        return
    assert nonzero and r.den_k > 0
    _near(f["cos"], cos, rtol=0, atol=64 * U64, what="cos")
    if key == "same":
        assert cos >= 1 - 1e-9
    elif key == "opposite":
        assert cos <= -1 + 1e-9
    else:
        assert abs(cos) < 1 - 1e-9 and np.ptp(r.g) > 0, "only a gain pattern turns RMSNorm"


def _check_ratio(r: Ref, claim) -> None:
    """The field ``ratio`` is mu / RMS(x), RMS without eps."""
    if _zero_shown(claim, "ratio"):
        _rounding_only(claim, "ratio", r.ratio, 1.0)
        # The rounding of a float64 mean: about d ulps of mean|x|, against RMS(x).
        level = 4 * r.d * U64 * r.mean_abs / r.rms if r.rms > 0 else 0.0
        assert claim.noise_of("ratio") <= level
    else:
        _near(claim.fields["ratio"], r.ratio, rtol=1e-9, atol=claim.noise_of("ratio"))


def check_why_layer(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    flat = r.flat()
    if claim.key.endswith("flat"):
        assert flat is not False
        return
    assert flat is not True
    _check_ratio(r, claim)
    # cos(x - mu 1, x) = sqrt(Var / mean(x^2)); x - mu rounds by ulps of |mu| against the spread.
    cos = r.cos_centred
    spread = 64 * U64 * (1 + abs(r.mean) / r.std) if r.std > 0 else math.inf
    _near(f["cos"], cos, rtol=0, atol=max(claim.noise_of("cos"), spread), what="cos")
    _decided(claim.key.endswith("turned"), cos, 1 - 1e-9, "kept")


def check_why_offset(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    key = claim.key.rsplit("_", 1)[-1]
    if key == "zero":
        assert not np.any(r.x)
        return
    assert np.any(r.x)
    if key == "flat":
        assert r.flat() is not False
        return
    assert r.flat() is not True
    _check_ratio(r, claim)
    # LayerNorm's output has mean exactly 0 and no component along 1; its rounding comes from
    # x - mu, a few ulps of |x| + |mu| per coordinate, over the denominator.
    operands = (r.top + abs(r.mean)) / r.den_layer if r.den_layer > 0 else 0.0
    layer_size = r.std / r.den_layer if r.den_layer > 0 else 0.0
    for name in ("m_layer", "cos_layer"):
        assert _zero_shown(claim, name), (name, f[name])
    _rounding_only(claim, "m_layer", 0.0, max(layer_size, operands))
    _rounding_only(claim, "cos_layer", 0.0, max(1.0, operands / layer_size if layer_size else 0))
    if r.den_k == 0:
        assert key == "kept" and math.isnan(f["m_rms"])
        return
    # Before gain and bias RMSNorm's output has mean mu / den_k and cos(x, 1) = mu / RMS(x).
    m_rms = r.mean / r.den_k
    if _zero_shown(claim, "m_rms"):
        _rounding_only(claim, "m_rms", m_rms, r.top / r.den_k)
    else:
        _near(f["m_rms"], m_rms, rtol=1e-9, atol=claim.noise_of("m_rms"), what="m_rms")
    if _zero_shown(claim, "cos_rms"):
        _rounding_only(claim, "cos_rms", r.ratio, 1.0)
    else:
        _near(f["cos_rms"], r.ratio, rtol=1e-9, atol=claim.noise_of("cos_rms"), what="cos_rms")
    # "x's mean is float64 rounding": mu / RMS(x) at most the rounding of a float64 mean.
    level = 2 * r.d * U64 * r.mean_abs / r.rms
    if key == "none":
        assert abs(r.ratio) <= 2 * level and _zero_shown(claim, "m_rms")
    elif abs(r.ratio) < level / 4:
        raise AssertionError(f"mu / RMS(x) = {r.ratio} is rounding, but the offset is 'kept'")


def check_why_moment(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    _near(f["rms2"], r.ms, rtol=1e-12, what="rms2")
    # A float64 mean and variance of d terms: about d ulps of the second moment.
    slack = 4 * r.d * U64 * r.ms
    for name, exact in (("var", r.var), ("mean2", r.mean**2)):
        if _zero_shown(claim, name):
            _rounding_only(claim, name, exact, r.ms)
        else:
            _near(f[name], exact, rtol=1e-9, atol=slack, what=name)


def check_zero_vector(state: dict, claim) -> None:
    """Sentences for x = 0 only: every coordinate the norms saw is 0."""
    assert not np.any(ref(state).x)


def check_why_moment_share(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert np.any(r.x), "x = 0 has no share to quote"
    share = float(r.mu_q * r.mu_q / r.ms_q) if r.ms_q else 0.0
    if _zero_shown(claim, "share_pct"):
        _rounding_only(claim, "share_pct", share, 1.0)
    else:
        _near(f["share_pct"], share, rtol=1e-9, atol=4 * r.d * U64, what="share")


def check_centring(state: dict, claim) -> None:
    """LayerNorm(x) is RMSNorm(x - mu 1) with the same eps, exactly: the page's two float64
    computations of it agree to rounding unless plain float64 cannot compute the second (its
    squares underflow), and LayerNorm's vector is (x - mu) / sqrt(Var + eps)."""
    r, v, f = ref(state), view(state), claim.fields
    layer = (r.x - r.mean) / r.den_layer if r.den_layer > 0 else np.zeros(r.d)
    size = float(np.max(np.abs(layer)))
    # The operands: x - mu rounds by ulps of |x| + |mu|, then is divided by the denominator.
    operands = (r.top + abs(r.mean)) / r.den_layer if r.den_layer > 0 else 0.0
    shown = v.units.unit_layer
    assert np.max(np.abs(shown - layer)) <= 1e-9 * size + 64 * U64 * operands
    if claim.key.endswith("identity"):
        assert _zero_shown(claim, "diff")
        _rounding_only(claim, "diff", 0.0, max(size, operands))
        return
    # RMSNorm(x - mu 1) in plain float64, squares of x - mu and all (0 / 0 = 0).
    centred = r.x - r.mean
    with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
        den = math.sqrt(float(np.mean(centred * centred)) + r.eps)
        plain = np.where(centred == 0, 0.0, centred / den)
        gap = float(np.max(np.abs(plain - layer)))
    assert not gap <= 1e-6 * max(size, operands), (gap, size)
    _near(f["diff"], gap, rtol=1e-6, what="diff")


def check_centring_mean(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    _check_ratio(r, claim)
    # max_i |(x_i - mu) / den_layer - x_i / den|, from the exact statistics.
    if r.den_layer == 0 or r.den == 0:
        layer = np.zeros(r.d) if r.den_layer == 0 else (r.x - r.mean) / r.den_layer
        full = np.zeros(r.d) if r.den == 0 else r.x / r.den
    else:
        layer, full = (r.x - r.mean) / r.den_layer, r.x / r.den
    diff = float(np.max(np.abs(layer - full)))
    size = max(float(np.max(np.abs(layer))), float(np.max(np.abs(full))))
    mine = 8 * U64 * (size + abs(r.mean) / (r.den_layer or 1))  # my own rounding
    same = claim.key.endswith("same")
    if same:
        assert diff <= 2 * claim.noise_of("diff") + mine, (diff, claim.noise_of("diff"))
        assert claim.noise_of("diff") <= HIDES_NOTHING * size
    else:
        assert diff > claim.noise_of("diff") / 2 - mine
        _near(f["diff"], diff, rtol=1e-6, atol=claim.noise_of("diff") + mine, what="diff")


# --- the geometry ---------------------------------------------------------------------------


def check_plane_position(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert np.any(r.x), "x = 0 has no angle to quote"
    # a = <x, 1/sqrt(d)> = mu sqrt(d); b = |x - mu 1| = sqrt(d Var); the angle is atan2(b, a).
    a, b = r.mean * math.sqrt(r.d), r.std * math.sqrt(r.d)
    angle = math.degrees(math.atan2(b, a))
    length = r.rms * math.sqrt(r.d)
    for name, exact, size in (("a", a, length), ("b", b, length), ("angle", angle, 180.0)):
        if _zero_shown(claim, name):
            _rounding_only(claim, name, exact, size)
        else:
            atol = claim.noise_of(name) + 64 * r.d * U64 * size
            _near(f[name], exact, rtol=1e-9, atol=atol, what=name)


def _denominators_in_dtype(r: Ref, state: dict) -> tuple[float, float]:
    """RMSNorm's and LayerNorm's denominators as the page's backend computes them: torch in the
    dtype, written out, or plain numpy float64 (squares of x itself, no rescaling)."""
    if r.backend == "torch":
        with torch.no_grad():
            head, c = r.xt[: r.k], r.xt - r.xt.mean()
            dens = torch.sqrt((head * head).mean() + r.eps), torch.sqrt((c * c).mean() + r.eps)
        return dens[0].double().item(), dens[1].double().item()
    with np.errstate(under="ignore", over="ignore"):
        c = r.x - np.mean(r.x)
        return (
            math.sqrt(float(np.mean(r.x[: r.k] ** 2)) + r.eps),
            math.sqrt(float(np.mean(c * c)) + r.eps),
        )


def _check_apart(state: dict, claim) -> None:
    """A ``_dtype`` plane sentence: the page's own computation is not the float64 picture (a
    reduced dtype, or denominators that are not the exact ones), and it quotes the computed
    outputs' lengths as the metrics show them; a plain sentence: they are the same."""
    r, v, f = ref(state), view(state), claim.fields
    shown, exact = _denominators_in_dtype(r, state), (r.den_k, r.den_layer)
    # LayerNorm's denominator of a nearly constant x is rounding of x - mu: any two orders of
    # computing it may disagree, and then either sentence is true.
    settled = 64 * U64 * (r.top + abs(r.mean)) < 1e-9 * r.den_layer
    pairs = list(zip(shown, exact, strict=True))[: 2 if settled else 1]
    if not claim.key.endswith("_dtype"):
        assert r.dtype == "float64"
        assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in pairs), (shown, exact)
        return
    assert f["dtype"] == r.dtype
    if r.dtype == "float64" and settled:
        assert not all(math.isclose(a, b, rel_tol=1e-12) for a, b in pairs), (shown, exact)
    for name, y in (("r_rms", v.y_rms), ("r_layer", v.y_layer)):
        if name in f:
            _near(f[name], _length(y), rtol=1e-12, what=name)


def check_plane_rms(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    key = claim.key.removesuffix("_dtype").rsplit("_", 1)[-1]
    if key == "infinite":
        assert r.den_k == 0 and np.any(r.x)
        return
    if key == "origin":
        assert r.g_plane == 0 or not np.any(r.x)
        assert f["r_rms"] == 0
        return
    _check_apart(state, claim)
    assert (r.g_plane > 0) == (key == "same") and r.g_plane != 0 and np.any(r.x)
    _near(f["gain"], r.g_plane, rtol=0, what="gain")
    # |g x / den_k| = |g| sqrt(d) RMS(x) / den_k: the plane's float64 point.
    drawn = f["r_exact"] if claim.key.endswith("_dtype") else f["r_rms"]
    _near(drawn, abs(r.g_plane) * (math.sqrt(r.d) * r.rms / r.den_k), rtol=1e-9)


def check_plane_layer(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    _check_apart(state, claim)
    drawn = f["r_exact"] if claim.key.endswith("_dtype") else f["r_layer"]
    radius = math.sqrt(r.d) * abs(r.g_plane)
    if claim.key.removesuffix("_dtype").endswith("flat"):
        # Only rounding is left to scale: any length up to the circle's is that noise.
        assert r.flat() is not False and 0 <= drawn <= radius * (1 + 1e-9)
        return
    assert r.flat() is not True
    r_layer = radius * r.std / r.den_layer if r.den_layer > 0 else 0.0
    # x - mu rounds by ulps of |x| + |mu|: a nearly constant x loses digits of its spread.
    operands = radius * (r.top + abs(r.mean)) / r.den_layer if r.den_layer > 0 else 0.0
    _near(drawn, r_layer, rtol=1e-9, atol=64 * U64 * operands, what="r_layer")
    # "lands on the vertical axis": what is left along 1 is rounding.
    assert _zero_shown(claim, "la"), f["la"]
    _rounding_only(claim, "la", 0.0, max(r_layer, operands))


def check_plane_eps(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert r.flat() is not True
    # eps alone scales a radius by sqrt(s / (s + eps)) = root(s) / denominator.
    f_rms = r.rms / r.den if r.den > 0 else 1.0
    f_layer = r.std / r.den_layer if r.den_layer > 0 else 1.0
    _near(f["f_rms_pct"], f_rms, rtol=1e-9, what="f_rms")
    operands = (r.top + abs(r.mean)) / r.den_layer if r.den_layer > 0 else 0.0
    _near(f["f_layer_pct"], f_layer, rtol=1e-9, atol=64 * U64 * operands, what="f_layer")
    _near(f["ms"], r.ms, rtol=1e-12, what="ms")
    _near(f["var"], r.var, rtol=1e-9, atol=4 * r.d * U64 * r.ms, what="var")
    _near(f["radius"], math.sqrt(r.d) * abs(r.g_plane), rtol=1e-12, what="radius")
    assert f["gain"] == r.g_plane  # the g the sentence's √d·|g| names
    assert f["eps"] == r.eps
    # Each norm's radius is named as pulled in or not: RMSNorm's by mean(x²), LayerNorm's by Var(x).
    rms_in = claim.key == "explorer.plane_eps_visible"
    layer_in = claim.key != "explorer.plane_eps_negligible"
    # Negligible: within 0.05 %, so that the factor the sentence quotes to 3 digits reads 100 %.
    _decided(rms_in, f_rms, 1 - 5e-4, "negligible against mean(x²)")
    _decided(layer_in, f_layer, 1 - 5e-4, "negligible against Var(x)")


def check_sphere(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert r.d == 3 and f["dtype"] == r.dtype
    _near(f["radius"], math.sqrt(3) * abs(r.g_plane), rtol=1e-12, what="radius")
    # "Here" is the outputs the page shows (its metrics), as the dtype computed them.
    v = view(state)
    shown = {"r_rms": v.y_rms, "r_layer": v.y_layer}
    mine = dict(zip(("r_rms", "r_layer"), _outputs_in_dtype(r, state), strict=True))
    for name in ("r_rms", "r_layer"):
        _near(f[name], _length(shown[name]), rtol=1e-12, what=name)
        # And those outputs are the dtype's computation, recomputed here in another order
        # where rounding does not dominate (LayerNorm of a nearly constant x is rounding).
        y = mine[name]
        conditioned = name == "r_rms" or (
            r.std > 0 and torch.finfo(r.kind).eps * (r.top + abs(r.mean)) < 1e-3 * r.std
        )
        if conditioned and np.all(np.isfinite(y)):
            ulps = 4 * torch.finfo(r.kind).eps * (float(np.max(np.abs(y))) + abs(r.g_plane))
            atol = math.sqrt(3) * ulps
            _near(f[name], _length(y), rtol=DTYPE_RTOL[r.dtype], atol=atol, what=name)


def _length(y: np.ndarray) -> float:
    """|y| in units of its largest entry (inf and nan pass through)."""
    top = float(np.max(np.abs(y)))
    if not math.isfinite(top) or top == 0:
        return top
    return top * math.sqrt(math.fsum(((y / top) ** 2).tolist()))


# --- pRMSNorm, precision and rounding noise --------------------------------------------------


def check_partial(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert state["partial"] < 1 and f["k"] == r.k and f["d"] == r.d
    _near(f["p_pct"], state["partial"], rtol=1e-12)
    # RMS(x) and the RMS of the first k: no eps in either.
    _near(f["rms_k"], r.rms_k, rtol=1e-12, what="rms_k")
    _near(f["rms"], r.rms, rtol=1e-12, what="rms")
    _near(f["ratio_pct"], r.rms_k / r.rms if r.rms > 0 else 1.0, rtol=1e-12, what="ratio")
    # The denominators carry eps.
    assert f["eps"] == r.eps
    _near(f["den_k"], r.den_k, rtol=1e-12, what="den_k")
    _near(f["den"], r.den, rtol=1e-12, what="den")
    # x / den_k - x / den = x (1/den_k - 1/den): largest at max|x| (0 / 0 = 0).
    if r.top == 0:
        assert f["diff"] == 0
    elif r.den_k == 0:
        assert math.isinf(f["diff"]) or math.isnan(f["diff"])
    elif r.den > 0:
        diff = abs(r.top / r.den_k - r.top / r.den)
        if _zero_shown(claim, "diff"):
            _rounding_only(claim, "diff", diff, r.top / min(r.den_k, r.den))
        else:
            _near(f["diff"], diff, rtol=1e-6, atol=claim.noise_of("diff"), what="diff")
            _near(f["diff_pct"], abs(r.den / r.den_k - 1), rtol=1e-6, atol=1e-12, what="pct")
    close = abs(r.rms_k - r.rms) <= 0.05 * r.rms
    if abs(abs(r.rms_k - r.rms) - 0.05 * r.rms) > BAND * r.rms:
        assert close == claim.key.endswith("close"), (r.rms_k, r.rms)


def check_precision(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert r.backend == "torch"
    g = torch.tensor(r.g, dtype=r.kind)
    if "_rms_" in claim.key:
        assert r.k == r.d  # torch's rms_norm has no partial RMS
        ref_y = F.rms_norm(r.xt, (r.d,), g, r.eps)
        if state["rms_bias"]:
            ref_y = ref_y + torch.full((r.d,), state["rms_bias"], dtype=r.kind)
        shown = view(state).y_rms
    else:
        beta = torch.full((r.d,), state["bias"], dtype=r.kind)
        ref_y = F.layer_norm(r.xt, (r.d,), g, beta, r.eps)
        shown = view(state).y_layer
    expected = ref_y.double().numpy()
    same = (shown == expected) | (np.isnan(shown) & np.isnan(expected))
    assert f["count"] == int((~same).sum()) and f["d"] == r.d
    assert (f["count"] == 0) == claim.key.endswith("same")
    if f["count"]:
        gap = np.abs(shown - expected)[~same]
        if np.all(np.isfinite(gap)):
            _near(f["diff"], float(np.max(gap)), rtol=1e-12)
        else:
            assert f["diff"] == math.inf


def check_noise(state: dict, claim) -> None:
    r, f = ref(state), claim.fields
    assert r.flat() is not False and np.any(r.x)
    with torch.no_grad():
        c = r.xt - r.xt.mean()
        var = (c * c).mean().double().item()
    # Both are rounding residue, summed in different orders: equal to their own size.
    ulps = (64 * torch.finfo(r.kind).eps * r.rms) ** 2
    _near(f["var"], var, rtol=DTYPE_RTOL[r.dtype], atol=ulps, what="var")
    assert f["var"] > 0, "the variance the dtype computed is rounding, not 0"
    y = view(state).y_layer
    beta = torch.tensor(state["bias"], dtype=r.kind).double().item()
    _near(f["out"], float(np.max(np.abs(y - beta))), rtol=1e-12, what="out")
    assert f["out"] > 0 and f["dtype"] == r.dtype and f["eps"] == r.eps


# --- the charts' words ----------------------------------------------------------------------


def check_coords_words(state: dict, claim) -> None:
    """The coordinates chart's summary, from the outputs the page computed and draws."""
    v = view(state)
    check_pair_words(claim, list(range(v.x.shape[-1])), v.y_rms, v.y_layer)


def check_plane_words(state: dict, claim) -> None:
    p = view(state).plane
    (xa, xb) = p.point
    check_point_words(claim, p.rms, p.layer, xa=xa, xb=xb, radius=p.radius)


def check_sphere_words(state: dict, claim) -> None:
    s = view(state).sphere
    x = {f"x_{i}": float(value) for i, value in enumerate(s.point)}
    check_point_words(claim, s.rms, s.layer, **x)


CHECKS = {
    "explorer.coords_words": check_coords_words,
    "explorer.coords_words_equal": check_coords_words,
    "charts.not_finite": check_coords_words,
    "charts.no_finite": check_coords_words,
    "explorer.plane_words": check_plane_words,
    "explorer.plane_words_not_finite": check_plane_words,
    "explorer.sphere_words": check_sphere_words,
    "explorer.sphere_words_not_finite": check_sphere_words,
    "explorer.coords_caption": check_coords,
    "explorer.first_move_means": check_coords,
    "explorer.coords_divisors": check_divisors,
    "explorer.coords_envelope": check_envelope,
    "explorer.coords_envelope_label": check_envelope,
    **{f"explorer.why_scale_{k}": check_why_scale for k in ("same", "opposite", "turned", "zero",
                                                            "infinite")},
    **{f"explorer.why_layer_{k}": check_why_layer for k in ("kept", "turned", "flat")},
    **{f"explorer.why_offset_{k}": check_why_offset for k in ("kept", "none", "flat", "zero")},
    "explorer.why_moment": check_why_moment,
    "explorer.why_moment_share": check_why_moment_share,
    "explorer.centring_identity": check_centring,
    "explorer.centring_identity_off": check_centring,
    "explorer.centring_same": check_centring_mean,
    "explorer.centring_differs": check_centring_mean,
    "explorer.plane_position": check_plane_position,
    "explorer.plane_position_zero": check_zero_vector,
    "explorer.why_moment_share_zero": check_zero_vector,
    **{f"explorer.plane_{k}": check_plane_rms for k in ("same", "opposite", "origin",
                                                        "rms_infinite", "same_dtype",
                                                        "opposite_dtype")},
    **{f"explorer.plane_{k}": check_plane_layer for k in ("layer", "layer_flat", "layer_dtype",
                                                          "layer_flat_dtype")},
    "explorer.plane_eps_negligible": check_plane_eps,
    "explorer.plane_eps_visible": check_plane_eps,
    "explorer.plane_eps_visible_layer": check_plane_eps,
    "explorer.sphere_caption": check_sphere,
    "explorer.partial_close": check_partial,
    "explorer.partial_far": check_partial,
    **{f"explorer.precision_{n}_{k}": check_precision for n in ("rms", "layer")
       for k in ("same", "differs")},
    "explorer.noise_caption": check_noise,
}  # fmt: skip
