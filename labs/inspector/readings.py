r"""What the norms see: one forward pass with a hook on every normalisation module.

For each norm module, the input it receives is a matrix of t token vectors x of width d. Per token
(all in float64):

.. math:: \mu = \tfrac1d \textstyle\sum_i x_i, \quad
    \mathrm{RMS}^2 = \tfrac1d \textstyle\sum_i x_i^2, \quad
    \sigma^2 = \tfrac1d \textstyle\sum_i (x_i - \mu)^2, \quad
    \mathrm{RMS}^2 = \sigma^2 + \mu^2

The readings, means over the tokens: the share of RMS² that is μ², the cosine with 1
(:math:`\mu/\mathrm{RMS}`), the RMS, and the largest gap in the identity over the tokens (zero up
to rounding). The outlier ("massive activation"): the largest :math:`|x_i| / \mathrm{RMS}(x)` of
its own token, with the module's gain there beside the median gain and the same ratio on the
output, :math:`|y_i|/\mathrm{RMS}(y)`."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

# Each formula short enough for a phone's width; the page shows them one per line.
SHARE_FORMULAS = (
    r"\frac{\mu^2}{\mathrm{RMS}^2} = \cos^2(x, \mathbf{1})",
    r"\frac{\sigma}{\mathrm{RMS}} = \sqrt{1 - \frac{\mu^2}{\mathrm{RMS}^2}}",
)
RATIO_FORMULAS = (
    r"\frac{x_i^2}{\sum_j x_j^2} = \frac{1}{d}\left(\frac{|x_i|}{\mathrm{RMS}(x)}\right)^2 \le 1",
    r"\frac{|x_i|}{\mathrm{RMS}(x)} \le \sqrt{d}",
)

# Enough tokens for a sentence; a forward pass over them stays cheap on two cores.
MAX_TOKENS = 64
# The text the models read when the link names none: one sentence for every language, so that one
# link gives one set of readings (the shipped models learned English, from Python's docs).
DEFAULT_PROMPT = "Each token vector is divided by its root mean square."
# How many of the largest coordinates a reading names.
TOP_DIMS = 3


@dataclass(frozen=True)
class NormReading:
    """The readings of one norm module's input and output (see the module docstring).

    ``top_token``/``top_dim`` locate the largest coordinate, ``top_ratio`` is its
    :math:`|x_i|/\\mathrm{RMS}`, ``top_share`` its share of that token's RMS²; ``top_gain`` is
    the effective gain at ``top_dim`` (nan without a gain) and ``gain_median`` the median
    :math:`|g|`; ``out_ratio`` is :math:`|y_i|/\\mathrm{RMS}(y)` at the same place; ``dims`` the
    ``TOP_DIMS`` coordinates with the largest ratio over the tokens, largest first."""

    name: str
    place: str
    tokens: int
    width: int
    share: float
    cos: float
    rms: float
    identity_gap: float
    top_token: int
    top_dim: int
    top_ratio: float
    top_share: float
    top_gain: float
    gain_median: float
    out_ratio: float
    dims: tuple[int, ...]


def _per_token(x: np.ndarray) -> dict[str, np.ndarray]:
    """μ, RMS², σ² per token of x (t, d)."""
    mean = x.mean(axis=-1)  # (t, d) -> (t,)
    mean_square = np.mean(x**2, axis=-1)  # (t, d) -> (t,)
    variance = np.mean((x - mean[:, None]) ** 2, axis=-1)  # (t, d) -> (t,)
    return {"mean": mean, "ms": mean_square, "var": variance}


def _safe_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, 0 where den is 0 (a zero vector has no direction and no offset)."""
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def reading(
    name: str, place: str, x: np.ndarray, y: np.ndarray, gain: np.ndarray | None
) -> NormReading:
    """The readings of one module from its input ``x`` and output ``y``, (t, d) float64, and its
    effective gain (d,) or None."""
    s = _per_token(x)
    rms = np.sqrt(s["ms"])
    ratio = _safe_ratio(np.abs(x), rms[:, None])  # (t, d): |x_i| / RMS of its token
    token, dim = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
    y_rms = np.sqrt(np.mean(y**2, axis=-1))
    by_dim = ratio.max(axis=0)  # (t, d) -> (d,)
    dims = tuple(int(i) for i in np.argsort(-by_dim, kind="stable")[:TOP_DIMS])
    return NormReading(
        name=name,
        place=place,
        tokens=int(x.shape[0]),
        width=int(x.shape[1]),
        share=float(np.mean(_safe_ratio(s["mean"] ** 2, s["ms"]))),
        cos=float(np.mean(_safe_ratio(s["mean"], rms))),
        rms=float(np.mean(rms)),
        identity_gap=float(
            np.max(_safe_ratio(np.abs(s["ms"] - s["var"] - s["mean"] ** 2), s["ms"]))
        ),
        top_token=int(token),
        top_dim=int(dim),
        top_ratio=float(ratio[token, dim]),
        top_share=float(ratio[token, dim] ** 2 / x.shape[1]),
        top_gain=math.nan if gain is None else float(gain[dim]),
        gain_median=math.nan if gain is None else float(np.median(np.abs(gain))),
        out_ratio=float(_safe_ratio(np.abs(y[token, dim]), y_rms[token])),
        dims=dims,
    )


def read_norm_inputs(
    model: Any, ids: list[int], places: dict[str, str], gains: dict
) -> list[NormReading]:
    """Run ``ids`` through ``model`` under ``torch.inference_mode`` with a forward hook on every
    module named in ``places`` (name -> place); one reading per module, in call order (a module
    called twice is read at its first call). ``gains``: name -> effective gain array or None."""
    import torch

    from labs.inspector.places import norm_modules

    out: dict[str, NormReading] = {}
    handles = []

    def hook_for(name: str):
        def hook(module, args, output):
            if name in out or not args:
                return
            x = args[0].detach().double().reshape(-1, args[0].shape[-1]).cpu().numpy()
            y_t = output[0] if isinstance(output, tuple) else output
            y = y_t.detach().double().reshape(-1, y_t.shape[-1]).cpu().numpy()
            out[name] = reading(name, places[name], x, y, gains.get(name))

        return hook

    for name, module in norm_modules(model):
        if name in places:
            handles.append(module.register_forward_hook(hook_for(name)))
    try:
        with torch.inference_mode():
            model(torch.tensor([ids], dtype=torch.long))
    finally:
        for handle in handles:
            handle.remove()
    return list(out.values())
