r"""The residual stream of a trained model, read layer by layer with forward hooks.

The same readings as ``labs.residual.model``'s synthetic trunk, taken from weights that learned
something: for each token vector :math:`h` of the stream (width d) entering block 0 (the
embeddings) and leaving each block,

.. math:: \mu = \tfrac1d \textstyle\sum_i h_i, \quad
    \mathrm{RMS}^2 = \tfrac1d \textstyle\sum_i h_i^2 = \sigma^2 + \mu^2, \quad
    \cos(h, \mathbf 1) = \mu / \mathrm{RMS}, \quad \text{share} = \mu^2 / \mathrm{RMS}^2,

each averaged over the tokens of a fixed text; the share of RMS² that is μ² is the part of the
denominator that RMSNorm divides by and LayerNorm removes (it equals cos², token by token).
The outlier dimensions are the coordinates with the largest mean magnitude over the tokens.

``shift_response`` adds a common offset :math:`c_l\mathbf 1` (the stream's own RMS) to one layer's
stream at a time and measures the loss: LayerNorm cannot see it, RMSNorm and the identity can.
``read_shipped`` does both for the shipped checkpoints. torch is imported inside the functions."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from core.device import torch_threads

# Plain Python prose, like the training text, written for this reading: it is in neither split.
DEFAULT_TEXT = (
    "A for loop walks over the items of any iterable, one at a time and in order. When the "
    "loop ends without meeting a break statement, its else clause runs. The names bound by the "
    "loop stay defined after it ends, so the last item can still be read."
)
# The texts a page may feed the shipped models, by link value: the default above, the same
# sentences in Indonesian (a language the models never read: their bytes are out of
# distribution), and Python code like the examples in the training text.
TEXTS = {
    "docs": DEFAULT_TEXT,
    "docs_id": (
        "Perulangan for menelusuri butir-butir dari objek iterable apa pun, satu per satu dan "
        "berurutan. Jika perulangan selesai tanpa bertemu pernyataan break, klausa else-nya "
        "dijalankan. Nama yang diikat oleh perulangan tetap terdefinisi sesudahnya, sehingga "
        "butir terakhir masih dapat dibaca."
    ),
    "code": (
        "def total(items):\n"
        "    result = 0\n"
        "    for item in items:\n"
        "        if item is None:\n"
        "            continue\n"
        "        result += item\n"
        "    return result\n"
        "\n"
        "print(total([1, 2, None, 4]))\n"
    ),
}
# A handful of dimensions is enough to see whether a few coordinates carry the stream.
OUTLIERS = 4
# The shipped checkpoints (``python -m labs.training.runs`` writes them; ``labs.training.runs``
# names the same directory and seeds, but importing it imports torch and the trainer).
SHIPPED_DIR = Path(__file__).resolve().parents[2] / "assets" / "train"
SHIPPED_NORMS = ("rms", "layer", "none")
SHIPPED_SEEDS = (0, 1, 2)
# The models are small (d = 48): one torch thread reads them fastest, and a second one only
# waits for its share of a loaded machine.
READ_THREADS = 1
# One reading at a time per process: two at once would set and restore torch's thread count
# across each other and could leave it at one for the whole server.
_READ_LOCK = threading.Lock()


@dataclass(frozen=True)
class ActivationReadings:
    """Per-layer readings of the residual stream, index l = 0 .. L.

    Index 0 is the stream entering block 0 (token plus position embeddings), index l the
    stream leaving block l - 1. ``mean``, ``cos_ones``, ``mean_share`` and ``rms`` have shape
    (L + 1,), each the mean over ``tokens`` token vectors (module docstring);
    ``outlier_dims`` (L + 1, k) are the k coordinates with the largest mean :math:`|h_i|`,
    largest first, and ``outlier_magnitude`` those means; ``outlier_ratio`` (L + 1,) is the
    largest mean :math:`|h_i|` over the median one across the d coordinates; ``magnitude``
    (L + 1, d) is the mean :math:`|h_i|` of every coordinate."""

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
    magnitude: np.ndarray | None = None


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
        "magnitude": magnitude,
    }


def _rows(text: str, block_size: int) -> list[Any]:
    """The text's bytes cut into rows of at most ``block_size`` (the last may be shorter)."""
    import torch

    from labs.training.corpus import encode

    ids = torch.from_numpy(encode(text).astype(np.int64))
    if ids.numel() == 0:
        raise ValueError("text must not be empty")
    return [ids[i : i + block_size][None, :] for i in range(0, ids.numel(), block_size)]


def capture(model: Any, rows: list[Any], taps: list[tuple[Any, str, Any]]) -> dict[Any, Any]:
    """Forward ``rows`` through ``model`` and keep each tap's tensors as (tokens, d) float64: a
    tap is (module, "input" or "output", key); the arrays by key, in the order of ``taps``."""
    import torch

    captured: dict[Any, list[np.ndarray]] = {key: [] for _, _, key in taps}

    def keep(key: Any, tensor: Any) -> None:
        captured[key].append(tensor.detach().reshape(-1, tensor.shape[-1]).double().numpy())

    handles = [
        module.register_forward_pre_hook(lambda _m, args, key=key: keep(key, args[0]))
        if side == "input"
        else module.register_forward_hook(lambda _m, _a, out, key=key: keep(key, out))
        for module, side, key in taps
    ]
    try:
        with torch.no_grad():
            for row in rows:
                model(row)
    finally:
        for handle in handles:
            handle.remove()
    return {key: np.concatenate(parts) for key, parts in captured.items()}


