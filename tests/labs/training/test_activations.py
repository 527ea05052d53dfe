"""labs.training.activations: the hooked readings against a manual forward pass, on the shipped
checkpoints and on a small model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from core.stats import batch_vector_stats
from labs.training.activations import (
    DEFAULT_TEXT,
    SHIPPED_DIR,
    SHIPPED_NORMS,
    SHIPPED_SEEDS,
    TEXTS,
    read_activations,
    read_shipped,
    shift_response,
    shipped_path,
    stream_stats,
)
from labs.training.corpus import encode
from labs.training.model import GPT, NORM_KINDS, ModelConfig
from labs.training.runs import CHECKPOINT_NORMS, REFERENCE_DIR, REFERENCE_SEEDS, checkpoint_path

ROOT = Path(__file__).resolve().parents[3]
SMALL = ModelConfig(norm="rms", n_layer=3, n_head=2, n_embd=16, block_size=32)


def manual_streams(model: GPT, text: str) -> list[np.ndarray]:
    """The residual stream written out block by block, without hooks: L + 1 arrays (n, d)."""
    ids = torch.from_numpy(encode(text).astype(np.int64))
    t = model.config.block_size
    per_layer: list[list[np.ndarray]] = [[] for _ in range(model.config.n_layer + 1)]
    with torch.no_grad():
        for start in range(0, ids.numel(), t):
            row = ids[start : start + t][None, :]
            x = model.wte(row) + model.wpe(torch.arange(row.shape[1]))
            per_layer[0].append(x[0].double().numpy())
            for i, block in enumerate(model.blocks):
                x = x + block.attn(block.ln_1(x))
                x = x + block.mlp(block.ln_2(x))
                per_layer[i + 1].append(x[0].double().numpy())
    return [np.concatenate(parts) for parts in per_layer]


def expected_readings(h: np.ndarray, k: int) -> dict:
    """The readings from core.stats's per-vector statistics and a plain sort."""
    stats = batch_vector_stats(h)
    magnitude = np.abs(h).mean(axis=0)
    dims = np.argsort(magnitude)[::-1][:k]
    return {
        "mean": stats["mean"].mean(),
        "cos_ones": stats["cos_ones"].mean(),
        "mean_share": (stats["mean"] ** 2 / stats["second_moment"]).mean(),
        "rms": stats["rms"].mean(),
        "dims": dims,
        "ratio": magnitude.max() / np.median(magnitude),
    }


def check_against_manual(model: GPT, text: str, k: int) -> None:
    readings = read_activations(model, text, outliers=k)
    streams = manual_streams(model, text)
    assert readings.layers.tolist() == list(range(model.config.n_layer + 1))
    assert readings.tokens == len(text.encode("utf-8")) == streams[0].shape[0]
    for layer, h in enumerate(streams):
        want = expected_readings(h, k)
        for key in ("mean", "cos_ones", "mean_share", "rms"):
            np.testing.assert_allclose(getattr(readings, key)[layer], want[key], rtol=1e-12)
        np.testing.assert_array_equal(readings.outlier_dims[layer], want["dims"])
        np.testing.assert_allclose(
            readings.outlier_magnitude[layer], np.abs(h).mean(0)[want["dims"]], rtol=1e-12
        )
        np.testing.assert_allclose(readings.outlier_ratio[layer], want["ratio"], rtol=1e-12)
        np.testing.assert_allclose(readings.magnitude[layer], np.abs(h).mean(0), rtol=1e-12)


@pytest.mark.parametrize("norm", NORM_KINDS)
def test_hook_readings_match_a_manual_forward_pass(norm: str) -> None:
    model = GPT(ModelConfig(**{**SMALL.__dict__, "norm": norm}), seed=1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(2)))
    # Two full rows and a short one, with a two-byte character.
    check_against_manual(model, "x" * 40 + " naïve " + DEFAULT_TEXT[:20], k=3)


