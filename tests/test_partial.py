"""Partial RMSNorm (pRMSNorm) in ``core.norms.rms_norm(..., partial=p)`` against the paper's code.

Zhang & Sennrich's repository (bzhangGo/rmsnorm, ``rmsnorm_torch.py``, ``RMSNorm.forward``, at
commit c6691f20) estimates the RMS from the first ``int(d * p)`` coordinates:
``rms = ||x[:k]||_2 * k ** -0.5`` and ``y = scale * x / (rms + eps)``. The core takes
``ceil(p * d)`` coordinates (at least one). Where ``p * d`` is a whole number the two agree; where
it is not, the core uses one coordinate more; where ``p * d < 1`` the paper's code divides by
``0 ** -0.5`` and fails, and the core uses one coordinate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from core.norms import rms_norm, rms_norm_report

# The paper's default eps, added to the RMS outside the root (the core's preset "paper").
PAPER_EPS = 1e-8
TOLS = {torch.float64: 1e-12, torch.float32: 2e-6}


def paper_prmsnorm(x: torch.Tensor, scale: torch.Tensor, p: float, eps: float = PAPER_EPS):
    """``RMSNorm(d, p=p, eps=eps).forward(x)`` of rmsnorm_torch.py, rewritten step by step."""
    d = x.shape[-1]
    if p < 0.0 or p > 1.0:
        k = d
        norm_x = x.norm(2, dim=-1, keepdim=True)
    else:
        k = int(d * p)  # the paper's rounding: down
        head, _ = torch.split(x, [k, d - k], dim=-1)
        norm_x = head.norm(2, dim=-1, keepdim=True)
    rms_x = norm_x * k ** (-1.0 / 2)  # a Python int to a negative power: fails for k = 0
    return scale * (x / (rms_x + eps))


def inputs(d: int, dtype: torch.dtype, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(6, d, generator=gen, dtype=torch.float64) * 2.0 + 0.3).to(dtype)
    scale = (1.0 + 0.1 * torch.randn(d, generator=gen, dtype=torch.float64)).to(dtype)
    return x, scale


def core_prmsnorm(x: torch.Tensor, scale: torch.Tensor, p: float) -> torch.Tensor:
    return rms_norm(x, scale, preset="paper", partial=p)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "d,p",
    [
        (512, 0.0625),  # the paper's 6.25 %: 32 coordinates
        (4096, 0.0625),
        (256, 0.25),
        (100, 0.07),  # 0.07 * 100 = 7.000000000000001: both take 7
        (64, 0.5),
        (64, 1.0),
    ],
)
def test_core_agrees_with_the_paper_where_p_times_d_is_whole(d, p, dtype) -> None:
    assert int(d * p) == math.ceil(round(p * d, 9))
    x, scale = inputs(d, dtype)
    ours, theirs = core_prmsnorm(x, scale, p), paper_prmsnorm(x, scale, p)
    assert ours.dtype == theirs.dtype == dtype
    tol = TOLS[dtype]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("d,p,k_core,k_paper", [(100, 0.0625, 7, 6), (768, 0.0625, 48, 48)])
def test_partial_size_is_ceil_where_the_paper_takes_int(d, p, k_core, k_paper) -> None:
    x, scale = inputs(d, torch.float64)
    report = rms_norm_report(x, scale, preset="paper", partial=p)
    assert report.settings["partial_size"] == k_core
    assert int(d * p) == k_paper


def test_where_they_differ_the_core_is_the_paper_with_one_coordinate_more() -> None:
    d, p = 100, 0.0625  # p * d = 6.25: the core takes 7 coordinates, the paper's code 6
    x, scale = inputs(d, torch.float64, seed=3)
    ours = core_prmsnorm(x, scale, p)
    # The same computation as the paper's code asked for 7 coordinates ...
    np.testing.assert_allclose(
        ours.numpy(), paper_prmsnorm(x, scale, 7 / d).numpy(), rtol=1e-12, atol=1e-12
    )
    # ... and not the paper's own 6: the estimated RMS, hence every output, differs.
    theirs = paper_prmsnorm(x, scale, p)
    ratio = (ours / theirs).numpy()
    assert np.all(np.abs(ratio - 1.0) > 1e-3)
    rms6 = x[:, :6].pow(2).mean(-1).sqrt()
    rms7 = x[:, :7].pow(2).mean(-1).sqrt()
    np.testing.assert_allclose(ratio, (rms6 / rms7)[:, None].expand(-1, d).numpy(), rtol=1e-7)


def test_below_one_coordinate_the_paper_fails_and_the_core_uses_one() -> None:
    d, p = 8, 0.1  # p * d = 0.8: int gives 0 coordinates, ceil gives 1
    x, scale = inputs(d, torch.float64, seed=5)
    with pytest.raises(ZeroDivisionError):
        paper_prmsnorm(x, scale, p)
    ours = core_prmsnorm(x, scale, p)
    np.testing.assert_allclose(
        ours.numpy(), paper_prmsnorm(x, scale, 1 / d).numpy(), rtol=1e-12, atol=1e-12
    )
    assert rms_norm_report(x, scale, preset="paper", partial=p).settings["partial_size"] == 1


def test_full_width_p_matches_the_full_rms() -> None:
    """p = 1 in the core is the ordinary RMSNorm; the paper's code disables pRMSNorm with p < 0."""
    x, scale = inputs(300, torch.float64, seed=9)
    np.testing.assert_allclose(
        core_prmsnorm(x, scale, 1.0).numpy(),
        paper_prmsnorm(x, scale, -1.0).numpy(),
        rtol=1e-12,
        atol=1e-12,
    )
