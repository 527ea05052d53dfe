"""The backward page's sentences, checked with torch autograd in float64.

Each check rebuilds x from the link state with numpy, takes both Jacobians and the input
gradients from ``torch.autograd`` (``F.rms_norm`` and ``F.layer_norm``; what a norm does to the
direction of 1 by forward mode, ``torch.func.jvp``), and compares what the sentence says, numbers
and words, with them. ``labs.backward.model`` builds the Jacobians from their closed forms instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from labs.backward.model import backward_view
from tests.claims.oracle import chart_of, check_grid_words, check_pair_words, pair_keys

# What the page calls flattened or gone: below this share of what the norm passes elsewhere.
FLAT = 1e-3
PAGE_EPS = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 1.0)

STATES = st.fixed_dictionaries(
    {
        "d": st.one_of(st.sampled_from([2, 3, 64]), st.integers(2, 64)),
        "offset": st.one_of(st.sampled_from([-20.0, 0.0, 20.0]), st.floats(-20, 20)),
        "eps": st.sampled_from(PAGE_EPS),
        "seed": st.one_of(st.just(0), st.integers(0, 2**31 - 1)),
        "grad": st.sampled_from(["ones", "x", "random"]),
    }
)


def view(state: dict):
    return backward_view(**state)


@dataclass(frozen=True)
class Truth:
    x: np.ndarray
    eps: float
    r: float
    sigma: float
    j_rms: np.ndarray
    j_layer: np.ndarray
    grad_rms: np.ndarray
    grad_layer: np.ndarray
    upstream: np.ndarray
    image_rms: np.ndarray  # J 1/sqrt(d), forward mode
    image_layer: np.ndarray


def _upstream(x: np.ndarray, kind: str, seed: int) -> np.ndarray:
    g = {
        "ones": lambda: np.ones_like(x),
        "x": lambda: x.copy(),
        "random": lambda: np.random.default_rng([seed, 2]).standard_normal(x.size),
    }[kind]()
    return g / np.linalg.norm(g)


@cache
def _truth(d: int, offset: float, eps: float, seed: int, grad: str) -> Truth:
    x = np.random.default_rng(seed).standard_normal(d) + offset
    xt = torch.tensor(x, dtype=torch.float64)
    rms = lambda v: F.rms_norm(v, (d,), eps=eps)  # noqa: E731
    layer = lambda v: F.layer_norm(v, (d,), eps=eps)  # noqa: E731
    g = _upstream(x, grad, seed)
    grads = []
    for fn in (rms, layer):
        leaf = xt.clone().requires_grad_(True)
        fn(leaf).backward(torch.tensor(g))
        grads.append(leaf.grad.numpy())
    jac = torch.autograd.functional.jacobian
    ones = torch.full((d,), 1 / math.sqrt(d), dtype=torch.float64)
    return Truth(
        x=x,
        eps=eps,
        # r = sqrt(RMS^2 + eps), sigma = sqrt(Var + eps): as hypotenuses, RMS as |x| / sqrt(d).
        r=math.hypot(float(np.linalg.norm(x)) / math.sqrt(d), math.sqrt(eps)),
        sigma=math.hypot(float(torch.std(xt, correction=0)), math.sqrt(eps)),
        j_rms=jac(rms, xt).numpy(),
        j_layer=jac(layer, xt).numpy(),
        grad_rms=grads[0],
        grad_layer=grads[1],
        upstream=g,
        image_rms=torch.func.jvp(rms, (xt,), (ones,))[1].numpy(),
        image_layer=torch.func.jvp(layer, (xt,), (ones,))[1].numpy(),
    )


def truth(state: dict) -> Truth:
    return _truth(state["d"], state["offset"], state["eps"], state["seed"], state["grad"])


def near(shown: float, expected: float, *, rtol: float = 1e-9, atol: float = 0.0) -> None:
    assert abs(shown - expected) <= atol + rtol * abs(expected), (shown, expected)


def check_heatmap(state: dict, claim) -> None:
    t, f = truth(state), claim.fields
    d = t.x.size
    diag = np.diag(t.j_rms)
    top = max(np.abs(t.j_rms).max(), np.abs(t.j_layer).max())
    near(f["inv_r"], 1 / t.r)
    near(f["diag_rms_lo"], diag.min(), atol=1e-12 * top)
    near(f["diag_rms_hi"], diag.max(), atol=1e-12 * top)
    assert f["diag_rms_hi"] <= 1 / t.r * (1 + 1e-12)
    near(f["sub_layer"], 1 / (d * t.sigma))
    rows_rms = t.j_rms.sum(axis=1)
    near(f["row_min_rms"], rows_rms.min(), atol=1e-10 * top)
    near(f["row_max_rms"], rows_rms.max(), atol=1e-10 * top)
    rows_layer = np.abs(t.j_layer.sum(axis=1)).max()
    # Centring x costs |mean| / sigma of float64's relative precision in LayerNorm's entries.
    centring = 1 + abs(t.x.mean()) / t.sigma
    # "LayerNorm subtracts 1/(dσ) from every entry, besides x̂ᵢx̂ⱼ/(dσ)": autograd's Jacobian plus
    # 1/(dσ) is diag(1/σ) − x̂x̂ᵀ/(dσ), x̂ = (x − mean)/σ.
    x_hat = (t.x - t.x.mean()) / t.sigma
    rest = np.eye(d) / t.sigma - np.outer(x_hat, x_hat) / (d * t.sigma)
    np.testing.assert_allclose(
        t.j_layer + f["sub_layer"], rest, rtol=0, atol=1e-9 * centring / t.sigma
    )
    if claim.key == "backward.heatmap_caption":
        # "entry i is (1 − xᵢ²/(d r²))/r": RMSNorm's diagonal, from autograd.
        np.testing.assert_allclose(
            diag, (1 - t.x**2 / (d * t.r**2)) / t.r, rtol=0, atol=1e-12 / t.r
        )
        # "each row sums to ≈ 0": shown as noise, and autograd's rows vanish too, to float64's
        # rounding of LayerNorm's Jacobian: its terms are of size 1/sigma and cancel, and
        # centring x costs |mean| / sigma of the relative precision. (With d = 2 the Jacobian
        # is exactly 0, so the RMSNorm entries that set ``top`` say nothing of its rounding.)
        rounding = 8 * d * np.finfo(np.float64).eps * centring / t.sigma
        assert f["row_sum_layer"] <= claim.noise
        assert rows_layer <= max(1e-10 * top, rounding), (rows_layer, rounding)
    else:
        assert f["row_sum_layer"] > claim.noise


def _spectrum(state: dict, claim, kind: str) -> None:
    t, f = truth(state), claim.fields
    d = t.x.size
    j = t.j_rms if kind == "rms" else t.j_layer
    # Without a weight both Jacobians are symmetric; autograd's differ from that by rounding.
    eig = np.linalg.eigvalsh((j + j.T) / 2)
    stat = t.r if kind == "rms" else t.sigma
    along, unit = t.eps / stat**3, 1 / stat
    near(f["min"], eig[0], atol=1e-9 * unit)
    near(f["max"], eig[-1], atol=1e-9 * unit)
    if claim.key.endswith("_range"):
        return
    near(f["along"], along)
    near(f["ratio_pct"], t.eps / stat**2)
    near(f["inv_r" if kind == "rms" else "inv_sigma"], unit)
    flat = t.eps / stat**2 <= FLAT
    assert claim.key.endswith("_flat") == flat, (claim.key, t.eps / stat**2)
    # The eigenvalues the sentence names: [along x] + (d - 1) x 1/r, or [0, along] + (d - 2) x
    # 1/sigma for LayerNorm (0 along 1 for every eps).
    expected = [along] + [unit] * (d - 1) if kind == "rms" else [0.0, along] + [unit] * (d - 2)
    np.testing.assert_allclose(eig, np.sort(expected), rtol=0, atol=1e-9 * unit)
    assert f["rest"] == (d - 1 if kind == "rms" else d - 2)
    assert ("_d2_" in claim.key) == (kind == "layer" and d == 2)


def check_spectrum_rms(state: dict, claim) -> None:
    _spectrum(state, claim, "rms")


def check_spectrum_layer(state: dict, claim) -> None:
    _spectrum(state, claim, "layer")


def _parts(t: Truth) -> dict[str, float]:
    unit_x = t.x / np.linalg.norm(t.x)
    ones = np.ones(t.x.size) / np.sqrt(t.x.size)
    return {
        "g_ones": t.upstream @ ones,
        "g_x": t.upstream @ unit_x,
        "rms_ones": t.grad_rms @ ones,
        "rms_x": t.grad_rms @ unit_x,
        "layer_ones": t.grad_layer @ ones,
        "layer_x": t.grad_layer @ unit_x,
    }


def check_components(state: dict, claim) -> None:
    t, f = truth(state), claim.fields
    parts = _parts(t)
    scale = max(1 / t.r, 1 / t.sigma)
    for name, value in parts.items():
        near(f[name], value, atol=1e-10 * scale)
        if abs(f[name]) <= claim.noise:
            # Shown as "≈ 0": autograd's value is as small.
            assert abs(value) <= 1e-10 * scale, (name, value)
    assert f["tol_pct"] == FLAT
    gone_rms_x = abs(parts["rms_x"]) <= FLAT / t.r
    gone_rms_ones = abs(parts["rms_ones"]) <= FLAT / t.r
    gone_layer_x = abs(parts["layer_x"]) <= FLAT / t.sigma
    gone_layer_ones = abs(parts["layer_ones"]) <= FLAT / t.sigma
    expected = {
        "backward.components_rms_x_gone": gone_rms_x and not gone_rms_ones,
        "backward.components_rms_both_small": gone_rms_x and gone_rms_ones,
        "backward.components_rms_x_left": not gone_rms_x and not gone_rms_ones,
        "backward.components_rms_x_left_ones_small": not gone_rms_x and gone_rms_ones,
        "backward.components_layer_gone": gone_layer_ones and gone_layer_x,
        "backward.components_layer_x_left": gone_layer_ones and not gone_layer_x,
        "backward.components_layer_plain": True,
    }[claim.key]
    assert expected, (claim.key, parts)
    near(f["mean_square"], np.mean(t.x**2))
    near(f["variance"], np.var(t.x))


def check_conclusion(state: dict, claim) -> None:
    t, f = truth(state), claim.fields
    layer_image = float(np.linalg.norm(t.image_layer))
    rms_image = float(np.linalg.norm(t.image_rms))
    near(f["rms_image"], rms_image, rtol=1e-9)
    near(f["layer_image"], layer_image, atol=1e-10 / t.sigma)
    if claim.key == "backward.components_conclusion":
        assert f["layer_image"] <= claim.noise and layer_image <= 1e-10 / t.sigma
        assert rms_image >= FLAT / t.r


def check_why(state: dict, claim) -> None:
    x = truth(state).x
    # cos(x, 1) lies in [-1, 1]: a few float64 ulps of 1 per coordinate summed.
    ulps = 4 * x.size * np.finfo(np.float64).eps
    near(claim.fields["cos"], x.sum() / (np.sqrt(x.size) * np.linalg.norm(x)), atol=ulps)


def check_component_values(state: dict, claim) -> None:
    """The components a sentence (or the bar chart's summary) quotes: autograd's, and "≈ 0"
    only where autograd's is as small."""
    t, f = truth(state), claim.fields
    scale = max(1 / t.r, 1 / t.sigma)
    parts = _parts(t)
    assert set(f) <= set(parts) and f, f
    for name, value in f.items():
        near(value, parts[name], atol=1e-10 * scale)
        if abs(value) <= claim.noise:
            assert abs(parts[name]) <= 1e-10 * scale, (name, parts[name])
    if claim.key == "backward.components_words":
        assert set(f) == set(parts)  # every bar drawn
    lesson = view(state).lesson
    for vector, prefix in (("upstream", "g"), ("rms", "rms"), ("layer", "layer")):
        drawn = lesson.parts[vector]
        for axis, value in (("ones", drawn.ones), ("x", drawn.radial)):
            if f"{prefix}_{axis}" in f:
                assert f[f"{prefix}_{axis}"] == value  # the bar's own number


def check_chart_words(state: dict, claim) -> None:
    """A chart's summary, from the arrays its chart draws: the Jacobians entry by entry, the
    spectra by k from 1, the input gradients by coordinate."""
    lesson = view(state).lesson
    chart = chart_of(claim.fields.get("chart", claim.key).removeprefix("backward."))
    # An entry is a sum of d terms of size up to 1 / (the smaller statistic): the scale that
    # bounds its rounding, from x itself.
    x, d = [float(v) for v in lesson.x], lesson.x.shape[-1]
    mean = math.fsum(x) / d
    stats = (
        math.sqrt(math.fsum(v * v for v in x) / d + lesson.eps),
        math.sqrt(math.fsum((v - mean) ** 2 for v in x) / d + lesson.eps),
    )
    scale = d * math.sqrt(d) / min(stats)
    if chart == "heatmap":
        check_grid_words(claim, lesson.jacobian_rms, lesson.jacobian_layer, scale=scale)
        return
    if chart == "spectrum":
        check_pair_words(
            claim, list(range(1, d + 1)), lesson.eig_rms, lesson.eig_layer, scale=scale
        )
    else:
        assert chart == "gradient", chart
        check_pair_words(claim, list(range(d)), lesson.grad_rms, lesson.grad_layer, scale=scale)


CHECKS = {
    "charts.not_finite": check_chart_words,
    "charts.no_finite": check_chart_words,
    **{
        key: check_chart_words
        for chart in ("heatmap", "spectrum", "gradient")
        for key in pair_keys(f"backward.{chart}_words")
    },
    "backward.components_words": check_component_values,
    "backward.components_upstream": check_component_values,
    "backward.heatmap_caption": check_heatmap,
    "backward.heatmap_caption_rows": check_heatmap,
    "backward.spectrum_rms_flat": check_spectrum_rms,
    "backward.spectrum_rms_damped": check_spectrum_rms,
    "backward.spectrum_rms_range": check_spectrum_rms,
    "backward.spectrum_layer_flat": check_spectrum_layer,
    "backward.spectrum_layer_damped": check_spectrum_layer,
    "backward.spectrum_layer_d2_flat": check_spectrum_layer,
    "backward.spectrum_layer_d2_damped": check_spectrum_layer,
    "backward.spectrum_layer_range": check_spectrum_layer,
    "backward.components_rms_x_gone": check_components,
    "backward.components_rms_both_small": check_components,
    "backward.components_rms_x_left": check_components,
    "backward.components_rms_x_left_ones_small": check_components,
    "backward.components_layer_gone": check_components,
    "backward.components_layer_x_left": check_components,
    "backward.components_layer_plain": check_components,
    "backward.components_conclusion": check_conclusion,
    "backward.components_conclusion_plain": check_conclusion,
    "backward.components_why": check_why,
}
