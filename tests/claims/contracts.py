"""The contracts page's sentences, checked against each implementation's own forward pass.

Every RMSNorm the page offers is written out below from its upstream source, in torch, in the
dtype the model is held in (transformers' ``LlamaRMSNorm``, ``GemmaRMSNorm``, ``T5LayerNorm``,
``Olmo2RMSNorm``; Transformer Engine's zero-centred RMSNorm; ``rmsnorm_torch.py`` of the paper's
repository; x-transformers' ``F.normalize`` RMSNorm; ``torch.nn.RMSNorm``, which is
``F.rms_norm``). The page's two overrides replace the eps and the dtype the upstream code
reduces in. The five settings that make a contract (eps, where it sits, the reduction dtype, the
weight convention, where the cast to the input dtype falls) are a table written here from the
same sources, not read from ``core.presets``.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from core.defaults import DTYPES, MIN_WIDTH
from labs.contracts.model import EPS_CHOICES, MAX_CONTRACT_WIDTH, SCALE_LADDER, contracts_view
from tests.claims.oracle import SIGNIFICAND, check_pair_words, round_to, ulps

HALF = ("float16", "bfloat16")
# Each implementation's contract, from its upstream source:
#   eps: its default (None: torch.finfo of the dtype it reduces in, torch.nn.RMSNorm's rule);
#   placement: eps inside the root of the mean square, outside it (added to the RMS), or a
#     floor on the 2-norm (F.normalize's clamp_min);
#   reduction: "float32" (the code casts x to float32), "opmath" (float32 for a half x, else
#     x's dtype: torch's own kernels), "input" (x's own dtype);
#   gain: "direct" (y = w * xhat) or "offset" (y = (1 + w) * xhat, a zero-centred weight);
#   cast: where the result goes back to x's dtype: "after" the weight multiply, the weight cast
#     to the reduction dtype; "before" it; "promote": after a multiply that type promotion types
#     (OLMo 2); "t5": cast to the weight's dtype only when that is half (T5).
CONTRACTS = {
    "torch": (None, "inside", "opmath", "direct", "after"),
    "llama": (1e-6, "inside", "float32", "direct", "before"),
    "gemma": (1e-6, "inside", "float32", "offset", "after"),
    "t5": (1e-6, "inside", "float32", "direct", "t5"),
    "olmo2": (1e-6, "inside", "float32", "direct", "promote"),
    "qwen3": (1e-6, "inside", "float32", "direct", "before"),
    "qwen3-next": (1e-6, "inside", "float32", "offset", "after"),
    "deepseek-v3": (1e-6, "inside", "float32", "direct", "before"),
    "gpt-oss": (1e-6, "inside", "float32", "direct", "promote"),
    "transformer-engine": (1e-5, "inside", "float32", "offset", "after"),
    "paper": (1e-8, "outside", "input", "direct", "before"),
    "x-transformers": (1e-12, "clamp", "input", "direct", "before"),
}
PRESETS = tuple(CONTRACTS)
KEYS = ("eps", "eps_placement", "reduction_dtype", "gain_mode", "cast")
SCALES = SCALE_LADDER
_PLAIN = {"eps_a": "preset", "eps_b": "preset", "red_a": "preset", "red_b": "preset"}
# The four checkpoint mistakes the page explains, as the settings that reproduce them.
MISTAKES = (
    {**_PLAIN, "a": "gemma", "b": "llama", "checkpoint": "a", "scale": 1.0},
    {**_PLAIN, "a": "llama", "b": "llama", "eps_a": "1e-5", "eps_b": "1e-6", "checkpoint": "a"}
    | {"scale": 0.01},
    {**_PLAIN, "a": "llama", "b": "llama", "red_b": "bfloat16", "dtype": "bfloat16"}
    | {"checkpoint": "a", "scale": 1.0},
    {**_PLAIN, "a": "olmo2", "b": "olmo2", "eps_a": "1e-6", "eps_b": "1e-5", "checkpoint": "a"}
    | {"scale": 0.01},
)
# What OLMo 2's and Llama 3's released config.json files set, against the default of
# transformers' config class (read from the installed transformers in check_default_eps).
CHECKPOINT_EPS = {"olmo2": ("Olmo2Config", 1e-6), "llama": ("LlamaConfig", 1e-5)}

_ANY = st.fixed_dictionaries(
    {
        "a": st.sampled_from(PRESETS),
        "b": st.sampled_from(PRESETS),
        "eps_a": st.sampled_from(EPS_CHOICES),
        "eps_b": st.sampled_from(EPS_CHOICES),
        "red_a": st.sampled_from(("preset", *DTYPES)),
        "red_b": st.sampled_from(("preset", *DTYPES)),
        "checkpoint": st.sampled_from(("a", "b")),
        "dtype": st.sampled_from(DTYPES),
        "d": st.one_of(
            st.sampled_from([MIN_WIDTH, MAX_CONTRACT_WIDTH]), st.integers(2, MAX_CONTRACT_WIDTH)
        ),
        "seed": st.one_of(st.just(0), st.integers(0, 2**31 - 1)),
        "scale": st.sampled_from(SCALES),
    }
)
# Presets only (every pair, no overrides), where "agree" and "differ" both occur.
_PAIRS = _ANY.map(lambda s: {**s, **_PLAIN})
_MISTAKES = st.tuples(_ANY, st.sampled_from(MISTAKES)).map(lambda t: {**t[0], **t[1]})
# The corners: the narrowest and widest vector at the smallest and largest scale, with the
# preset's eps or the largest override, in every dtype.
_EXTREMES = st.fixed_dictionaries(
    {
        "d": st.sampled_from((MIN_WIDTH, MAX_CONTRACT_WIDTH)),
        "scale": st.sampled_from((SCALES[0], SCALES[-1])),
        "eps_a": st.sampled_from(("preset", EPS_CHOICES[-1])),
        "eps_b": st.sampled_from(("preset", EPS_CHOICES[-1])),
        "dtype": st.sampled_from(DTYPES),
    }
)
_CORNERS = st.tuples(_ANY, _EXTREMES).map(lambda t: {**t[0], **t[1]})
STATES = st.one_of(_ANY, _PAIRS, _MISTAKES, _CORNERS)


def view(state: dict):
    return contracts_view(state)


# --- each side's contract and output ------------------------------------------------------------


def resolved(state: dict, side: str) -> dict:
    """The contract a side computes by: its implementation's, with the page's overrides."""
    eps, placement, reduction, gain, cast = CONTRACTS[state[side]]
    dtype, red = state["dtype"], state[f"red_{side}"]
    if red == "preset":
        red = {"float32": "float32", "input": dtype}.get(reduction)
        red = red or ("float32" if dtype in HALF else dtype)  # opmath
    if state[f"eps_{side}"] != "preset":
        eps = float(state[f"eps_{side}"])
    elif eps is None:
        eps = float(torch.finfo(getattr(torch, red)).eps)
    return dict(zip(KEYS, (eps, placement, red, gain, cast), strict=True))


def _mean_square(xr: torch.Tensor) -> torch.Tensor:
    return xr.pow(2).mean(-1, keepdim=True)  # (d,) -> (1,)


def torch_rmsnorm(x, w, eps, red):
    """torch.nn.RMSNorm: F.rms_norm, which computes in its opmath type and casts once."""
    opmath = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    if red == opmath:
        return F.rms_norm(x, (x.shape[-1],), w, eps)
    xr = x.to(red)
    return (xr * torch.rsqrt(_mean_square(xr) + eps) * w.to(red)).to(x.dtype)


def llama(x, w, eps, red):
    """LlamaRMSNorm.forward: normalise a float32 copy, cast back, then the weight."""
    h = x.to(red)
    h = h * torch.rsqrt(_mean_square(h) + eps)
    return w * h.to(x.dtype)


def gemma(x, w, eps, red):
    """GemmaRMSNorm.forward (and Transformer Engine's zero-centred gamma): all in float32,
    gain 1 + w, one cast at the end."""
    h = x.to(red)
    h = h * torch.rsqrt(_mean_square(h) + eps)
    return (h * (1.0 + w.to(red))).type_as(x)


def t5(x, w, eps, red):
    """T5LayerNorm.forward: the variance in float32, x times its rsqrt by type promotion, cast
    to a half weight's dtype only."""
    variance = _mean_square(x.to(red))
    h = x * torch.rsqrt(variance + eps)
    if w.dtype in (torch.float16, torch.bfloat16):
        h = h.to(w.dtype)
    return w * h


def olmo2(x, w, eps, red):
    """Olmo2RMSNorm.forward: the weight multiplies the float32 result, then one cast."""
    h = x.to(red)
    h = h * torch.rsqrt(_mean_square(h) + eps)
    return (w * h).to(x.dtype)


def paper(x, w, eps, red):
    """rmsnorm_torch.py: x / (||x|| d^(-1/2) + eps), then the scale."""
    h = x.to(red)
    rms = h.norm(2, dim=-1, keepdim=True) * h.shape[-1] ** (-1.0 / 2)
    return (h / (rms + eps)).to(x.dtype) * w


def x_transformers(x, w, eps, red):
    """x-transformers' RMSNorm: F.normalize(x, dim=-1) * sqrt(d) * g."""
    h = F.normalize(x.to(red), dim=-1, eps=eps) * x.shape[-1] ** 0.5
    return h.to(x.dtype) * w


FORWARD = {
    "torch": torch_rmsnorm,
    "llama": llama,
    "gemma": gemma,
    "t5": t5,
    "olmo2": olmo2,
    "qwen3": llama,  # Qwen3RMSNorm.forward is LlamaRMSNorm's, line for line
    "qwen3-next": gemma,  # Qwen3NextRMSNorm.forward: float32, (1 + w), type_as(x)
    "deepseek-v3": llama,  # DeepseekV3RMSNorm.forward: LlamaRMSNorm's
    "gpt-oss": olmo2,  # GptOssRMSNorm.forward: (self.weight * hidden_states).to(input_dtype)
    "transformer-engine": gemma,
    "paper": paper,
    "x-transformers": x_transformers,
}


@cache
def _gain(d: int, seed: int) -> np.ndarray:
    return 1.0 + 0.1 * np.random.default_rng([seed, 2]).standard_normal(d)


def stored(state: dict) -> np.ndarray:
    """The checkpoint's weight: the gain, or the gain minus 1 for a zero-centred writer."""
    g = _gain(state["d"], state["seed"])
    return g - 1.0 if CONTRACTS[state[state["checkpoint"]]][3] == "offset" else g


def x_at(state: dict, scale: float) -> np.ndarray:
    return scale * np.random.default_rng(state["seed"]).standard_normal(state["d"])


def held(a: np.ndarray, dtype: str) -> torch.Tensor:
    """``a`` as a model loaded in ``dtype`` holds it (one rounding from float64)."""
    return torch.from_numpy(np.asarray(a, dtype=np.float64)).to(getattr(torch, dtype))


def side_output(state: dict, side: str, scale: float) -> np.ndarray:
    """One side's output for the input at ``scale``, as float64."""
    c, dtype = resolved(state, side), state["dtype"]
    x, w = held(x_at(state, scale), dtype), held(stored(state), dtype)
    red = getattr(torch, c["reduction_dtype"])
    y = FORWARD[state[side]](x, w, c["eps"], red).double()
    # The page defines 0/0 as 0 and says so (upstream code gives NaN): a coordinate that is 0
    # where x reduces, over a denominator of 0.
    h = x.to(red)
    norm = h.double().pow(2).sum(-1, keepdim=True)
    zero = (h == 0) & (norm == 0) & (c["eps"] == 0)
    if c["eps_placement"] == "inside":  # the mean square in the reduction dtype may underflow
        zero = (h == 0) & (_mean_square(h) + c["eps"] == 0)
    return torch.where(zero, 0.0, y).numpy()


@cache
def _pair(items: tuple, scale: float) -> tuple[np.ndarray, np.ndarray]:
    state = dict(items)
    return side_output(state, "a", scale), side_output(state, "b", scale)


def pair(state: dict, scale: float) -> tuple[np.ndarray, np.ndarray]:
    return _pair(tuple(sorted(state.items())), scale)


def relative(y_a: np.ndarray, y_b: np.ndarray) -> float:
    return float(np.linalg.norm(y_b - y_a) / np.linalg.norm(y_a))


def coarsest(state: dict) -> str:
    """The narrowest dtype either side computes in: the model's or a reduction dtype."""
    used = (state["dtype"], *(resolved(state, side)["reduction_dtype"] for side in "ab"))
    return min(used, key=SIGNIFICAND.get)


def close_relative(shown: float, y_a: np.ndarray, y_b: np.ndarray, state: dict) -> None:
    """A shown |y_B - y_A| / |y_A| against the one computed here: each output is a rounding of
    its exact value in the dtypes it was computed in (another order of summation may round
    differently), so the two may part by a few ulps of the narrowest (relative to y)."""
    value = relative(y_a, y_b)
    tol = 1e-6 * value + ulps(4, 1.0, coarsest(state))
    assert abs(shown - value) <= tol, (shown, value)


def identical(state: dict, scale: float) -> bool:
    y_a, y_b = pair(state, scale)
    return bool(np.all(np.isfinite(y_a)) and np.array_equal(y_a, y_b))


def differing(state: dict) -> int:
    a, b = resolved(state, "a"), resolved(state, "b")
    return sum(a[k] != b[k] for k in KEYS)


# --- the checks ---------------------------------------------------------------------------------


def check_identical(state: dict, claim) -> None:
    assert identical(state, state["scale"])
    assert claim.fields["dtype"] == state["dtype"]


def check_contract(state: dict, claim) -> None:
    count, key = differing(state), claim.key
    here = identical(state, state["scale"])
    if key in ("contracts.contract_same", "contracts.contract_same_settings"):
        assert count == 0
        # Same settings, same stored weight: the same output at every scale (NaN where both
        # meet the same overflow).
        if key == "contracts.contract_same":
            assert all(np.array_equal(*pair(state, s), equal_nan=True) for s in SCALES)
        return
    assert claim.fields["count"] == count > 0
    if key == "contracts.contract_differs":
        assert not here
    elif key == "contracts.contract_differs_nowhere":
        finite = [s for s in SCALES if all(np.isfinite(y).all() for y in pair(state, s))]
        assert here and all(identical(state, s) for s in finite)
    else:
        assert here
        y_a, y_b = pair(state, claim.fields["scale"])
        assert np.isfinite(y_a).all() and np.isfinite(y_b).all()
        assert not np.array_equal(y_a, y_b)
        close_relative(claim.fields["relative"], y_a, y_b, state)


def _held64(state: dict, scale: float) -> np.ndarray:
    return held(x_at(state, scale), state["dtype"]).double().numpy()


def _mean_of_squares(x: np.ndarray) -> float:
    return math.fsum(v * v for v in x.tolist()) / x.size


def check_gemma(state: dict, claim) -> None:
    f, w = claim.fields, stored(state)
    d = w.size
    np.testing.assert_allclose(f["w_mean"], math.fsum(w) / d, rtol=1e-12)
    np.testing.assert_allclose(f["w_rms"], np.linalg.norm(w) / math.sqrt(d), rtol=1e-12)
    np.testing.assert_allclose(f["g_rms"], np.linalg.norm(w + 1) / math.sqrt(d), rtol=1e-12)
    y_a, y_b = pair(state, state["scale"])
    close_relative(f["relative"], y_a, y_b, state)
    max_abs = np.max(np.abs(y_b - y_a))
    assert abs(f["max_abs"] - max_abs) <= ulps(4, np.max(np.abs(y_a)), coarsest(state))


def check_eps(state: dict, claim) -> None:
    f = claim.fields
    eps_a, eps_b = resolved(state, "a")["eps"], resolved(state, "b")["eps"]
    assert (f["eps_a"], f["eps_b"], f["scale"]) == (eps_a, eps_b, state["scale"])
    ms = _mean_of_squares(_held64(state, state["scale"]))
    np.testing.assert_allclose(f["mean_square"], ms, rtol=1e-12)
    np.testing.assert_allclose(f["estimate"], abs(eps_a - eps_b) / (2 * ms), rtol=1e-12)
    np.testing.assert_allclose(f["mean_square_1"], _mean_of_squares(_held64(state, 1.0)), 1e-12)
    close_relative(f["relative"], *pair(state, state["scale"]), state)
    if claim.key == "contracts.explain_eps_same_at_1":
        assert identical(state, 1.0)
        return
    y_a, y_b = pair(state, 1.0)
    assert not np.array_equal(y_a, y_b)
    close_relative(f["relative_1"], y_a, y_b, state)
    # At scale 1 the first-order change eps makes, against one rounding of the dtype (torch's
    # finfo eps is 2^(1-p), the unit roundoff half of it): far below it (a sixteenth) the sentence
    # says rounding, nearer it ε and rounding together, above it a ratio.
    estimate_1 = abs(eps_a - eps_b) / (2 * _mean_of_squares(_held64(state, 1.0)))
    unit = torch.finfo(getattr(torch, state["dtype"])).eps / 2
    near = {"contracts.explain_eps_rounding_at_1": (0, unit / 16)}
    near["contracts.explain_eps_near_rounding_at_1"] = (unit / 16, unit)
    lo, hi = near.get(claim.key, (unit, math.inf))
    assert lo <= estimate_1 < hi, (claim.key, estimate_1, unit)
    if claim.key in near:
        np.testing.assert_allclose((f["estimate_1"], f["unit"]), (estimate_1, unit), rtol=1e-12)
        return
    np.testing.assert_allclose(f["ratio"], f["relative"] / f["relative_1"], rtol=1e-12)


def check_default_eps(state: dict, claim) -> None:
    import transformers

    f = claim.fields
    assert state["a"] == state["b"] == "olmo2" and (state["eps_a"], state["eps_b"]) == (
        "1e-6",
        "1e-5",
    )
    for family, (config, checkpoint_eps) in CHECKPOINT_EPS.items():
        default = getattr(transformers, config)().rms_norm_eps
        assert (f[f"config_{family}"], f[f"default_{family}"]) == (config, default)
        assert f[f"checkpoint_{family}"] == checkpoint_eps != default
    assert float(state["eps_b"]) == f["default_olmo2"] and float(state["eps_a"]) == 1e-6


def check_bf16(state: dict, claim) -> None:
    f = claim.fields
    x = _held64(state, state["scale"])
    ms = _mean_of_squares(x)
    assert f["red_b"] == resolved(state, "b")["reduction_dtype"] == "bfloat16"
    # torch's bfloat16 mean: float32 accumulation, one rounding to bfloat16.
    mean_b = float(held(x, "bfloat16").pow(2).mean())
    err = abs(mean_b - ms) / ms
    assert abs(f["ms_err_pct"] - err) <= 1e-9 * err + ulps(4, 1.0), (f["ms_err_pct"], err)
    total = 0.0
    for v in x.tolist():
        total = round_to(total + round_to(v * v, "bfloat16"), "bfloat16")
    # A correctly rounded loop and the page's may part by a rounding now and then.
    loop_err = abs(round_to(total / x.size, "bfloat16") - ms) / ms  # its mean rounded, as B's
    assert abs(f["loop_err_pct"] - loop_err) <= ulps(2, 1.0, "bfloat16"), f["loop_err_pct"]
    # "Only" praises B's mean where it is the closer of the two on this input: so the numbers
    # shown, and this loop's where the two loops cannot part the order.
    only = claim.key == "contracts.explain_bf16"
    assert only == (f["ms_err_pct"] < f["loop_err_pct"])
    if abs(err - loop_err) > ulps(2, 1.0, "bfloat16"):
        assert only == (err < loop_err), (err, loop_err)
    close_relative(f["relative"], *pair(state, state["scale"]), state)


def check_figure_words(state: dict, claim) -> None:
    """The chart's summary, from the outputs it draws (A's in the first slot, B's in the
    second); the outputs drawn are each side's as this module computes it, up to a few ulps of
    the narrowest dtype either side computes in (another order of summation)."""
    c, d = view(state).comparison, state["d"]
    if claim.key.startswith("charts."):  # counted over the three traces drawn: A, B and B - A
        a, b = (np.asarray(v, dtype=np.float64) for v in (c.y_a, c.y_b))
        with np.errstate(invalid="ignore"):
            traces = (a, b, b - a)
        bad = sum(int(np.sum(~np.isfinite(t))) for t in traces)
        assert claim.fields["total"] == 3 * d
        assert claim.key == "charts.no_finite" or claim.fields["count"] == bad > 0
    else:
        check_pair_words(claim, list(range(d)), c.y_a, c.y_b)
    for drawn, mine in zip((c.y_a, c.y_b), pair(state, state["scale"]), strict=True):
        finite = np.isfinite(mine)
        assert np.array_equal(np.isfinite(drawn), finite)
        top = float(np.max(np.abs(mine[finite]), initial=0.0))
        tol = ulps(4, top, coarsest(state))
        np.testing.assert_allclose(drawn[finite], mine[finite], rtol=0, atol=tol)


CHECKS = {
    "contracts.figure_words": check_figure_words,
    "contracts.figure_words_equal": check_figure_words,
    "charts.not_finite": check_figure_words,
    "charts.no_finite": check_figure_words,
    "contracts.identical": check_identical,
    "contracts.contract_same": check_contract,
    "contracts.contract_same_settings": check_contract,
    "contracts.contract_differs": check_contract,
    "contracts.contract_differs_elsewhere": check_contract,
    "contracts.contract_differs_nowhere": check_contract,
    "contracts.explain_gemma_gain": check_gemma,
    "contracts.explain_eps": check_eps,
    "contracts.explain_eps_same_at_1": check_eps,
    "contracts.explain_eps_rounding_at_1": check_eps,
    "contracts.explain_eps_near_rounding_at_1": check_eps,
    "contracts.why_default_eps": check_default_eps,
    "contracts.explain_bf16": check_bf16,
    "contracts.explain_bf16_loop": check_bf16,
}