@pytest.mark.parametrize("norm", CHECKPOINT_NORMS)
def test_readings_on_the_shipped_checkpoints(norm: str) -> None:
    path = checkpoint_path(norm, REFERENCE_SEEDS[0])
    readings = read_activations(path)
    assert readings.checkpoint == path.name and readings.norm == norm
    assert readings.text == DEFAULT_TEXT
    from labs.training.store import load_checkpoint

    model, _ = load_checkpoint(path)
    check_against_manual(model, DEFAULT_TEXT, k=4)
    # Token by token the share of RMS^2 that is mean^2 is cos^2, so its mean bounds mean(cos)^2.
    assert np.all(readings.mean_share >= readings.cos_ones**2 - 1e-12)
    assert np.all((readings.mean_share >= 0) & (readings.mean_share <= 1))
    assert np.all(np.diff(readings.outlier_magnitude, axis=1) <= 0)


def test_stream_stats_of_a_pure_offset_and_a_zero_vector() -> None:
    h = np.vstack([np.full(8, 2.0), np.zeros(8)])
    stats = stream_stats(h, 2)
    assert stats["mean"] == pytest.approx(1.0)
    assert stats["cos_ones"] == pytest.approx(0.5)  # 1 for the offset row, 0 for the zero row
    assert stats["mean_share"] == pytest.approx(0.5)
    assert stats["rms"] == pytest.approx(1.0)


def test_bad_input_is_refused() -> None:
    model = GPT(SMALL, seed=0)
    with pytest.raises(ValueError, match="empty"):
        read_activations(model, "")
    with pytest.raises(ValueError, match="outliers"):
        read_activations(model, "abc", outliers=0)
    with pytest.raises(ValueError, match="outliers"):
        read_activations(model, "abc", outliers=SMALL.n_embd + 1)


def test_readings_module_and_corpus_import_without_torch() -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import core, labs.training.activations, labs.training.corpus, labs.training.store\n"
        "print(labs.training.corpus.load_corpus().val.size > 0,"
        " labs.training.activations.OUTLIERS)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "4"]


def manual_loss(model: GPT, text: str, at: int | None = None, c: float = 0.0) -> float:
    """Next-byte cross-entropy over the text, written out block by block; with ``at``, the
    stream entering block ``at`` (the final norm when ``at`` = L) gets ``+ c`` everywhere."""
    ids = torch.from_numpy(encode(text).astype(np.int64))
    t, n_layer = model.config.block_size, model.config.n_layer
    logits = []
    with torch.no_grad():
        for start in range(0, ids.numel(), t):
            row = ids[start : start + t][None, :]
            x = model.wte(row) + model.wpe(torch.arange(row.shape[1]))
            for i, block in enumerate(model.blocks):
                x = x + c if i == at else x
                x = x + block.attn(block.ln_1(x))
                x = x + block.mlp(block.ln_2(x))
            x = x + c if at == n_layer else x
            logits.append(model.lm_head(model.ln_f(x))[0])
    return float(F.cross_entropy(torch.cat(logits)[:-1].double(), ids[1:]))


def small_trained_model(norm: str) -> GPT:
    """A small model whose gains and biases are no longer ones and zeros."""
    model = GPT(ModelConfig(**{**SMALL.__dict__, "norm": norm}), seed=3)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.3 * torch.randn(p.shape, generator=torch.Generator().manual_seed(4)))
    return model


@pytest.mark.parametrize("norm", NORM_KINDS)
def test_shift_response_matches_a_manual_forward_pass(norm: str) -> None:
    model = small_trained_model(norm)
    text = "x" * 40 + " naïve " + DEFAULT_TEXT[:20]  # two full rows and a short one
    shifts = np.array([0.5, -1.0, 2.0, 0.25])
    response = shift_response(model, text, shifts)
    np.testing.assert_allclose(response.loss, manual_loss(model, text), rtol=1e-12)
    want = [manual_loss(model, text, at, c) for at, c in enumerate(shifts)]
    np.testing.assert_allclose(response.shifted_loss, want, rtol=1e-6)
    np.testing.assert_array_equal(response.shift, shifts)
    change = np.abs(response.shifted_loss - response.loss)
    if norm == "layer":
        # Every read of the stream is a LayerNorm: a common offset changes nothing but rounding.
        assert np.max(change) <= 1e-5
    else:
        assert np.min(change) > 1e-4


