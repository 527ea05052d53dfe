"""The S-curve's core (``labs.training.scurve``, ``labs.training.scurve_view``): the tanh fit
recovers a known curve from noisy points, says when it did not converge, reads the output before
the gain, and the view's words and snippet match its numbers."""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pytest
import torch

from core.norms import layer_norm_reference, rms_norm_reference
from labs.training.activations import DEFAULT_TEXT, shipped_path
from labs.training.scurve import (
    FLAT_REACH,
    LINEAR_REACH,
    SAMPLE,
    fit_tanh,
    layer_curves,
    normalised,
)
from labs.training.scurve_snippet import scurve_code
from labs.training.scurve_view import SCURVE_NORMS, scurve_view
from labs.training.store import load_checkpoint
from ui.i18n import is_claim


@pytest.fixture(scope="module")
def view():
    return scurve_view(seed=0)


def noisy_tanh(alpha: float, amplitude: float, noise: float, n: int = 20_000, seed: int = 1):
    rng = np.random.default_rng(seed)
    x = 2.0 * rng.standard_normal(n)
    clean = amplitude * np.tanh(alpha * x)
    return x, clean + noise * rng.standard_normal(n), clean


@pytest.mark.parametrize(("alpha", "amplitude"), [(0.7, 3.0), (2.5, 1.0), (0.3, 10.0), (1.0, -2.0)])
def test_the_fit_recovers_a_tanh_from_noisy_points(alpha: float, amplitude: float) -> None:
    noise = 0.05 * abs(amplitude)
    x, y, clean = noisy_tanh(alpha, amplitude, noise)
    fit = fit_tanh(x, y)
    assert fit.converged and fit.reason == "" and fit.points == x.size
    # A negative amplitude stays with A: α is quoted positive.
    assert fit.alpha > 0 and math.copysign(1.0, fit.amplitude) == math.copysign(1.0, amplitude)
    np.testing.assert_allclose(fit.alpha, alpha, rtol=0.02)
    np.testing.assert_allclose(fit.amplitude, amplitude, rtol=0.02)
    # R² is what noise of this size leaves: 1 - var(noise) / var(y).
    np.testing.assert_allclose(fit.r2, 1.0 - noise**2 / np.var(y), atol=2e-3)
    np.testing.assert_allclose(fit.reach, alpha * np.max(np.abs(x)), rtol=0.02)
    np.testing.assert_allclose(fit.flat_share, np.mean(alpha * np.abs(x) >= FLAT_REACH), atol=3e-3)
    k = float(x @ y / (x @ x))
    assert fit.slope == pytest.approx(k, rel=1e-12)
    assert fit.line_r2 == pytest.approx(1 - np.sum((y - k * x) ** 2) / np.sum((y - y.mean()) ** 2))


def test_shapes_follow_how_far_the_data_reach() -> None:
    x, y, _ = noisy_tanh(3.0, 1.0, 0.05)  # |α·x| up to about 24: an S
    saturated = fit_tanh(x, y)
    assert saturated.shape == "saturated" and saturated.reach >= FLAT_REACH
    assert saturated.r2 > saturated.line_r2 + 0.05
    x, y, _ = noisy_tanh(0.02, 50.0, 0.5)  # a line: tanh cannot be told from it
    linear = fit_tanh(x, y)
    assert linear.shape == "linear" and linear.reach <= LINEAR_REACH
    assert abs(linear.r2 - linear.line_r2) < 1e-3


@pytest.mark.parametrize("side", ["negative", "positive"])
def test_data_that_reach_the_flat_part_on_one_side_only_are_half_an_s(side: str) -> None:
    """The shipped seed 1 models: |α·x| reaches 2.1 to 4.8 below 0 but 1.0 to 1.8 above it in
    most later layers, and the view called that an S flattening toward ±A."""
    x, y, _ = noisy_tanh(1.0, 1.0, 0.02)
    keep = x <= 1.2 if side == "negative" else x >= -1.2
    fit = fit_tanh(x[keep], y[keep])
    far, near = (
        (fit.reach_negative, fit.reach_positive)
        if side == "negative"
        else (fit.reach_positive, fit.reach_negative)
    )
    assert fit.shape == "one_arm" and fit.flat_side == side
    assert far >= FLAT_REACH > near and fit.reach == far
    assert fit.flat_share == pytest.approx(np.mean(fit.alpha * np.abs(x[keep]) >= FLAT_REACH))
    both = fit_tanh(x, y)
    assert both.shape == "saturated" and both.flat_side == ""
    assert min(both.reach_negative, both.reach_positive) >= FLAT_REACH