def _capture_streams(model: Any, rows: list[Any]) -> list[np.ndarray]:
    """Forward ``rows`` with hooks on every block; the L + 1 streams, each (tokens, d) float64."""
    taps = [(model.blocks[0], "input", 0)]
    taps += [(block, "output", i + 1) for i, block in enumerate(model.blocks)]
    return list(capture(model, rows, taps).values())


def read_activations(
    model: Any, text: str = DEFAULT_TEXT, *, outliers: int = OUTLIERS
) -> ActivationReadings:
    """Read the residual stream of ``model`` (a ``labs.training.model.GPT`` or a checkpoint path) on
    ``text``, cut into rows of the model's block size; see ``ActivationReadings``."""
    checkpoint = None
    if isinstance(model, str | Path):
        from labs.training.store import load_checkpoint

        checkpoint = Path(model).name
        model, _ = load_checkpoint(model)
    d = model.config.n_embd
    if isinstance(outliers, bool) or not isinstance(outliers, int) or not 1 <= outliers <= d:
        raise ValueError(f"outliers must be an integer in [1, {d}] (got {outliers!r})")
    streams = _capture_streams(model, _rows(text, model.config.block_size))
    per_layer = [stream_stats(h, outliers) for h in streams]
    return ActivationReadings(
        layers=np.arange(len(streams)),
        **{key: np.array([reading[key] for reading in per_layer]) for key in per_layer[0]},
        norm=model.config.norm,
        d=d,
        tokens=int(streams[0].shape[0]),
        text=text,
        checkpoint=checkpoint,
    )


# --- What the model makes of the component along 1: shift it and read the loss ---------------


@dataclass(frozen=True)
class ShiftResponse:
    r"""The model's loss on a text, and the same loss with the stream shifted at one layer.

    ``loss`` is the mean next-byte cross-entropy in nats over the text (each row of the text a
    context of its own; byte i + 1 is the target of position i, across row boundaries too).
    ``shifted_loss[l]`` is that loss with :math:`h_l \leftarrow h_l + c_l\mathbf 1` for every
    token (l = 0 .. L, the reader of :math:`h_L` being the final norm, or the output head in the
    post-norm layout) and ``shift[l]`` is :math:`c_l`."""

    loss: float
    shifted_loss: np.ndarray
    shift: np.ndarray


def _text_loss(model: Any, rows: list[Any], reader: Any = None, shift: float = 0.0) -> float:
    """Mean next-byte cross-entropy over ``rows``; with ``reader``, its input gets ``+ shift``."""
    import torch
    import torch.nn.functional as F

    handle = None
    if reader is not None:
        handle = reader.register_forward_pre_hook(lambda _m, args: (args[0] + shift,))
    try:
        with torch.no_grad():
            logits = torch.cat([model(row)[0][0] for row in rows])  # (N, vocab)
    finally:
        if handle is not None:
            handle.remove()
    ids = torch.cat([row[0] for row in rows])  # (N,)
    return float(F.cross_entropy(logits[:-1].double(), ids[1:]))


def shift_response(model: Any, text: str, shifts: Any) -> ShiftResponse:
    r"""The loss of ``model`` on ``text``, then with :math:`h_l + c_l\mathbf 1` for each l alone.

    ``shifts``: :math:`c_l` for l = 0 .. L (L + 1 finite numbers)."""
    shifts = np.asarray(shifts, dtype=np.float64)
    # The module that reads h_l, l = 0 .. L (``ShiftResponse``).
    readers = [*model.blocks, model.ln_f if model.ln_f is not None else model.lm_head]
    if shifts.shape != (len(readers),) or not np.all(np.isfinite(shifts)):
        raise ValueError(f"shifts must be {len(readers)} finite numbers (got {shifts!r})")
    rows = _rows(text, model.config.block_size)
    if sum(row.shape[1] for row in rows) < 2:
        raise ValueError("text must have at least two bytes: one to read and one to predict")
    shifted = [_text_loss(model, rows, r, float(c)) for r, c in zip(readers, shifts, strict=True)]
    return ShiftResponse(_text_loss(model, rows), np.array(shifted), shifts)


@dataclass(frozen=True)
class ShippedReading:
    """One shipped checkpoint read on one text: its stream, its shift response (each layer
    shifted by the stream's own RMS there) and the config stored in the checkpoint."""

    norm: str
    seed: int
    readings: ActivationReadings
    shift: ShiftResponse
    config: dict[str, Any]


def shipped_path(norm: str, seed: int) -> Path:
    """The shipped checkpoint of ``norm`` trained from ``seed``."""
    if norm not in SHIPPED_NORMS or seed not in SHIPPED_SEEDS:
        raise ValueError(f"no shipped checkpoint for norm {norm!r} and seed {seed!r}")
    return SHIPPED_DIR / f"{norm}-seed{seed}.safetensors"


@lru_cache(maxsize=len(TEXTS))
def read_shipped(text: str = DEFAULT_TEXT) -> tuple[ShippedReading, ...]:
    """Every shipped checkpoint (``SHIPPED_NORMS`` x ``SHIPPED_SEEDS``, norm-major) read on
    ``text``. Each call loads its own models, so two callers never share a hooked module; the
    result is cached per text (treat its arrays as read-only)."""
    from labs.training.store import load_checkpoint

    out = []
    with _READ_LOCK, torch_threads(READ_THREADS):
        for norm in SHIPPED_NORMS:
            for seed in SHIPPED_SEEDS:
                model, config = load_checkpoint(shipped_path(norm, seed))
                readings = read_activations(model, text)
                shift = shift_response(model, text, readings.rms)
                out.append(ShippedReading(norm, seed, readings, shift, config))
    return tuple(out)