def test_shift_response_without_a_final_norm_shifts_what_the_head_reads() -> None:
    """Post-norm has no final norm: the last block's output goes to the output head, which is
    then the reader of h_L."""
    config = ModelConfig(**{**SMALL.__dict__, "norm": "dyt", "placement": "post"})
    model = GPT(config, seed=3)
    assert model.ln_f is None
    text = "x" * 40 + DEFAULT_TEXT[:20]
    ids = torch.from_numpy(encode(text).astype(np.int64))
    shifts = np.array([0.5, -1.0, 2.0, 0.25])

    def post_loss(at: int | None, c: float) -> float:
        logits = []
        with torch.no_grad():
            for start in range(0, ids.numel(), config.block_size):
                row = ids[start : start + config.block_size][None, :]
                x = model.wte(row) + model.wpe(torch.arange(row.shape[1]))
                for i, block in enumerate(model.blocks):
                    x = x + c if i == at else x
                    x = block.ln_1(x + block.attn(x))
                    x = block.ln_2(x + block.mlp(x))
                x = x + c if at == config.n_layer else x
                logits.append(model.lm_head(x)[0])
        return float(F.cross_entropy(torch.cat(logits)[:-1].double(), ids[1:]))

    response = shift_response(model, text, shifts)
    np.testing.assert_allclose(response.loss, post_loss(None, 0.0), rtol=1e-12)
    want = [post_loss(at, c) for at, c in enumerate(shifts)]
    np.testing.assert_allclose(response.shifted_loss, want, rtol=1e-6)


def test_shift_response_refuses_bad_input() -> None:
    model = GPT(SMALL, seed=0)
    with pytest.raises(ValueError, match="shifts"):
        shift_response(model, "abc", [1.0, 1.0])
    with pytest.raises(ValueError, match="shifts"):
        shift_response(model, "abc", [1.0, np.nan, 1.0, 1.0])
    with pytest.raises(ValueError, match="two bytes"):
        shift_response(model, "a", [0.0] * 4)


def test_shipped_checkpoints_are_the_reference_runs() -> None:
    assert SHIPPED_DIR == REFERENCE_DIR
    assert SHIPPED_SEEDS == tuple(REFERENCE_SEEDS)
    # The residual page reads the norms' and the no-norm checkpoints of the shipped set.
    assert set(SHIPPED_NORMS) <= set(CHECKPOINT_NORMS)
    for norm in SHIPPED_NORMS:
        for seed in SHIPPED_SEEDS:
            assert shipped_path(norm, seed) == checkpoint_path(norm, seed)
    with pytest.raises(ValueError, match="no shipped checkpoint"):
        shipped_path("rms", 3)
    with pytest.raises(ValueError, match="no shipped checkpoint"):
        shipped_path("batch", 0)


def test_read_shipped_reads_every_checkpoint_once_per_text() -> None:
    from labs.training.store import load_checkpoint

    runs = read_shipped(TEXTS["code"])
    assert [(r.norm, r.seed) for r in runs] == [
        (n, s) for n in SHIPPED_NORMS for s in SHIPPED_SEEDS
    ]
    assert read_shipped(TEXTS["code"]) is runs  # cached
    for run in runs[:: len(SHIPPED_SEEDS)]:  # one seed of each norm, against a fresh reading
        model, config = load_checkpoint(shipped_path(run.norm, run.seed))
        again = read_activations(model, TEXTS["code"])
        np.testing.assert_array_equal(run.readings.mean, again.mean)
        np.testing.assert_array_equal(run.readings.magnitude, again.magnitude)
        np.testing.assert_array_equal(run.shift.shift, again.rms)  # shifted by the stream's RMS
        assert run.config == config and run.readings.norm == run.norm
        want = [manual_loss(model, TEXTS["code"], at, c) for at, c in enumerate(again.rms)]
        np.testing.assert_allclose(run.shift.shifted_loss, want, rtol=1e-6)


def test_texts_are_distinct_and_fit_the_models() -> None:
    assert TEXTS["docs"] == DEFAULT_TEXT
    assert len(set(TEXTS.values())) == len(TEXTS)
    for text in TEXTS.values():
        assert 100 <= len(text.encode("utf-8")) <= 400  # a few rows of 64 bytes each
