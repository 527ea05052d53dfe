"""The explorer's sentences, recomputed from the link state in plain float64 numpy and torch.

Nothing here calls ``core.explorer`` or ``core.norms`` to get the numbers it checks: the input
and gain vectors come from ``core.inputs`` (the link's seeded generators, not under test), the
rest is written out below. Outputs in a reduced dtype are checked against torch computing in
that dtype.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812
from hypothesis import strategies as st

from core.defaults import DTYPES, EPS_LADDER, SCALE_LADDER
from core.explorer import CHART_BUCKETS, PARTIAL_LADDER, explore
from core.inputs import DISTRIBUTIONS, GAIN_PATTERNS, gain_vector, make_input

U64 = float(np.finfo(np.float64).eps)
# Relative tolerance of a statistic computed in each dtype against torch recomputing it there.
DTYPE_RTOL = {"float64": 1e-12, "float32": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}

_typed = st.one_of(
    st.lists(st.floats(-1e3, 1e3, allow_nan=False, allow_subnormal=False), min_size=2, max_size=9),
    st.builds(
        lambda v, n: [v] * n, st.sampled_from([0.1, 1.1, 3.3, -7.0, 0.0]), st.integers(2, 40)
    ),
)
_number = lambda lo, hi, edges: st.one_of(st.sampled_from(edges), st.floats(lo, hi))  # noqa: E731

STATES = st.fixed_dictionaries(
    {
        "typed": st.one_of(st.none(), st.none(), _typed),
        "d": st.one_of(st.sampled_from([2, 3, 8, 8192]), st.integers(2, 300)),
        "dist": st.sampled_from(DISTRIBUTIONS),
        "seed": st.integers(0, 2**31 - 1),
        "offset": _number(-20.0, 20.0, [-20.0, 0.0, 20.0, 0.1]),
        "scale": st.sampled_from(SCALE_LADDER),
        "eps": st.sampled_from(EPS_LADDER),
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


def view(state: dict):
    backend, dtype = _backend(state)
    return explore(
        _x(state), eps=state["eps"], gain=state["gain"], gain_pattern=state["gain_pattern"],
        seed=state["seed"], bias=state["bias"], rms_bias=state["rms_bias"],
        partial=state["partial"], backend=backend, device="cpu", dtype=dtype,
    )  # fmt: skip


class Ref:
    """The state's numbers, recomputed in float64 from the x the norms saw."""

    def __init__(self, state: dict) -> None:
        self.state = state
        self.backend, self.dtype = _backend(state)
        raw = _x(state)
        if np.max(np.abs(raw)) > torch.finfo(getattr(torch, self.dtype)).max:
            self.dtype = "float64"  # x does not fit: the page computes in float64 and says so
        self.d = d = raw.shape[-1]
        self.xt = torch.tensor(raw, dtype=getattr(torch, self.dtype))
        self.x = x = self.xt.double().numpy()
        self.g = gain_vector(
            d, pattern=state["gain_pattern"], value=state["gain"], seed=state["seed"]
        )
        self.eps = eps = state["eps"]
        # pRMSNorm keeps ceil(p d) coordinates; p d is rounded first so 0.07 * 100 keeps 7.
        self.k = k = min(d, max(1, math.ceil(round(state["partial"] * d, 9))))
        # In units of max|x|, so that squares of a tiny or huge x neither underflow nor overflow;
        # eps is scaled to match (it may overflow to inf: then the unit vectors are 0).
        top = float(np.max(np.abs(x)))
        s = top if top > 0 else 1.0
        xs = x / s
        with np.errstate(over="ignore", divide="ignore"):
            eps_s = float(np.float64(eps) / np.float64(s) / np.float64(s))
        mean_s = float(xs.sum() / d)
        var_s = float(((xs - mean_s) ** 2).sum() / d)
        ms_s, ms_k_s = float((xs * xs).sum() / d), float((xs[:k] ** 2).sum() / k)
        self.mean, self.var, self.ms = s * mean_s, s * s * var_s, s * s * ms_s
        self.ms_k = s * s * ms_k_s
        self.rms_p, self.rms_full = math.sqrt(self.ms_k + eps), math.sqrt(self.ms + eps)
        self.std = math.sqrt(self.var + eps)
        self.flat = var_s <= (4 * U64) ** 2 * ms_s
        self.u_rms = _div(xs, math.sqrt(ms_k_s + eps_s))
        self.u_full = _div(xs, math.sqrt(ms_s + eps_s))
        self.u_layer = _div(xs - mean_s, math.sqrt(var_s + eps_s))
        self.g_plane = state["gain"] if state["gain_pattern"] == "constant" else 1.0