def test_a_fit_that_does_not_converge_says_so() -> None:
    x, y, _ = noisy_tanh(0.7, 3.0, 0.1)
    stopped = fit_tanh(x, y, max_evaluations=2)
    assert not stopped.converged and stopped.reason == "search" and stopped.shape == "no_fit"
    assert math.isnan(stopped.alpha) and math.isnan(stopped.r2) and math.isnan(stopped.reach)
    assert stopped.line_r2 == fit_tanh(x, y).line_r2  # the line needs no search
    flat = fit_tanh(np.arange(5.0), np.zeros(5))
    assert not flat.converged and flat.reason == "flat" and flat.shape == "no_fit"


@pytest.mark.parametrize(
    ("x", "y"), [([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, np.nan], [1.0, 2.0])]
)
def test_bad_points_are_refused(x, y) -> None:
    with pytest.raises(ValueError, match="finite"):
        fit_tanh(x, y)


def test_the_output_before_the_gain_is_the_textbook_norm() -> None:
    x = np.random.default_rng(2).standard_normal((5, 8)) * 3 + 1
    y, denominator = normalised(x, "layer", 1e-5)
    np.testing.assert_allclose(y, layer_norm_reference(x, eps=1e-5), rtol=1e-13)
    np.testing.assert_allclose(denominator, np.sqrt(np.var(x, axis=1) + 1e-5), rtol=1e-13)
    y, denominator = normalised(x, "rms", 1e-5)
    np.testing.assert_allclose(y, rms_norm_reference(x, eps=1e-5), rtol=1e-13)
    with pytest.raises(ValueError, match="norm"):
        normalised(x, "none", 1e-5)


@pytest.mark.parametrize("norm", SCURVE_NORMS)
def test_gain_and_bias_on_the_read_output_give_the_layers_own_output(norm: str) -> None:
    """What the view plots, times the gain (plus LayerNorm's bias), is what each norm layer of
    the checkpoint returned in its forward pass (float32)."""
    model, _ = load_checkpoint(shipped_path(norm, 1))
    outputs: dict[str, list] = {}
    handles = [
        m.register_forward_hook(lambda _m, _a, out, n=n: outputs.setdefault(n, []).append(out))
        for n, m in model.norms()
    ]
    curves = layer_curves(model, DEFAULT_TEXT)
    for handle in handles:
        handle.remove()
    modules = dict(model.norms())
    assert [c.name for c in curves] == list(modules) and len(curves) == 7
    for curve in curves:
        d = modules[curve.name].weight.numel()
        shown = curve.y.reshape(-1, d) * modules[curve.name].weight.detach().double().numpy()
        if norm == "layer":
            shown = shown + modules[curve.name].bias.detach().double().numpy()
        real = torch.cat([o.reshape(-1, d) for o in outputs[curve.name]]).double().numpy()
        np.testing.assert_allclose(shown, real, atol=1e-5 * np.max(np.abs(real)))
        assert curve.sample.size >= SAMPLE and np.all(np.diff(curve.x[curve.sample]) >= 0)
        assert curve.x[curve.sample].max() == curve.x.max()
        assert curve.x[curve.sample].min() == curve.x.min()


def test_the_view_reads_both_models_and_every_claim_is_a_factual_text(view) -> None:
    assert set(view.curves) == {"rms", "layer"}
    assert view.layers() == [c.name for c in view.curves["layer"]]
    assert view.tokens == len(DEFAULT_TEXT.encode()) and view.d == 48 and view.n_layer == 3
    assert all(is_claim(c.key) for c in view.claims.values())
    for norm in SCURVE_NORMS:
        assert f"{norm}_summary" in view.claims and f"{norm}_divisors" in view.claims
        for name in view.layers():
            assert {f"{norm}_{name}_{p}" for p in ("fit", "quality", "shape", "cell")} <= set(
                view.claims
            )
    table = view.table("rms")
    assert table["layer"] == view.layers()
    assert table["alpha"][0] == view.curves["rms"][0].fit.alpha


@pytest.mark.parametrize("seed", [-1, 3, True, 0.5])
def test_only_the_shipped_seeds_are_read(seed) -> None:
    with pytest.raises(ValueError, match="seed"):
        scurve_view(seed=seed)


def test_the_snippet_prints_the_views_numbers(view) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(scurve_code(0), "snippet.py", "exec"), {"__name__": "__main__"})
    printed = dict(line.split(" = ", 1) for line in out.getvalue().splitlines())
    for norm, curves in view.curves.items():
        for c in curves:
            assert float(printed[f"{norm} {c.name} alpha"]) == c.fit.alpha
            assert float(printed[f"{norm} {c.name} R2"]) == c.fit.r2
            assert float(printed[f"{norm} {c.name} denominators max/min"]) == c.ratio
