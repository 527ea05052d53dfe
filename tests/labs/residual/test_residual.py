"""Tests for labs.residual.model and labs.residual.trained: the pre-norm residual stream with
a drifting common offset, and the same readings on the shipped models."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.residual.model import (
    MAX_LAYERS,
    NORMS,
    QUANTITIES,
    STREAM_MAX_WIDTH,
    block_weight,
    initial_stream,
    residual_view,
    simulate_residual,
)
from labs.residual.trained import (
    TRAINED_NORMS,
    TRAINED_QUANTITIES,
    _offset_claims,
    _outlier_claims,
    _share_claims,
    _shift_claim,
    trained_view,
)
from labs.training.activations import TEXTS, read_shipped
from tests.hypothesis_util import examples

# float64 rounding over a dozen blocks stays near 1e-13; a real difference is far above this.
ROUNDING = 1e-10


def reference_streams(*, layers: int, d: int, drift: float, seed: int, eps: float, n: int):
    """The same recursion written with torch.nn.functional, the trusted reference."""
    h0 = torch.tensor(initial_stream(n=n, d=d, seed=seed), dtype=torch.float64)
    out = {}
    for name in NORMS:
        h, hs = h0, [h0]
        for layer in range(layers):
            w = torch.tensor(block_weight(layer, d=d, seed=seed), dtype=torch.float64)
            if name == "layer":
                z = F.layer_norm(h, (d,), eps=eps)
            else:
                z = F.rms_norm(h, (d,), eps=eps)
            h = h + drift + F.linear(z, w)
            hs.append(h)
        out[name] = torch.stack(hs).numpy()
    return out


def test_streams_match_torch_reference():
    kwargs = dict(layers=6, d=24, drift=0.7, seed=3, eps=1e-5, n=5)
    trace = simulate_residual(**kwargs)
    ref = reference_streams(**kwargs)
    for name in NORMS:
        assert trace.streams[name].shape == (7, 5, 24)
        np.testing.assert_allclose(trace.streams[name], ref[name], rtol=0, atol=ROUNDING)


def test_readings_have_one_value_per_layer_and_match_their_definitions():
    trace = simulate_residual(layers=5, d=32, drift=1.0, seed=1, eps=0.0, n=4)
    np.testing.assert_array_equal(trace.layers, np.arange(6))
    for name in NORMS:
        assert set(trace.readings[name]) == {*QUANTITIES, "input_cos_ones_worst"}
        for values in trace.readings[name].values():
            assert values.shape == (6,) and np.all(np.isfinite(values))
    # Check the layer-3 readings of RMSNorm from the streams and the weights directly.
    h = trace.streams["rms"][3]
    z = h / np.sqrt(np.mean(h**2, axis=-1, keepdims=True))  # (n, d) -> (n, 1)
    w = block_weight(3, d=32, seed=1)
    p = z @ w.T
    w1 = w @ np.ones(32)
    cos_p = (p @ w1) / (np.linalg.norm(p, axis=-1) * np.linalg.norm(w1))
    r = {q: v[3] for q, v in trace.readings["rms"].items()}
    np.testing.assert_allclose(r["stream_mean"], np.mean(h), rtol=1e-12)
    np.testing.assert_allclose(r["input_norm"], math.sqrt(32), rtol=1e-12)
    np.testing.assert_allclose(r["output_norm"], np.mean(np.linalg.norm(p, axis=-1)), rtol=1e-12)
    np.testing.assert_allclose(r["output_cos_offset"], np.mean(cos_p), rtol=1e-12)
    np.testing.assert_allclose(r["output_share_offset"], np.mean(cos_p**2), rtol=1e-12)
    unit = p / np.linalg.norm(p, axis=-1, keepdims=True)
    gram = unit @ unit.T
    np.testing.assert_allclose(r["token_cosine"], (gram.sum() - 4) / 12, rtol=1e-12)
    cos_z = z.sum(-1) / (np.linalg.norm(z, axis=-1) * math.sqrt(32))  # each token's cos(z, 1)
    np.testing.assert_allclose(r["input_cos_ones_worst"], np.max(np.abs(cos_z)), rtol=1e-12)


def test_layer_norm_hands_no_offset_on_and_rms_norm_passes_it():
    trace = simulate_residual(layers=24, d=128, drift=0.5, seed=0, eps=0.0)
    lay, rms = trace.readings["layer"], trace.readings["rms"]
    # Both streams accumulate about L * c = 12 of offset: the drift is added whatever the norm.
    for r in (lay, rms):
        assert 9.0 < r["stream_mean"][-1] < 15.0
    # LayerNorm's output has no component along 1, at every layer.
    np.testing.assert_allclose(lay["input_cos_ones"], 0.0, atol=ROUNDING)
    np.testing.assert_allclose(lay["input_share_ones"], 0.0, atol=ROUNDING)
    # RMSNorm's output points where the stream points: dividing by a scalar keeps the angle.
    np.testing.assert_allclose(rms["input_cos_ones"], rms["stream_cos_ones"], rtol=1e-12)
    h = trace.streams["rms"]  # (L + 1, n, d)
    cos_h = np.mean(h, axis=-1) / np.sqrt(np.mean(h**2, axis=-1))  # (L + 1, n, d) -> (L + 1, n)
    np.testing.assert_allclose(rms["input_share_ones"], np.mean(cos_h**2, axis=-1), rtol=1e-10)
    assert rms["input_share_ones"][-1] > 0.7
    # Through the projection: RMSNorm's outputs line up with W 1 and with each other; a random
    # direction holds about 1/d of the energy, which LayerNorm's outputs stay near.
    assert rms["output_share_offset"][-1] > 0.6 and rms["token_cosine"][-1] > 0.6
    assert np.max(lay["output_share_offset"]) < 10 / 128
    assert np.max(np.abs(lay["token_cosine"])) < 0.3


def test_without_drift_both_norms_see_almost_no_offset():
    trace = simulate_residual(layers=12, d=256, drift=0.0, seed=2, eps=1e-5)
    for name in NORMS:
        # h_0 and the features are random, so their mean shrinks like 1/sqrt(d n).
        assert np.max(np.abs(trace.readings[name]["input_cos_ones"])) < 0.2
        assert np.max(trace.readings[name]["output_share_offset"]) < 0.05


@settings(max_examples=examples(40), deadline=None)
@given(
    layers=st.integers(1, 6),
    d=st.integers(2, 40),
    drift=st.floats(-3.0, 3.0, allow_nan=False),
    seed=st.integers(0, 2**31 - 1),
)
def test_norm_sizes_hold_for_any_setting(layers, d, drift, seed):
    trace = simulate_residual(layers=layers, d=d, drift=drift, seed=seed, eps=0.0, n=3)
    # With eps = 0 both outputs have length sqrt(d) (LayerNorm: unless a row is constant).
    np.testing.assert_allclose(trace.readings["rms"]["input_norm"], math.sqrt(d), rtol=1e-9)
    np.testing.assert_allclose(trace.readings["layer"]["input_norm"], math.sqrt(d), rtol=1e-9)
    np.testing.assert_allclose(trace.readings["layer"]["input_cos_ones"], 0.0, atol=1e-9)
    for name in NORMS:
        for q in ("input_share_ones", "output_share_offset"):
            assert np.all((trace.readings[name][q] >= 0) & (trace.readings[name][q] <= 1 + 1e-12))


def test_prefix_is_stable_when_layers_grow():
    short = simulate_residual(layers=3, d=16, drift=0.3, seed=5)
    long = simulate_residual(layers=8, d=16, drift=0.3, seed=5)
    for name in NORMS:
        np.testing.assert_array_equal(long.streams[name][:4], short.streams[name])


def test_seed_changes_the_draws():
    a = simulate_residual(layers=2, d=8, seed=0).streams["rms"]
    b = simulate_residual(layers=2, d=8, seed=1).streams["rms"]
    assert not np.allclose(a, b)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(layers=0), "layers"),
        (dict(layers=MAX_LAYERS + 1), "layers"),
        (dict(d=1), "d"),
        (dict(d=STREAM_MAX_WIDTH + 1), "d"),
        (dict(drift=float("nan")), "drift"),
        (dict(eps=-1.0), "eps"),
        (dict(seed=-1), "seed"),
        (dict(n=1), "n"),
        (dict(layers=True), "layers"),
    ],
)
def test_bad_arguments_are_named(kwargs, word):
    with pytest.raises(ValueError, match=rf"^{word} "):
        simulate_residual(**kwargs)


def test_view_reads_the_last_projection_of_the_same_trace():
    kwargs = dict(layers=9, d=48, drift=0.6, seed=4, eps=1e-5)
    trace = simulate_residual(**kwargs)
    v = residual_view(**kwargs)
    for name in NORMS:
        for q in QUANTITIES:
            assert v.last[name][q] == trace.readings[name][q][-1]
    h_rms, h_layer = trace.streams["rms"][-1], trace.streams["layer"][-1]
    expected = np.linalg.norm(h_rms - h_layer) / np.linalg.norm(h_layer)
    np.testing.assert_allclose(v.stream_gap, expected, rtol=1e-12)


def test_streams_differ_although_their_offsets_agree():
    # The audit's finding: at the page's defaults the final streams differ by tens of percent;
    # only the mean offsets are close.
    v = residual_view(layers=24, d=256, drift=0.5, seed=0, eps=1e-5)
    assert 0.3 < v.stream_gap < 0.6
    assert v.offset_gap < 0.1
    assert v.claims["swap"].key == "residual.explain_swap"


def test_eps_shortens_the_norms_output_and_the_claim_says_so():
    v = residual_view(layers=2, d=16, drift=0.0, seed=1, eps=1.0)
    assert v.claims["length"].key == "residual.length_below"
    assert v.last["rms"]["input_norm"] < math.sqrt(16) * 0.99
    v = residual_view(layers=2, d=16, drift=0.0, seed=1, eps=0.0)
    assert v.claims["length"].key == "residual.length_sqrt_d"


# --- Trained mode -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(seed=3, text="docs"), "seed"),
        (dict(seed=True, text="docs"), "seed"),
        (dict(seed=0, text="anything you like"), "text"),
    ],
)
def test_trained_view_refuses_what_no_link_can_reach(kwargs, word):
    with pytest.raises(ValueError, match=rf"^{word} "):
        trained_view(**kwargs)


def test_trained_view_reads_the_shipped_models_of_one_seed():
    v = trained_view(seed=1, text="docs_id")
    runs = {(r.norm, r.seed): r for r in read_shipped(TEXTS["docs_id"])}
    assert v.prompt == TEXTS["docs_id"] and v.seed == 1 and v.d == 48 and v.block_size == 64
    assert v.tokens == len(TEXTS["docs_id"].encode("utf-8"))
    assert v.layers.tolist() == [0, 1, 2, 3]
    for norm in TRAINED_NORMS:
        run = runs[norm, 1]
        assert set(v.readings[norm]) == set(TRAINED_QUANTITIES)
        np.testing.assert_array_equal(v.readings[norm]["stream_mean"], run.readings.mean)
        np.testing.assert_array_equal(
            v.readings[norm]["stream_share_ones"], run.readings.mean_share
        )
        np.testing.assert_array_equal(
            v.readings[norm]["shift_loss"], run.shift.shifted_loss - run.shift.loss
        )
        for q in TRAINED_QUANTITIES:
            assert v.last[norm][q] == v.readings[norm][q][-1]
        # Each layer's coordinates over their median: the median coordinate reads 1.
        np.testing.assert_allclose(np.median(v.relative_magnitude[norm], axis=1), 1.0)
        np.testing.assert_allclose(
            v.relative_magnitude[norm].max(axis=1), v.readings[norm]["outlier_ratio"], rtol=1e-12
        )
        assert v.outlier_dims[norm].shape == (4, 4)
        assert v.loss[norm] == run.shift.loss
        assert v.val_loss[norm] == run.config["training"]["final_val_loss"]
    slots = {"model", "text", "small", "offset", "share", "chance", "shift", "outliers", "dims"}
    # Besides them, the charts' summaries (``*_words``).
    assert {k for k in v.claims if not k.endswith("_words")} == slots | {"table"}
    assert {"trained_figure_words", "coordinates_words"} <= set(v.claims)


def readings_of(**series) -> dict:
    """Readings for the three models from per-quantity arrays of shape (3, L + 1)."""
    return {
        norm: {q: np.asarray(values[i], dtype=float) for q, values in series.items()}
        for i, norm in enumerate(TRAINED_NORMS)
    }


def test_trained_claims_choose_the_other_sentence_where_the_numbers_turn():
    """Branches the shipped models never reach, on made-up readings."""
    share = [[0.01, 0.2], [0.03, 0.01], [0.0, 0.0]]
    cos = [[0.1, 0.4], [0.1, 0.1], [0.0, 0.0]]
    mean = [[0.1, 0.1], [0.2, 0.3], [0.0, 0.0]]
    r = readings_of(stream_share_ones=share, stream_cos_ones=cos, stream_mean=mean)
    fake = type("Run", (), {"readings": type("R", (), {"mean": np.array([0.0, 0.05])})})
    shipped = {(n, s): fake for n in TRAINED_NORMS for s in (0, 1)}
    claims = _offset_claims(shipped, r)
    assert claims["small"].key == "residual.trained_offset_large"
    assert claims["offset"].key == "residual.trained_offset_rms_not_larger"
    assert claims["offset"].fields["layers_rms"] == 0
    claims = _share_claims(r, d=48)
    assert claims["share"].key == "residual.trained_share_rms_some"
    assert claims["share"].fields["layers_rms"] == 1
    assert claims["chance"].key == "residual.trained_layer_not_below_chance"  # 0.03 > 1/48
    r = readings_of(shift_loss=[[0.5, 0.2], [1e-3, 0.0], [0.3, 0.1]])
    assert _shift_claim(r).key == "residual.trained_shift_numbers"
    r = readings_of(outlier_ratio=[[2.0, 30.0], [2.0, 2.0], [2.0, 2.0]])
    dims = {n: np.array([[0, 1], [2, 3]]) for n in TRAINED_NORMS}
    claims = _outlier_claims(r, dims)
    assert claims["outliers"].key == "residual.trained_outliers_dominant"
    assert claims["dims"].fields == {"shared_layer": 2, "shared_none": 2, "k": 2}
