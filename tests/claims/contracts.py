"""The contracts page's sentences, checked against a transcription of each preset's contract.

``side_output`` writes one RMSNorm out from the preset's published settings (eps and where it
sits, the reduction dtype, the weight convention, the cast), in torch when a half dtype is
involved and in numpy otherwise, as a model loaded in that dtype holds its tensors. The settings
each side resolves to are derived here from the presets and the overrides, not read back from
the page.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import torch
from hypothesis import strategies as st

from core.contracts import contracts_view
from core.presets import get_preset, preset_names
from tests.claims.precision import round_to

PRESETS = tuple(preset_names("rms"))
DTYPES = ("float64", "float32", "float16", "bfloat16")
HALF = ("float16", "bfloat16")
EPS_CHOICES = ("preset", "0", "1e-12", "1e-8", "1e-6", "1e-5", "1e-4", "1e-3")
SCALES = (1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
KEYS = ("eps", "eps_placement", "reduction_dtype", "gain_mode", "cast")
_PLAIN = {"eps_a": "preset", "eps_b": "preset", "red_a": "preset", "red_b": "preset"}
MISTAKES = (
    {**_PLAIN, "a": "gemma", "b": "llama", "checkpoint": "a", "scale": 1.0},
    {**_PLAIN, "a": "llama", "b": "llama", "eps_a": "1e-5", "eps_b": "1e-6", "checkpoint": "a"}
    | {"scale": 0.01},
    {**_PLAIN, "a": "llama", "b": "llama", "red_b": "bfloat16", "dtype": "bfloat16"}
    | {"checkpoint": "a", "scale": 1.0},
)

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
        "d": st.one_of(st.sampled_from([2, 4096]), st.integers(2, 4096)),
        "seed": st.one_of(st.just(0), st.integers(0, 2**31 - 1)),
        "scale": st.sampled_from(SCALES),
    }
)
# Presets only (every pair, no overrides), where "agree" and "differ" both occur.
_PAIRS = _ANY.map(lambda s: {**s, **_PLAIN})
_MISTAKES = st.tuples(_ANY, st.sampled_from(MISTAKES)).map(lambda t: {**t[0], **t[1]})
STATES = st.one_of(_ANY, _PAIRS, _MISTAKES)


def view(state: dict):
    return contracts_view(state)


def resolved(state: dict, side: str) -> dict:
    """The contract a side computes by: its preset's settings with the page's overrides."""
    p, dtype = get_preset(state[side], "rms"), state["dtype"]
    red_choice = state[f"red_{side}"]
    if red_choice != "preset":
        red = red_choice
    elif p.reduction_dtype is None:
        red = dtype
    elif p.reduction_dtype == "opmath":
        red = "float32" if dtype in HALF else dtype
    else:
        red = p.reduction_dtype
    eps_choice = state[f"eps_{side}"]
    if eps_choice != "preset":
        eps = float(eps_choice)
    elif p.eps is not None:
        eps = p.eps
    else:
        eps = float(torch.finfo(getattr(torch, red)).eps)
    return {
        "eps": eps,
        "eps_placement": p.eps_placement,
        "reduction_dtype": red,
        "gain_mode": p.gain_mode,
        "cast": p.cast,
    }


@cache
def _gain(d: int, seed: int) -> np.ndarray:
    return 1.0 + 0.1 * np.random.default_rng([seed, 2]).standard_normal(d)


def stored(state: dict) -> np.ndarray:
    writer = get_preset(state[state["checkpoint"]], "rms")
    g = _gain(state["d"], state["seed"])
    return g - 1.0 if writer.gain_mode == "offset" else g


def x_at(state: dict, scale: float) -> np.ndarray:
    return scale * np.random.default_rng(state["seed"]).standard_normal(state["d"])


def side_output(state: dict, side: str, scale: float) -> np.ndarray:
    """One side's output for the input at ``scale``, as float64: the preset's upstream steps.

    torch's own preset on half tensors is ``F.rms_norm`` itself; eps inside the root takes the
    mean square in the reduction dtype; outside the root (rmsnorm_torch.py) and as a floor
    (F.normalize) take the 2-norm, which torch accumulates in float32 for a half x."""
    c, dtype = resolved(state, side), state["dtype"]
    red = c["reduction_dtype"]
    use_torch = dtype in HALF or red in HALF
    x, w = x_at(state, scale), stored(state)
    if use_torch:
        x, w = (torch.tensor(a).to(getattr(torch, dtype)) for a in (x, w))
        if state[side] == "torch" and state[f"red_{side}"] == "preset":
            y = torch.nn.functional.rms_norm(x, (x.shape[-1],), w, c["eps"])
            if bool(torch.isfinite(y).all()):
                return y.double().numpy()
        xr = x.to(getattr(torch, red))
    else:
        x, w = x.astype(dtype), w.astype(dtype)
        xr = x.astype(red)
    xhat = _xhat(x, xr, c, use_torch)
    y = _gain_and_cast(xhat, w, x, c, use_torch)
    return y.double().numpy() if use_torch else np.asarray(y, dtype=np.float64)


def _xhat(x, xr, c: dict, use_torch: bool):
    d = x.shape[-1]
    if c["eps_placement"] == "inside":
        if use_torch:
            inv = torch.rsqrt(xr.pow(2).mean(-1, keepdim=True) + c["eps"])
        else:
            inv = 1.0 / np.sqrt(np.square(xr).mean(-1, keepdims=True) + c["eps"])
        if c["cast"] != "t5":
            return xr * inv
        if use_torch:
            wide = torch.promote_types(x.dtype, xr.dtype)
            return x.to(wide) * inv.to(wide)
        wide = np.promote_types(x.dtype, xr.dtype)
        return x.astype(wide) * inv.astype(wide)
    norm = (
        xr.norm(2, dim=-1, keepdim=True)
        if use_torch
        else np.linalg.norm(xr, axis=-1, keepdims=True)
    )
    if c["eps_placement"] == "outside":
        return xr / (norm * d ** (-1.0 / 2) + c["eps"])  # rmsnorm_torch.py: x / (rms + eps)
    floor = (
        norm.clamp_min(c["eps"]) if use_torch else np.maximum(norm, np.asarray(c["eps"], xr.dtype))
    )
    return xr / floor * d**0.5  # F.normalize(x) * sqrt(d)


def _gain_and_cast(xhat, w, x, c: dict, use_torch: bool):
    def cast(a, like):
        return a.to(like.dtype) if use_torch else a.astype(like.dtype)

    def gain(g):
        return 1.0 + g if c["gain_mode"] == "offset" else g

    if c["cast"] == "after":
        return cast(xhat * gain(cast(w, xhat)), x)
    if c["cast"] == "promote":
        return cast(xhat * gain(w), x)
    if c["cast"] == "before":
        return cast(xhat, x) * gain(w)
    half_w = str(w.dtype).removeprefix("torch.") in HALF
    return (cast(xhat, w) if half_w else xhat) * gain(w)


@cache
def _pair(items: tuple, scale: float) -> tuple[np.ndarray, np.ndarray]:
    state = dict(items)
    return side_output(state, "a", scale), side_output(state, "b", scale)


def pair(state: dict, scale: float) -> tuple[np.ndarray, np.ndarray]:
    return _pair(tuple(sorted(state.items())), scale)


def relative(y_a: np.ndarray, y_b: np.ndarray) -> float:
    return float(np.linalg.norm(y_b - y_a) / np.linalg.norm(y_a))


def identical(state: dict, scale: float) -> bool:
    y_a, y_b = pair(state, scale)
    return bool(np.all(np.isfinite(y_a)) and np.array_equal(y_a, y_b))


def differing(state: dict) -> int:
    a, b = resolved(state, "a"), resolved(state, "b")
    return sum(a[k] != b[k] for k in KEYS)


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
        np.testing.assert_allclose(claim.fields["relative"], relative(y_a, y_b), rtol=1e-6)


def _held(state: dict, scale: float) -> np.ndarray:
    x = torch.tensor(x_at(state, scale)).to(getattr(torch, state["dtype"]))
    return x.double().numpy()


def check_gemma(state: dict, claim) -> None:
    f, w = claim.fields, stored(state)
    np.testing.assert_allclose(f["w_mean"], w.mean(), rtol=1e-12)
    np.testing.assert_allclose(f["w_rms"], np.sqrt(np.mean(w**2)), rtol=1e-12)
    np.testing.assert_allclose(f["g_rms"], np.sqrt(np.mean((w + 1) ** 2)), rtol=1e-12)
    y_a, y_b = pair(state, state["scale"])
    np.testing.assert_allclose(f["relative"], relative(y_a, y_b), rtol=1e-6)
    np.testing.assert_allclose(f["max_abs"], np.max(np.abs(y_b - y_a)), rtol=1e-6)


def check_eps(state: dict, claim) -> None:
    f = claim.fields
    eps_a, eps_b = resolved(state, "a")["eps"], resolved(state, "b")["eps"]
    assert (f["eps_a"], f["eps_b"], f["scale"]) == (eps_a, eps_b, state["scale"])
    ms = float(np.mean(_held(state, state["scale"]) ** 2))
    np.testing.assert_allclose(f["mean_square"], ms, rtol=1e-12)
    np.testing.assert_allclose(f["estimate"], abs(eps_a - eps_b) / (2 * ms), rtol=1e-12)
    np.testing.assert_allclose(f["mean_square_1"], np.mean(_held(state, 1.0) ** 2), rtol=1e-12)
    y_a, y_b = pair(state, state["scale"])
    np.testing.assert_allclose(f["relative"], relative(y_a, y_b), rtol=1e-6)
    if claim.key == "contracts.explain_eps_same_at_1":
        assert identical(state, 1.0)
        return
    rel_1 = relative(*pair(state, 1.0))
    np.testing.assert_allclose(f["relative_1"], rel_1, rtol=1e-6)
    np.testing.assert_allclose(f["ratio"], f["relative"] / rel_1, rtol=1e-6)


def check_bf16(state: dict, claim) -> None:
    f = claim.fields
    x = _held(state, state["scale"])
    ms = math.fsum(v * v for v in x.tolist()) / x.size
    assert f["red_b"] == resolved(state, "b")["reduction_dtype"] == "bfloat16"
    mean_b = float(torch.tensor(x).bfloat16().pow(2).mean())
    np.testing.assert_allclose(f["ms_err_pct"], abs(mean_b - ms) / ms, rtol=1e-9, atol=1e-15)
    total = 0.0
    for v in x.tolist():
        total = round_to(total + round_to(v * v, "bfloat16"), "bfloat16")
    # A correctly rounded loop and the page's may part by a rounding now and then.
    np.testing.assert_allclose(f["loop_err_pct"], abs(total / x.size - ms) / ms, atol=2.0**-6)
    y_a, y_b = pair(state, state["scale"])
    np.testing.assert_allclose(f["relative"], relative(y_a, y_b), rtol=1e-6)


CHECKS = {
    "contracts.identical": check_identical,
    "contracts.contract_same": check_contract,
    "contracts.contract_same_settings": check_contract,
    "contracts.contract_differs": check_contract,
    "contracts.contract_differs_elsewhere": check_contract,
    "contracts.contract_differs_nowhere": check_contract,
    "contracts.explain_gemma_gain": check_gemma,
    "contracts.explain_eps": check_eps,
    "contracts.explain_eps_same_at_1": check_eps,
    "contracts.explain_bf16": check_bf16,
}
