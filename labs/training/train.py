r"""Training the variants of ``labs.training.model`` on ``labs.training.corpus``.

A run is deterministic on a given machine and thread count: ``TrainConfig.seed`` is split by
``numpy.random.SeedSequence`` into a seed for the initial weights and one for the batch order,
so variants with the same seed start from the same weights and see the same batches. AdamW with
nanoGPT's schedule; weight decay on matrices only. The norm's share of a forward pass is the
time with and without its norms (``labs.training.model.norms_bypassed``).

Two caps stop a run early and keep what it reached: ``max_seconds`` (wall clock) and ``max_work``,
in token-parameters (a step of b sequences of t bytes costs b t P whatever the machine's speed).
``train_together`` advances several runs step by step in turn, so load falls on each alike."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from labs.training.corpus import Corpus, load_corpus
from labs.training.model import GPT, ModelConfig, curve_params, norms_bypassed, probe, qk_clip

STOP_REASONS = ("steps", "wall_clock", "work", "callback")
# Validation windows are scored this many at a time, always, so that a loss recomputed from a
# checkpoint sums in the same order as during training.
EVAL_CHUNK = 64


@dataclass(frozen=True)
class TrainConfig:
    """Everything a run depends on besides the machine. ``None`` caps mean no cap."""

    model: ModelConfig = field(default_factory=ModelConfig)
    steps: int = 500
    batch_size: int = 16
    lr: float = 3e-3
    min_lr: float = 3e-4
    warmup: int = 50
    weight_decay: float = 0.1
    # nanoGPT's shakespeare_char settings: beta2 0.99 because each batch holds few tokens.
    betas: tuple[float, float] = (0.9, 0.99)
    grad_clip: float = 1.0
    eval_every: int = 50
    eval_windows: int = 128
    timing_repeats: int = 10
    seed: int = 0
    max_seconds: float | None = None
    max_work: float | None = None
    tau: float = 100.0  # QK-Clip's cap on a head's largest logit (qk_norm="clip"): Kimi K2's
    train_bytes: int | None = None  # the first this many bytes of the training split; None: all

    def __post_init__(self) -> None:
        ints = ("steps", "batch_size", "warmup", "eval_every", "eval_windows", "timing_repeats")
        for name in ints:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an integer >= 0 (got {value!r})")
        if self.batch_size < 1 or self.eval_every < 1 or self.eval_windows < 1:
            raise ValueError("batch_size, eval_every and eval_windows must be at least 1")
        window, n = self.model.block_size + 1, self.train_bytes
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n <= window):
            raise ValueError(f"train_bytes must be None or an integer > {window} (got {n!r})")
        if not (math.isfinite(self.tau) and self.tau > 0):
            raise ValueError(f"tau must be a finite number > 0 (got {self.tau!r})")
        if not 0 < self.min_lr <= self.lr:
            raise ValueError(f"need 0 < min_lr <= lr (got {self.min_lr}, {self.lr})")
        for name in ("max_seconds", "max_work"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be None or a finite number >= 0 (got {value!r})")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "betas": list(self.betas)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        fields = ModelConfig.__dataclass_fields__
        model = ModelConfig(**{k: v for k, v in data["model"].items() if k in fields})
        rest = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k != "model"}
        return cls(model=model, **{**rest, "betas": tuple(rest.get("betas", cls.betas))})


def stream_seeds(seed: int) -> tuple[int, int]:
    """(initial-weights seed, batch-order seed): two independent streams from one seed."""
    children = np.random.SeedSequence(seed).spawn(2)
    return tuple(int(child.generate_state(1, dtype=np.uint64)[0] >> 1) for child in children)


class Batches:
    """The training batches of one seed, in order: batch i is the same for every variant.

    Each batch is ``batch_size`` windows of ``block_size + 1`` bytes at uniformly drawn
    offsets; inputs are the first ``block_size`` bytes, targets the last (shifted by one)."""

    def __init__(self, data: np.ndarray, batch_size: int, block_size: int, seed: int) -> None:
        if data.size <= block_size + 1:
            raise ValueError(f"the text ({data.size} bytes) is shorter than one window")
        self.data = torch.from_numpy(data.astype(np.int64))
        self.batch_size, self.block_size = batch_size, block_size
        self.generator = torch.Generator().manual_seed(seed)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(inputs, targets), each (batch_size, block_size) int64."""
        high = self.data.numel() - self.block_size  # last start whose window fits, plus one
        starts = torch.randint(high, (self.batch_size,), generator=self.generator)
        chunk = self.data[starts[:, None] + torch.arange(self.block_size + 1)]
        return chunk[:, :-1], chunk[:, 1:]