def _div(num: np.ndarray, den: float) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num == 0, 0.0, num / den) if den == 0 else num / den


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    a, b = (v / np.max(np.abs(v)) if np.any(v) else v for v in (a, b))
    na, nb = np.sqrt((a * a).sum()), np.sqrt((b * b).sum())
    return 0.0 if na == 0 or nb == 0 else float(np.clip((a * b).sum() / (na * nb), -1, 1))


def _near(shown: float, expected: float, *, rtol: float = 1e-9, atol: float = 0.0) -> None:
    if math.isnan(expected):
        assert math.isnan(shown), (shown, expected)
        return
    if math.isinf(expected):
        assert shown == expected, (shown, expected)
        return
    assert abs(shown - expected) <= atol + rtol * abs(expected), (shown, expected)


# --- the coordinates ------------------------------------------------------------------------


def check_coords(state: dict, claim) -> None:
    v, f = view(state), claim.fields
    assert f["d"] == v.d == _x(state).shape[-1]
    with np.errstate(invalid="ignore"):
        _near(f["m_rms"], float(np.mean(v.y_rms)), rtol=1e-9, atol=claim.noise)
        _near(f["m_layer"], float(np.mean(v.y_layer)), rtol=1e-9, atol=claim.noise)


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
    r, f = Ref(state), claim.fields
    xt = r.xt
    with torch.no_grad():
        rms = torch.sqrt((xt[: r.k] * xt[: r.k]).mean() + r.eps).double().item()
        c = xt - xt.mean()
        std = torch.sqrt((c * c).mean() + r.eps).double().item()
    rtol = DTYPE_RTOL[r.dtype]
    _near(f["rms"], rms, rtol=rtol)
    # A (near-)constant x leaves only rounding in x - mu: allow a few ulps of x's size there.
    ulps = 64 * torch.finfo(xt.dtype).eps * math.sqrt(r.ms)
    _near(f["std"], std, rtol=rtol, atol=ulps)
    _near(f["mean"], r.mean, rtol=1e-12, atol=claim.noise)


# --- what this shows ------------------------------------------------------------------------


