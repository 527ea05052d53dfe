"""labs.precision.model, labs.precision.reduced and labs.contracts.model: eps sweeps,
low-precision reductions, preset comparisons."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.inputs import make_input
from core.presets import get_preset
from labs.contracts.model import Side, compare_sides, contracts_view, effective_gain, stored_weight
from labs.precision.model import _matched_claim, eps_knee, output_norm_vs_scale, precision_view
from labs.precision.reduced import (
    FLOAT16_MAX,
    float16_overflow_scales,
    reduction_error,
    round_bfloat16,
    running_sum_of_squares,
)
from tests.hypothesis_util import examples

torch = pytest.importorskip("torch")

SCALES = np.logspace(-8, 4, 25)


@pytest.mark.parametrize("placement", ["inside", "outside"])
def test_output_norm_matches_closed_form(placement: str) -> None:
    d, eps_list = 32, [1e-8, 1e-5, 1e-3]
    norms = output_norm_vs_scale(d, SCALES, eps_list, placement=placement, seed=3)
    r = np.sqrt(np.mean(make_input(d, seed=3) ** 2)) * SCALES
    for row, eps in zip(norms, eps_list, strict=True):
        denom = np.sqrt(r**2 + eps) if placement == "inside" else r + eps
        np.testing.assert_allclose(row, math.sqrt(d) * r / denom, rtol=1e-12)


@given(st.floats(1e-12, 1e-1), st.sampled_from(["inside", "outside"]), st.integers(0, 50))
@settings(max_examples=examples(50), deadline=None)
def test_knee_halves_as_the_formula_says(eps: float, placement: str, seed: int) -> None:
    d = 16
    rms = float(np.sqrt(np.mean(make_input(d, seed=seed) ** 2)))
    knee = eps_knee(eps, placement=placement, rms=rms)
    norm = output_norm_vs_scale(d, [knee], [eps], placement=placement, seed=seed)[0, 0]
    expected = math.sqrt(d / 2) if placement == "inside" else math.sqrt(d) / 2
    np.testing.assert_allclose(norm, expected, rtol=1e-9)


def test_knee_rejects_clamp() -> None:
    with pytest.raises(ValueError, match="placement"):
        eps_knee(1e-5, placement="clamp")


# float64 carries 53 significant bits: one unit in the last place at 1.
F64_ULP = 2.0**-52


@pytest.mark.parametrize(
    ("d", "off_ulps", "key"),
    [
        # At d = 2 rounding moves the norm a few ulps; 450 ulps off is a curve that is not sqrt(d).
        (2, 450, "precision.matched_zero_unsettled"),
        # A sum of 16384 squares may round by thousands of ulps and still be sqrt(d).
        (16384, 9000, "precision.matched_zero"),
    ],
)
def test_matched_zero_tolerance_is_the_rounding_of_the_width(d: int, off_ulps: int, key: str):
    """With eps = 0 the curves are sqrt(d) "up to rounding", and how much rounding a float64 norm
    of d coordinates carries grows with d: a fixed floor (1e-12, about 4500 ulps) calls a curve
    450 ulps off at d = 2 exact, and one 9000 ulps off at d = 16384 unsettled."""
    view = precision_view(2, 0, "inside", 1.0, 0.0, ("float64", "float32"))
    sqrt_d = math.sqrt(d)
    curves = {
        "inside": np.full(5, sqrt_d * (1 + off_ulps * F64_ULP)),
        "outside": np.full(5, sqrt_d),
    }
    claim = _matched_claim(dataclasses.replace(view, d=d, matched=curves))
    assert claim.key == key
    np.testing.assert_allclose(claim.fields["gap_pct"], off_ulps * F64_ULP, rtol=0.01)


@pytest.mark.parametrize("d", [2, 64, 4096])
@pytest.mark.parametrize("scale", [1e-8, 1e4])
def test_eps_zero_curves_are_sqrt_d_at_every_width(d: int, scale: float) -> None:
    """The page's own eps = 0 curves stay within that rounding at the widths it allows."""
    view = precision_view(d, 3, "both", scale, 0.0, ("float64", "float32"))
    assert view.claims["matched"].key == "precision.matched_zero"


def test_reduction_error_against_float64() -> None:
    z = make_input(64, seed=0)
    x = SCALES[:, None] * z
    res = reduction_error(x, ["float64", "float32", "float16", "bfloat16"], eps=1e-6)
    np.testing.assert_array_equal(res["float64"].output_error, 0.0)
    assert np.all(res["float32"].output_error < 1e-6)
    # bfloat16 keeps 8 significant bits: about 2^-9 relative per rounding, never overflows.
    assert np.all(res["bfloat16"].output_error < 2e-2)
    assert np.all(res["bfloat16"].output_error > 1e-4)
    assert not res["bfloat16"].overflow.any()
    limits = float16_overflow_scales(z)
    # torch accumulates the float16 mean in float32: it overflows exactly when a square does.
    np.testing.assert_array_equal(res["float16"].overflow, SCALES * np.abs(z).max() > 256)
    assert limits.sum < limits.square
    np.testing.assert_allclose(res["float16"].output_error[res["float16"].overflow], 1.0)


def test_float16_limits_match_float16_arithmetic() -> None:
    z = make_input(128, seed=1)
    limits = float16_overflow_scales(z)
    for factor, finite in ((0.999, True), (1.001, False)):
        x16 = torch.tensor(z * limits.sum * factor, dtype=torch.float16)
        assert bool(torch.isfinite(x16.pow(2).sum())) is finite
        x16 = torch.tensor(z * limits.square * factor, dtype=torch.float16)
        assert bool(torch.isfinite(x16.pow(2).mean())) is finite
    assert float16_overflow_scales(np.zeros(4)).square == math.inf