def val_windows(data: np.ndarray, block_size: int, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` evenly spaced windows of the validation text, the same for every run and seed."""
    starts = np.linspace(0, data.size - block_size - 1, n).round().astype(np.int64)
    chunk = torch.from_numpy(data.astype(np.int64)[starts[:, None] + np.arange(block_size + 1)])
    return chunk[:, :-1], chunk[:, 1:]


@torch.no_grad()
def evaluate(model: GPT, windows: tuple[torch.Tensor, torch.Tensor]) -> float:
    """Mean cross-entropy (nats per byte) over the windows, scored ``EVAL_CHUNK`` at a time."""
    x, y = windows
    total = 0.0
    for i in range(0, x.shape[0], EVAL_CHUNK):
        logits, _ = model(x[i : i + EVAL_CHUNK])
        targets = y[i : i + EVAL_CHUNK].flatten()
        total += float(F.cross_entropy(logits.flatten(0, 1), targets, reduction="sum"))
    return total / y.numel()


def evaluate_probed(
    model: GPT, windows: tuple[torch.Tensor, torch.Tensor]
) -> tuple[float, dict[str, Any]]:
    """``evaluate`` (the same loss, bit for bit) and what ``probe`` read during it:
    ``{"hidden_rms": [L + 1 floats], "max_logit": float}``."""
    with probe(model) as reading:
        loss = evaluate(model, windows)
    return loss, {"hidden_rms": reading.hidden_rms(), "max_logit": reading.max_logit()}


def learning_rate(step: int, config: TrainConfig) -> float:
    r"""Linear warm-up over ``warmup`` steps, then cosine from ``lr`` to ``min_lr`` at ``steps``.

    .. math:: \eta_s = \eta_{min} + \tfrac12 (1 + \cos \pi p)(\eta - \eta_{min}),
        \quad p = \frac{s - s_w}{S - s_w}
    """
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    progress = min(1.0, (step - config.warmup) / max(1, config.steps - config.warmup))
    return config.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (config.lr - config.min_lr)


def make_optimizer(model: GPT, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW; matrices (and embeddings) decay, norm gains and biases do not (as in nanoGPT)."""
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": config.weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=config.lr, betas=config.betas)


def start(config: TrainConfig, corpus: Corpus | None = None) -> tuple[GPT, Any, Batches]:
    """A run's starting point: the seeded model, its optimiser and its batch stream."""
    corpus = corpus or load_corpus()
    init_seed, data_seed = stream_seeds(config.seed)
    model = GPT(config.model, seed=init_seed)
    train_split = corpus.train[: config.train_bytes]
    batches = Batches(train_split, config.batch_size, config.model.block_size, data_seed)
    return model, make_optimizer(model, config), batches


def train_step(
    model: GPT,
    optimizer: Any,
    x: torch.Tensor,
    y: torch.Tensor,
    lr: float,
    grad_clip: float,
    tau: float = math.inf,
) -> float:
    """One AdamW update at learning rate ``lr`` (and QK-Clip at ``tau`` after it, with
    ``qk_norm="clip"``); returns the batch's loss before the update."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    _, loss = model(x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    qk_clip(model, tau)
    return float(loss.detach())


def time_forward(model: GPT, x: torch.Tensor, repeats: int) -> tuple[float, float]:
    """Median seconds of a training-mode forward pass (autograd recording) with the model's
    norms, and with every norm replaced by the identity (same weights); they alternate, each
    first in every other repeat, so that a change in the machine's load touches both alike."""
    times: tuple[list[float], list[float]] = ([], [])  # with the norms, without
    for i in range(repeats + 1):
        for bypass in (i % 2, 1 - i % 2):
            with norms_bypassed(model) if bypass else nullcontext():
                t0 = time.perf_counter()
                model(x)
                seconds = time.perf_counter() - t0
            if i > 0:
                times[bypass].append(seconds)
    return float(np.median(times[0])), float(np.median(times[1]))


@dataclass
class TrainResult:
    """What a run reached. The lists grow while it runs (a callback may read them).

    ``train_loss[i]`` and ``step_seconds[i]`` belong to step i; ``elapsed_seconds[i]`` is the
    training time up to the end of step i (steps only, no validation). ``val_loss[j]`` was measured
    after ``val_steps[j]`` updates (0: the initial weights), and ``val_max_logit[j]`` is the largest
    |q.k| / sqrt(d_head) on those windows then. ``hidden_rms`` (the stream's RMS after the embedding
    and each block) and ``max_logit`` come from the last validation (after ``val_steps[-1]``
    updates: the end, for a run that finished its steps); ``dyt_alpha`` is each DyT or Derf layer's
    alpha at the end, in forward order (None without them), ``derf_shift`` each Derf layer's shift.
    ``stopped_by`` is one of ``STOP_REASONS``, None while running. ``work`` counts token-parameters
    (module docstring). Records written before these readings existed lack their keys."""

    config: TrainConfig
    parameters: int
    train_loss: list[float] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    elapsed_seconds: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    val_max_logit: list[float] = field(default_factory=list)
    work: int = 0
    wall_seconds: float = 0.0
    stopped_by: str | None = None
    forward_seconds: float | None = None
    forward_identity_seconds: float | None = None
    hidden_rms: list[float] | None = None
    max_logit: float | None = None
    dyt_alpha: list[float] | None = None
    derf_shift: list[float] | None = None
    model: Any = field(default=None, repr=False)

    @property
    def steps_done(self) -> int:
        return len(self.train_loss)

    @property
    def norm_share(self) -> float | None:
        """(t_forward - t_forward_without_norms) / t_forward; None when not measured."""
        if self.forward_seconds is None or self.forward_identity_seconds is None:
            return None
        return (self.forward_seconds - self.forward_identity_seconds) / self.forward_seconds

    def curves(self) -> dict[str, Any]:
        """Plain data for JSON: the settings, every curve and the timings."""
        # Not asdict(self): that would deep-copy the model.
        kept = [f.name for f in fields(self) if f.name not in ("model", "config")]
        data = {name: copy.copy(getattr(self, name)) for name in kept}
        head = {"config": self.config.as_dict(), "steps_done": self.steps_done}
        return {**head, **data, "norm_share": self.norm_share}


class _Budget:
    """The two caps. ``spend`` runs a piece of work only if it fits, and times it."""

    def __init__(self, config: TrainConfig, result: TrainResult) -> None:
        self.config, self.result = config, result
        self.started = time.perf_counter()
        self.last: dict[str, float] = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def refuses(self, kind: str, work: int, estimate: float | None = None) -> str | None:
        """Why this piece of work must not start, or None. Its duration is estimated by the
        last piece of the same kind (0 for the first), so a run stops before the cap."""
        cap_work, cap_seconds = self.config.max_work, self.config.max_seconds
        if cap_work is not None and self.result.work + work > cap_work:
            return "work"
        expected = self.last.get(kind, 0.0) if estimate is None else estimate
        if cap_seconds is not None and self.elapsed() + expected > cap_seconds:
            return "wall_clock"
        return None

    def spend(self, kind: str, work: int, fn: Callable[[], Any]) -> tuple[str | None, Any]:
        reason = self.refuses(kind, work)
        if reason is not None:
            return reason, None
        t0 = time.perf_counter()
        value = fn()
        self.last[kind] = time.perf_counter() - t0
        self.result.work += work
        return None, value


def train(
    config: TrainConfig,
    *,
    callback: Callable[[TrainResult], bool | None] | None = None,
    corpus: Corpus | None = None,
) -> TrainResult:
    """Train one run; stop at ``config.steps``, at a cap, or when ``callback`` returns False.

    ``callback(result)`` is called after every step and validation with the growing result.
    The returned result holds the trained model in ``result.model``."""
    run = _Run(config, corpus or load_corpus())
    while run.advance():
        if callback is not None and callback(run.result) is False:
            run.stop("callback")
    return run.finish()


def train_together(
    configs: Sequence[TrainConfig],
    *,
    callback: Callable[[list[TrainResult]], bool | None] | None = None,
    corpus: Corpus | None = None,
) -> list[TrainResult]:
    """Train several runs step by step in turn: each run's step s, then s + 1 (``_round``).

    Each run is the same as ``train(config)`` alone (its own seeded weights and batches, its own
    caps), but a change in the machine's load falls on every run alike, which makes their step
    times comparable. The wall-clock caps count from the common start, and the first run the
    clock stops stops the others (they end at most one step apart). ``callback(results)`` is
    called after each round; False stops every run."""
    corpus = corpus or load_corpus()
    runs = [_Run(config, corpus) for config in configs]
    active, rounds = list(runs), 0
    while active:
        active, rounds = _round(active, rounds), rounds + 1
        if callback is not None and callback([run.result for run in runs]) is False:
            for run in active:
                run.stop("callback")
            active = []
    return [run.finish() for run in runs]


def _round(active: list[_Run], first: int) -> list[_Run]:
    """One piece of each run from the ``first``-th on, so that each goes first as often (and pays
    alike for what ran between rounds); the runs still going. The wall clock stops all at once."""
    k = first % len(active)
    for run in active[k:] + active[:k]:
        if not run.advance() and run.result.stopped_by == "wall_clock":
            for other in active:
                other.stop("wall_clock")
            return []
    return [run for run in active if run.result.stopped_by is None]


class _Run:
    """One run in progress: ``advance`` does its next piece of work (a validation or a step)."""

    def __init__(self, config: TrainConfig, corpus: Corpus) -> None:
        model, optimizer, batches = start(config, corpus)
        self.model, self.batches = model, batches
        self.result = TrainResult(config=config, parameters=model.num_params(), model=model)
        self.budget = _Budget(config, self.result)
        self.pieces = _pieces(model, optimizer, batches, corpus, self.budget)

    def advance(self) -> bool:
        """Do the next piece; False once the run has stopped (``result.stopped_by`` says why)."""
        if self.result.stopped_by is not None:
            return False
        try:
            next(self.pieces)
        except StopIteration as stop:
            self.result.stopped_by = stop.value
            return False
        return True

    def stop(self, reason: str) -> None:
        if self.result.stopped_by is None:
            self.result.stopped_by = reason
        self.pieces.close()

    def finish(self) -> TrainResult:
        """After the last piece: the norm's share of a forward pass (a completed run only)."""
        if self.result.stopped_by == "steps":
            _measure_norm_share(self.model, self.batches, self.budget)
        self.result.wall_seconds = self.budget.elapsed()
        self.result.dyt_alpha = curve_params(self.model)
        self.result.derf_shift = curve_params(self.model, "shift")
        return self.result


def _pieces(model, optimizer, batches, corpus, budget) -> Iterator[None]:
    """The validations and steps of a run, one per ``next``; returns why it stopped."""
    config, result = budget.config, budget.result
    tokens = config.batch_size * config.model.block_size
    windows = val_windows(corpus.val, config.model.block_size, config.eval_windows)
    eval_work = windows[1].numel() * result.parameters
    for step in range(config.steps + 1):
        if step % config.eval_every == 0 or step == config.steps:
            reason, read = budget.spend("eval", eval_work, lambda: evaluate_probed(model, windows))
            if reason is not None:
                return reason
            result.val_steps.append(step)
            result.val_loss.append(read[0])
            result.val_max_logit.append(read[1]["max_logit"])
            result.hidden_rms, result.max_logit = read[1]["hidden_rms"], read[1]["max_logit"]
            yield
        if step == config.steps:
            return "steps"
        lr = learning_rate(step, config)
        step_fn = partial(_step_on_next_batch, model, optimizer, batches, lr, config)
        reason, loss = budget.spend("step", tokens * result.parameters, step_fn)
        if reason is not None:
            return reason
        result.train_loss.append(loss)
        result.step_seconds.append(budget.last["step"])
        previous = result.elapsed_seconds[-1] if result.elapsed_seconds else 0.0
        result.elapsed_seconds.append(previous + budget.last["step"])
        yield
    return "steps"


def _step_on_next_batch(model, optimizer, batches, lr, config) -> float:
    """Draw the next batch only when the step runs, so a refused step leaves the order intact."""
    return train_step(model, optimizer, *batches.next(), lr, config.grad_clip, config.tau)


def _measure_norm_share(model: GPT, batches: Batches, budget: _Budget) -> None:
    """``time_forward`` on one more batch, if the caps leave room for it (a forward pass takes
    about a third of a step; twice that is the estimate, to stay under the cap)."""
    repeats = budget.config.timing_repeats
    if repeats == 0:
        return
    x, _ = batches.next()
    passes = 2 * (repeats + 1)
    estimate = passes * budget.last.get("step", 0.0) * 2 / 3
    if budget.refuses("timing", passes * x.numel() * budget.result.parameters, estimate):
        return
    result = budget.result
    result.forward_seconds, result.forward_identity_seconds = time_forward(model, x, repeats)
    result.work += passes * x.numel() * result.parameters
