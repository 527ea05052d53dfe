r"""The residual stream of a trained model, read layer by layer with forward hooks.

The same readings as ``core.residual``'s synthetic trunk, taken from weights that learned
something: for each token vector :math:`h` of the stream (width d) entering block 0 (the
embeddings) and leaving each block,

.. math:: \mu = \tfrac1d \textstyle\sum_i h_i, \quad
    \mathrm{RMS}^2 = \tfrac1d \textstyle\sum_i h_i^2 = \sigma^2 + \mu^2, \quad
    \cos(h, \mathbf 1) = \mu / \mathrm{RMS}, \quad \text{share} = \mu^2 / \mathrm{RMS}^2,

each averaged over the tokens of a fixed text; the share of RMS² that is μ² is the part of the
denominator that RMSNorm divides by and LayerNorm removes (it equals cos², token by token).
The outlier dimensions are the coordinates with the largest mean magnitude over the tokens.

torch is imported inside the functions: ``import core.activations`` needs only numpy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DEFAULT_TEXT", "OUTLIERS", "ActivationReadings", "read_activations", "stream_stats"]

# Plain Python prose, like the training text, written for this reading: it is in neither split.
DEFAULT_TEXT = (
    "A for loop walks over the items of any iterable, one at a time and in order. When the "
    "loop ends without meeting a break statement, its else clause runs. The names bound by the "
    "loop stay defined after it ends, so the last item can still be read."
)
# A handful of dimensions is enough to see whether a few coordinates carry the stream.
OUTLIERS = 4


@dataclass(frozen=True)
class ActivationReadings:
    """Per-layer readings of the residual stream, index l = 0 .. L.

    Index 0 is the stream entering block 0 (token plus position embeddings), index l the
    stream leaving block l - 1. ``mean``, ``cos_ones``, ``mean_share`` and ``rms`` have shape
    (L + 1,), each the mean over ``tokens`` token vectors (module docstring);
    ``outlier_dims`` (L + 1, k) are the k coordinates with the largest mean :math:`|h_i|`,
    largest first, and ``outlier_magnitude`` those means; ``outlier_ratio`` (L + 1,) is the
    largest mean :math:`|h_i|` over the median one across the d coordinates.
    """

    layers: np.ndarray
    mean: np.ndarray
    cos_ones: np.ndarray
    mean_share: np.ndarray
    rms: np.ndarray
    outlier_dims: np.ndarray
    outlier_magnitude: np.ndarray
    outlier_ratio: np.ndarray
    norm: str
    d: int
    tokens: int
    text: str
    checkpoint: str | None


def stream_stats(h: np.ndarray, outliers: int = OUTLIERS) -> dict[str, Any]:
    """The readings of one layer's stream h, shape (n, d) float64; scalars are token means."""
    mean = np.mean(h, axis=-1)  # (n, d) -> (n,)
    mean_square = np.mean(h**2, axis=-1)  # (n, d) -> (n,)
    rms = np.sqrt(mean_square)
    # A zero vector has no direction and no offset: its cosine and share read as 0.
    safe = np.where(mean_square > 0.0, mean_square, 1.0)
    magnitude = np.mean(np.abs(h), axis=0)  # (n, d) -> (d,)
    order = np.argsort(-magnitude, kind="stable")[:outliers]
    median = float(np.median(magnitude))
    return {
        "mean": float(np.mean(mean)),
        "cos_ones": float(np.mean(np.where(mean_square > 0.0, mean / np.sqrt(safe), 0.0))),
        "mean_share": float(np.mean(np.where(mean_square > 0.0, mean**2 / safe, 0.0))),
        "rms": float(np.mean(rms)),
        "outlier_dims": order,
        "outlier_magnitude": magnitude[order],
        "outlier_ratio": float(magnitude[order[0]] / median) if median > 0 else float("inf"),
    }


def _rows(text: str, block_size: int) -> list[Any]:
    """The text's bytes cut into rows of at most ``block_size`` (the last may be shorter)."""
    import torch

    from core.corpus import encode

    ids = torch.from_numpy(encode(text).astype(np.int64))
    if ids.numel() == 0:
        raise ValueError("text must not be empty")
    return [ids[i : i + block_size][None, :] for i in range(0, ids.numel(), block_size)]


def _capture_streams(model: Any, rows: list[Any]) -> list[np.ndarray]:
    """Forward ``rows`` with hooks on every block; the L + 1 streams, each (tokens, d) float64."""
    import torch

    captured: list[list[np.ndarray]] = [[] for _ in range(len(model.blocks) + 1)]

    def keep(index: int, tensor: Any) -> None:
        captured[index].append(tensor.detach().reshape(-1, tensor.shape[-1]).double().numpy())

    handles = [model.blocks[0].register_forward_pre_hook(lambda _m, args: keep(0, args[0]))]
    for i, block in enumerate(model.blocks):
        handles.append(block.register_forward_hook(lambda _m, _a, out, i=i: keep(i + 1, out)))
    try:
        with torch.no_grad():
            for row in rows:
                model(row)
    finally:
        for handle in handles:
            handle.remove()
    return [np.concatenate(parts) for parts in captured]


def read_activations(
    model: Any, text: str = DEFAULT_TEXT, *, outliers: int = OUTLIERS
) -> ActivationReadings:
    """Read the residual stream of ``model`` (a ``core.model.GPT`` or a checkpoint path) on
    ``text``, cut into rows of the model's block size; see ``ActivationReadings``."""
    checkpoint = None
    if isinstance(model, str | Path):
        from core.checkpoint import load_checkpoint

        checkpoint = Path(model).name
        model, _ = load_checkpoint(model)
    d = model.config.n_embd
    if isinstance(outliers, bool) or not isinstance(outliers, int) or not 1 <= outliers <= d:
        raise ValueError(f"outliers must be an integer in [1, {d}] (got {outliers!r})")
    streams = _capture_streams(model, _rows(text, model.config.block_size))
    per_layer = [stream_stats(h, outliers) for h in streams]

    def column(key: str) -> np.ndarray:
        return np.array([reading[key] for reading in per_layer])

    return ActivationReadings(
        layers=np.arange(len(streams)),
        mean=column("mean"),
        cos_ones=column("cos_ones"),
        mean_share=column("mean_share"),
        rms=column("rms"),
        outlier_dims=column("outlier_dims"),
        outlier_magnitude=column("outlier_magnitude"),
        outlier_ratio=column("outlier_ratio"),
        norm=model.config.norm,
        d=d,
        tokens=int(streams[0].shape[0]),
        text=text,
        checkpoint=checkpoint,
    )