def check_why_scale(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    _near(f["rms"], r.rms_p, rtol=1e-12)
    # The direction of g * x / RMS, whatever the size of g.
    v = (r.g / np.max(np.abs(r.g)) if np.any(r.g) else r.g) * r.u_rms
    key = claim.key.rsplit("_", 1)[-1]
    if key == "infinite":
        assert r.rms_p == 0 and np.any(r.x[np.isinf(r.u_rms)])
        return
    cos = _cos(v, r.x)
    _near(f["cos"], cos, atol=1e-12)
    if key == "zero":
        assert not np.any(v)
    elif key == "same":
        assert cos >= 1 - 1e-9
    elif key == "opposite":
        assert cos <= -1 + 1e-9
    else:
        assert abs(cos) < 1 - 1e-9 and np.ptp(r.g) > 0, "only a gain pattern turns RMSNorm"


def check_why_layer(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    if claim.key.endswith("flat"):
        assert r.flat
        return
    assert not r.flat
    cos = _cos(r.x - r.mean, r.x)
    # x - mu of a nearly constant x carries rounding of its own size: the claim's noise level.
    _near(f["cos"], cos, atol=max(claim.noise, 1e-12))
    _near(f["ratio"], r.mean / math.sqrt(r.ms), rtol=1e-9, atol=1e-15)
    assert (cos >= 1 - 1e-9) == claim.key.endswith("kept")


def check_why_offset(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    key = claim.key.rsplit("_", 1)[-1]
    if key == "zero":
        assert not np.any(r.x)
        return
    if key == "flat":
        assert r.flat and np.any(r.x)
        return
    m_layer = float(np.mean(r.u_layer))
    # LayerNorm removes the offset: its mean is at the rounding level the claim names.
    assert abs(m_layer) <= claim.noise + 1e-15 and claim.noise <= 1e-3
    _near(f["m_layer"], m_layer, atol=claim.noise)
    _near(f["cos_layer"], _cos(r.u_layer, np.ones(r.d)), atol=claim.noise)
    if np.all(np.isfinite(r.u_rms)):
        m_rms = float(np.mean(r.u_rms))
        _near(f["m_rms"], m_rms, rtol=1e-9, atol=1e-15)
        _near(f["cos_rms"], _cos(r.u_rms, np.ones(r.d)), atol=1e-12)
        assert (abs(m_rms) > claim.noise) == (key == "kept")
    else:
        assert key == "kept"


def check_why_moment(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    _near(f["rms2"], r.ms, rtol=1e-12)
    # Var(x) loses about |mu| * ulp per coordinate to the subtraction of the mean.
    _near(
        f["var"],
        r.var,
        rtol=1e-12,
        atol=256 * U64 * math.sqrt(r.ms * r.var) + (64 * U64) ** 2 * r.ms + 1e-300,
    )
    # mu^2 of a mean-zero x is rounding; below the claim's noise it reads "≈ 0".
    _near(f["mean2"], r.mean**2, rtol=1e-9, atol=claim.noise + 1e-300)
    _near(f["rms2"], f["var"] + f["mean2"], rtol=1e-9, atol=1e-300)
    share = r.mean**2 / r.ms if r.ms > 0 else 0.0
    _near(f["share_pct"], share, rtol=1e-9, atol=1e-15 + claim.noise / max(r.ms, 1e-300))


def check_centring(state: dict, claim) -> None:
    r = Ref(state)
    c = r.x - r.mean
    rms_of_centred = _div(c, math.sqrt(float((c * c).sum() / r.d) + r.eps))
    diff = float(np.max(np.abs(r.u_layer - rms_of_centred)))
    assert abs(claim.fields["diff"] - diff) <= max(claim.noise, 1e-15)
    assert (diff <= claim.noise) == claim.key.endswith("identity")


def check_centring_mean(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    diff = float(np.max(np.abs(r.u_layer - r.u_full)))
    _near(f["diff"], diff, rtol=1e-6, atol=claim.noise)
    _near(f["ratio"], r.mean / math.sqrt(r.ms) if r.ms > 0 else 0.0, rtol=1e-9, atol=1e-15)
    assert (diff <= claim.noise) == claim.key.endswith("same")
    # "the mean is all that separates them": with mu = 0 the two coincide exactly.


# --- the geometry ---------------------------------------------------------------------------


def check_plane_position(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    a = float(r.x.sum() / math.sqrt(r.d))
    b = float(np.sqrt(((r.x - r.mean) ** 2).sum()))
    # x - mean(x) of a near-constant x is rounding of a few ulps of |x| per coordinate.
    ulps = 64 * U64 * math.sqrt(r.d) * float(np.max(np.abs(r.x)))
    _near(f["a"], a, rtol=1e-9, atol=ulps)
    _near(f["b"], b, rtol=1e-6, atol=ulps)
    angle = math.degrees(math.acos(_cos(r.x, np.ones(r.d)))) if np.any(r.x) else 0.0
    _near(f["angle"], angle, rtol=1e-6, atol=1e-5)


def check_plane_rms(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    key = claim.key.rsplit("_", 1)[-1]
    if key == "origin":
        assert r.g_plane == 0 or not np.any(r.x)
        assert f["r_rms"] == 0
        return
    if key == "infinite":
        assert not np.all(np.isfinite(r.u_rms))
        return
    _near(
        f["r_rms"], abs(r.g_plane) * float(np.sqrt((r.u_rms**2).sum())), rtol=1e-9,
        atol=claim.noise,
    )  # fmt: skip
    assert (r.g_plane > 0) == (key == "same") and r.g_plane != 0
    _near(f["gain"], r.g_plane, rtol=0)


def check_plane_layer(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    if claim.key.endswith("flat"):
        # Only rounding is left to scale: any length up to the circle's is that noise.
        assert r.flat and 0 <= f["r_layer"] <= math.sqrt(r.d) * abs(r.g_plane) * (1 + 1e-9)
        return
    assert not r.flat
    r_layer = abs(r.g_plane) * float(np.sqrt((r.u_layer**2).sum()))
    _near(f["r_layer"], r_layer, rtol=1e-9, atol=claim.noise)
    la = abs(r.g_plane) * abs(float(r.u_layer.sum())) / math.sqrt(r.d)
    assert abs(f["la"]) <= claim.noise and la <= claim.noise


def _shrink(second: float, eps: float) -> float:
    return 1.0 if eps == 0 else math.sqrt(second / (second + eps))


def check_plane_eps(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    assert not r.flat
    f_rms, f_layer = _shrink(r.ms, r.eps), _shrink(r.var, r.eps)
    _near(f["f_rms_pct"], f_rms, rtol=1e-9)
    _near(f["f_layer_pct"], f_layer, rtol=1e-9)
    _near(f["radius"], math.sqrt(r.d) * abs(r.g_plane), rtol=1e-12)
    assert (min(f_rms, f_layer) >= 0.999) == claim.key.endswith("negligible")
    if claim.key.endswith("negligible"):
        # Both points within 0.1 % of the circle (RMSNorm's with the full RMS).
        radius = f["radius"]
        for u in (r.u_full, r.u_layer):
            _near(abs(r.g_plane) * float(np.sqrt((u**2).sum())), radius, rtol=1.01e-3)


def check_sphere(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    assert r.d == 3
    _near(f["radius"], math.sqrt(3) * abs(r.g_plane), rtol=1e-12)
    _near(f["r_rms"], abs(r.g_plane) * float(np.sqrt((r.u_rms**2).sum())), rtol=1e-9)
    if r.flat:  # rounding noise, normalised: at most the radius
        assert f["r_layer"] <= f["radius"] * (1 + 1e-9)
    else:
        _near(f["r_layer"], abs(r.g_plane) * float(np.sqrt((r.u_layer**2).sum())), rtol=1e-9)
    # The caveat in the sentence: with p = 1 the sphere is the most RMSNorm reaches (eps > 0
    # only pulls inside).
    if r.k == r.d:
        assert f["r_rms"] <= f["radius"] * (1 + 1e-12)


# --- pRMSNorm, precision and rounding noise --------------------------------------------------


def check_partial(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    assert state["partial"] < 1 and f["k"] == r.k and f["d"] == r.d
    _near(f["p_pct"], state["partial"], rtol=1e-12)
    _near(f["rms_p"], r.rms_p, rtol=1e-12)
    _near(f["rms_full"], r.rms_full, rtol=1e-12)
    with np.errstate(invalid="ignore"):
        diff = float(np.max(np.abs(r.g * (r.u_rms - r.u_full))))
    _near(f["diff"], diff, rtol=1e-6, atol=claim.noise)
    close = abs(r.rms_p - r.rms_full) <= 0.05 * r.rms_full
    assert close == claim.key.endswith("close")


def check_precision(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    assert r.backend == "torch"
    kind = getattr(torch, r.dtype)
    g = torch.tensor(r.g, dtype=kind)
    if "_rms_" in claim.key:
        ref = F.rms_norm(r.xt, (r.d,), g, r.eps)
        if state["rms_bias"]:
            ref = ref + torch.full((r.d,), state["rms_bias"], dtype=kind)
        shown = view(state).y_rms
    else:
        ref = F.layer_norm(r.xt, (r.d,), g, torch.full((r.d,), state["bias"], dtype=kind), r.eps)
        shown = view(state).y_layer
    ref = ref.double().numpy()
    same = (shown == ref) | (np.isnan(shown) & np.isnan(ref))
    assert f["count"] == int((~same).sum()) and f["d"] == r.d
    assert (f["count"] == 0) == claim.key.endswith("same")
    if f["count"]:
        both = np.isfinite(shown) & np.isfinite(ref) & ~same
        if np.all(both[~same]):
            _near(f["diff"], float(np.max(np.abs(shown - ref)[~same])), rtol=1e-12)
        else:
            assert f["diff"] == math.inf


def check_noise(state: dict, claim) -> None:
    r, f = Ref(state), claim.fields
    assert r.flat and np.any(r.x)
    c = r.xt - r.xt.mean()
    var = (c * c).mean().double().item()
    # Both are rounding residue, summed in different orders: equal to their own size.
    ulps = (64 * torch.finfo(r.xt.dtype).eps * math.sqrt(r.ms)) ** 2
    _near(f["var"], var, rtol=DTYPE_RTOL[r.dtype], atol=ulps)
    assert f["var"] > 0, "the variance the dtype computed is rounding, not 0"
    y = view(state).y_layer
    beta = torch.tensor(state["bias"], dtype=r.xt.dtype).double().item()
    _near(f["out"], float(np.max(np.abs(y - beta))), rtol=1e-12)
    assert f["out"] > 0 and f["dtype"] == r.dtype and f["eps"] == r.eps


CHECKS = {
    "explorer.coords_caption": check_coords,
    "explorer.coords_divisors": check_divisors,
    "explorer.coords_envelope": check_envelope,
    "explorer.coords_envelope_label": check_envelope,
    **{f"explorer.why_scale_{k}": check_why_scale for k in ("same", "opposite", "turned", "zero",
                                                            "infinite")},
    **{f"explorer.why_layer_{k}": check_why_layer for k in ("kept", "turned", "flat")},
    **{f"explorer.why_offset_{k}": check_why_offset for k in ("kept", "none", "flat", "zero")},
    "explorer.why_moment": check_why_moment,
    "explorer.centring_identity": check_centring,
    "explorer.centring_identity_off": check_centring,
    "explorer.centring_same": check_centring_mean,
    "explorer.centring_differs": check_centring_mean,
    "explorer.plane_position": check_plane_position,
    **{f"explorer.plane_{k}": check_plane_rms for k in ("same", "opposite", "origin",
                                                        "rms_infinite")},
    "explorer.plane_layer": check_plane_layer,
    "explorer.plane_layer_flat": check_plane_layer,
    "explorer.plane_eps_negligible": check_plane_eps,
    "explorer.plane_eps_visible": check_plane_eps,
    "explorer.sphere_caption": check_sphere,
    "explorer.partial_close": check_partial,
    "explorer.partial_far": check_partial,
    **{f"explorer.precision_{n}_{k}": check_precision for n in ("rms", "layer")
       for k in ("same", "differs")},
    "explorer.noise_caption": check_noise,
}  # fmt: skip