def test_round_bfloat16_matches_torch() -> None:
    rng = np.random.default_rng(7)
    a = np.concatenate(
        [rng.standard_normal(2000) * 10.0 ** rng.integers(-30, 30, 2000), [0.0, 3.4e38, -1.0]]
    ).astype(np.float32)
    expected = torch.from_numpy(a).bfloat16().float().numpy()
    np.testing.assert_array_equal(round_bfloat16(a), expected)


def test_running_sum_matches_a_torch_loop() -> None:
    x = make_input(300, seed=4, scale=3.0)
    for dtype in ("float16", "bfloat16", "float32"):
        kind = getattr(torch, dtype)
        total = torch.zeros((), dtype=kind)
        expected = []
        for v in torch.tensor(x, dtype=kind):
            total = total + v * v
            expected.append(float(total))
        np.testing.assert_array_equal(running_sum_of_squares(x, dtype), expected)
    np.testing.assert_allclose(running_sum_of_squares(x, "float64"), np.cumsum(x**2), rtol=1e-12)


def test_running_sum_drifts_and_overflows() -> None:
    x = np.ones(4096)
    # bfloat16 keeps 8 bits: once the total reaches 256, adding 1 is below half an ulp.
    assert running_sum_of_squares(x, "bfloat16")[-1] == 256.0
    big = np.full(10, 100.0)  # squares 1e4: the seventh partial sum passes 65504
    sums = running_sum_of_squares(big, "float16")
    assert np.isfinite(sums[5]) and sums[5] <= FLOAT16_MAX
    assert np.isinf(sums[6])


def test_contracts_right_pairing_agrees_wrong_one_does_not() -> None:
    d = 64
    x = make_input(d, seed=5)
    g = effective_gain(d, seed=5)
    w_gemma = stored_weight(g, get_preset("gemma").gain_mode)
    right = compare_sides(x, w_gemma, Side("gemma"), Side("gemma"), dtype="float64")
    assert right.max_abs == 0.0
    wrong = compare_sides(x, w_gemma, Side("gemma"), Side("llama"), dtype="float64")
    # llama reads w = g - 1 as the gain: y_B - y_A = (w - g) xhat = -xhat (float32 reduction).
    xhat = x / np.sqrt(np.mean(x**2) + 1e-6)
    np.testing.assert_allclose(wrong.delta, -xhat, rtol=1e-6)
    np.testing.assert_allclose(
        wrong.relative, np.linalg.norm(xhat) / np.linalg.norm(g * xhat), rtol=1e-6
    )


def test_contracts_eps_and_reduction_mistakes() -> None:
    d = 256
    x = make_input(d, seed=6, scale=0.01)
    w = stored_weight(effective_gain(d, seed=6), "direct")
    eps = compare_sides(x, w, Side("llama", eps=1e-5), Side("llama", eps=1e-6), dtype="float64")
    ms = np.mean(x**2)
    # The llama contract reduces in float32 even for float64 input: float32 tolerance.
    np.testing.assert_allclose(eps.relative, np.sqrt((ms + 1e-5) / (ms + 1e-6)) - 1, rtol=1e-5)
    red = compare_sides(
        x, w, Side("llama"), Side("llama", reduction_dtype="bfloat16"), dtype="bfloat16"
    )
    assert red.settings_b["reduction_dtype"] == "bfloat16"
    assert red.settings_a["reduction_dtype"] == "float32"
    assert 0 < red.relative < 5e-2
    with pytest.raises(ValueError, match="dtype"):
        compare_sides(x, w, Side("llama"), Side("llama"), dtype="int8")


@pytest.mark.parametrize("seed", [8375, 129])
def test_contracts_bit_for_bit_verdict_is_the_implementations_own(seed: int) -> None:
    """Whether A and B agree bit for bit is a fact about LlamaRMSNorm's torch arithmetic. At scale
    100 (mean square about 1e4) eps = 1e-3 is about half a float32 ulp of the mean square, so
    whether adding it changes anything depends on the mean's last bit: numpy's float32 mean
    (another summation order) once rounded the two sides together for seed 8375, where
    LlamaRMSNorm's outputs differ, and apart for seed 129, where they agree."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    d, scale = 4096, 100.0
    state = {"a": "llama", "b": "llama", "eps_a": "preset", "eps_b": "1e-3"}
    state |= {"red_a": "preset", "red_b": "preset", "checkpoint": "a", "dtype": "float64"}
    state |= {"d": d, "seed": seed, "scale": scale}
    x = torch.from_numpy(make_input(d, seed=seed, scale=scale))
    outputs = []
    for eps in (1e-6, 1e-3):  # LlamaRMSNorm's default, then the page's override
        norm = LlamaRMSNorm(d, eps=eps).double()
        norm.weight.data = torch.from_numpy(effective_gain(d, seed=seed))
        with torch.no_grad():
            outputs.append(norm(x))
    claims = contracts_view(state).claims
    assert ("agreement" in claims) == torch.equal(*outputs)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_every_preset_pair_shows_only_true_claims(dtype: str) -> None:
    """Every pair of presets, in every dtype, at both ends of the scale ladder: each sentence
    the contracts page would show passes its independent check (tests/claims/contracts.py)."""
    from labs.contracts.model import contracts_view
    from tests.claims import contracts as claims

    names = claims.PRESETS
    for a in names:
        for b in names:
            for scale in (1e-4, 1.0, 100.0):
                state = {
                    **claims.MISTAKES[0],
                    "a": a,
                    "b": b,
                    "checkpoint": "b",
                    "dtype": dtype,
                    "d": 64,
                    "seed": 3,
                    "scale": scale,
                }
                for claim in contracts_view(state).claims.values():
                    claims.CHECKS[claim.key](state, claim)
