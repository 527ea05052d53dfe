"""The residual page's sentences, rechecked on a trunk rebuilt with torch.nn.functional, and on
the shipped checkpoints run through a forward pass written here.

Synthetic mode: the draws follow the page's documented recipe (``h_0`` from
``default_rng([seed, 0])``, block l's weight from ``default_rng([seed, 1, l])`` in float32,
scaled by 1/sqrt(d)); the norms are ``F.rms_norm`` and ``F.layer_norm`` in float64.

Trained mode: each checkpoint's tensors are read with ``safetensors`` and its config from the
JSON beside it, and the model is run in float64 by ``gpt_forward`` below (embeddings, causal
attention with an explicit mask and softmax, GELU MLP, the norms from torch.nn.functional),
not by ``labs.training.model`` or ``labs.training.activations``. Nothing below calls
``labs.residual.model`` or ``labs.residual.trained`` except ``view``.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st
from safetensors.torch import load_file

from core.defaults import EPS_LADDER, MIN_WIDTH, ladder_upto
from labkit.claims import Claim
from labs.residual.model import (
    DRIFT_LIMIT,
    MAX_LAYERS,
    STREAM_MAX_WIDTH,
    TOKENS,
    residual_view,
)
from labs.residual.trained import trained_view
from labs.training.activations import TEXTS
from tests.claims.oracle import (
    FLAT_ENDINGS,
    check_pair_words,
    check_peak_words,
    check_series_words,
    cosines,
    pair_keys,
    token_cosine,
    trunk,
    ulps,
)

# The page's line between rounding and a reading (its sentences quote it).
TOL = 1e-9
PAGE_EPS = ladder_upto(EPS_LADDER, 1.0)

_SEEDS = st.one_of(st.sampled_from((0, 2**31 - 1)), st.integers(0, 2**31 - 1))
_ANY = st.fixed_dictionaries(
    {
        "mode": st.just("synthetic"),
        "layers": st.one_of(st.sampled_from((1, MAX_LAYERS)), st.integers(1, 24)),
        "d": st.one_of(st.sampled_from((MIN_WIDTH, 3, STREAM_MAX_WIDTH)), st.integers(2, 200)),
        "drift": st.one_of(
            st.sampled_from((-DRIFT_LIMIT, 0.0, DRIFT_LIMIT)), st.floats(-DRIFT_LIMIT, DRIFT_LIMIT)
        ),
        "seed": _SEEDS,
        "eps": st.sampled_from(PAGE_EPS),
    }
)
# The corners: every combination of the extremes a link can reach.
_CORNERS = st.fixed_dictionaries(
    {
        "mode": st.just("synthetic"),
        "layers": st.sampled_from((1, MAX_LAYERS)),
        "d": st.sampled_from((MIN_WIDTH, STREAM_MAX_WIDTH)),
        "drift": st.sampled_from((-DRIFT_LIMIT, 0.0, DRIFT_LIMIT)),
        "seed": _SEEDS,
        "eps": st.sampled_from((0.0, PAGE_EPS[-1])),
    }
)
SYNTHETIC = st.one_of(_ANY, _CORNERS)
# Every state the trained mode can reach: the shipped seeds and the page's texts.
CHECKPOINTS = Path(__file__).resolve().parents[2] / "assets" / "train"
SEEDS = (0, 1, 2)
PROMPTS = ("docs", "docs_id", "code")
TRAINED = st.fixed_dictionaries(
    {"mode": st.just("trained"), "seed": st.sampled_from(SEEDS), "text": st.sampled_from(PROMPTS)}
)
STATES = st.one_of(SYNTHETIC, TRAINED)


def view(state: dict):
    args = {k: v for k, v in state.items() if k != "mode"}
    return trained_view(**args) if state["mode"] == "trained" else residual_view(**args)


def run(state: dict) -> dict:
    return trunk(state["layers"], state["d"], state["drift"], state["seed"], state["eps"])


def near(shown: float, value: float, magnitude: float = 1.0, rtol: float = 1e-7) -> None:
    """``shown`` within ``rtol`` of ``value``, or within the float64 rounding that L blocks of
    numpy and torch may part by at ``magnitude``, the size of the operands (1 for a cosine or a
    share, the stream's RMS for its mean)."""
    assert abs(shown - value) <= rtol * abs(value) + ulps(2**16, magnitude), (shown, value)


def stream_rms(h: np.ndarray) -> float:
    return float(np.linalg.norm(h) / math.sqrt(h.size))


def check_offset(state: dict, claim: Claim) -> None:
    t = run(state)
    for n in ("rms", "layer"):
        h = t[n]["h"][-1]
        near(claim.fields[f"offset_{n}"], math.fsum(h.ravel()) / h.size, stream_rms(h))
    near(claim.fields["total"], math.fsum([state["drift"]] * state["layers"]), rtol=0.0)
    assert claim.fields["layers"] == state["layers"]


def check_length(state: dict, claim: Claim) -> None:
    t, d = run(state), state["d"]
    lengths = {n: float(np.mean(np.linalg.norm(t[n]["z"][-1], axis=-1))) for n in ("rms", "layer")}
    near(claim.fields["len_rms"], lengths["rms"], math.sqrt(d))
    near(claim.fields["len_layer"], lengths["layer"], math.sqrt(d))
    near(claim.fields["sqrt_d"], math.sqrt(d), rtol=0.0)
    at_sqrt_d = all(abs(v - math.sqrt(d)) <= 1e-3 * math.sqrt(d) for v in lengths.values())
    assert at_sqrt_d == (claim.key == "residual.length_sqrt_d")
    if not at_sqrt_d:
        assert state["eps"] > 0  # with eps = 0 both lengths are sqrt(d)
        assert all(v < math.sqrt(d) for v in lengths.values())


def check_layer(state: dict, claim: Claim) -> None:
    t, d = run(state)["layer"], state["d"]
    per_token = cosines(t["z"], np.ones(d))  # (L+1, n)
    # Any token at any layer, not only the mean; a token LayerNorm maps to 0 (its coordinates
    # equal, at d = 2 after a long drift) has no cosine, and the page leaves it out.
    defined = np.isfinite(per_token)
    worst = float(np.max(np.abs(per_token[defined]), initial=0.0))
    # Rounding-level cosines differ between implementations by about their own size: ulps of 1
    # (a cosine's scale) times what centring costs, |mean(h)| / std(h) of the token it centres.
    h = t["h"]
    mean = np.sum(h, axis=-1) / d
    spread = np.linalg.norm(h - mean[..., None], axis=-1) / math.sqrt(d)
    with np.errstate(divide="ignore"):  # a token whose coordinates are equal has no spread
        centring = 1.0 + np.abs(mean) / spread  # (L+1, n)
    near(claim.fields["worst"], worst, float(np.max(centring[defined], initial=1.0)))
    near(claim.fields["cos_layer"], np.mean(per_token[-1]), float(np.max(centring[-1])))
    orthogonal = worst <= 1e-6
    if abs(worst - 1e-6) > ulps(2**16, float(np.max(centring))):  # either is fair at the line
        assert orthogonal == (claim.key == "residual.explain_layer")


def check_rms(state: dict, claim: Claim) -> None:
    t, d = run(state)["rms"], state["d"]
    cos_z, cos_h = cosines(t["z"], np.ones(d)), cosines(t["h"], np.ones(d))  # (L+1, n)
    kept = float(np.max(np.abs(np.mean(cos_z, axis=-1) - np.mean(cos_h, axis=-1))))
    assert (kept <= TOL) == (claim.key == "residual.explain_rms")
    near(claim.fields["cos_rms"], np.mean(cos_z[-1]))
    near(claim.fields["share_rms"], np.mean(cos_z[-1] ** 2))


def share_along(p: np.ndarray, w1: np.ndarray) -> float:
    return float(np.mean(cosines(p, w1) ** 2))


def check_share(state: dict, claim: Claim) -> None:
    t, d = run(state), state["d"]
    out = {n: share_along(t[n]["p"][-1], t["w1"][-1]) for n in ("rms", "layer")}
    near(claim.fields["out_rms"], out["rms"])
    near(claim.fields["out_layer"], out["layer"])
    near(claim.fields["random"], 1 / d, rtol=0.0)
    assert (out["rms"] >= 10 / d) == (claim.key == "residual.share_above_chance")


def check_tokens(state: dict, claim: Claim) -> None:
    t = run(state)
    rms, layer = token_cosine(t["rms"]["p"][-1]), token_cosine(t["layer"]["p"][-1])
    near(claim.fields["tok_rms"], rms)
    near(claim.fields["tok_layer"], layer)
    key = {1: "residual.tokens_rms_alike", -1: "residual.tokens_layer_alike"}
    gap = rms - layer
    expected = key.get(int(np.sign(gap)) if abs(gap) >= 0.1 else 0, "residual.tokens_both")
    assert claim.key == expected, (claim.key, rms, layer)


def check_swap(state: dict, claim: Claim) -> None:
    t = run(state)
    h_rms, h_layer = t["rms"]["h"][-1], t["layer"]["h"][-1]
    gap = np.linalg.norm(h_rms - h_layer) / np.linalg.norm(h_layer)
    m_rms, m_layer = np.mean(h_rms), np.mean(h_layer)
    larger = max(abs(m_rms), abs(m_layer))
    offset_gap = abs(m_rms - m_layer) / larger
    scale = max(stream_rms(h_rms), stream_rms(h_layer))
    near(claim.fields["gap_pct"], gap)
    near(claim.fields["offset_gap_pct"], offset_gap, scale / larger)
    near(claim.fields["offset_rms"], m_rms, scale)
    near(claim.fields["offset_layer"], m_layer, scale)
    assert gap > 0  # the sentence says the streams differ
    assert (offset_gap <= gap) == (claim.key == "residual.explain_swap")


def check_table(state: dict, claim: Claim) -> None:
    assert claim.fields["n"] == TOKENS and claim.fields["layers"] == state["layers"]
    near(claim.fields["random"], 1 / state["d"], rtol=0.0)


# --- Trained mode: the shipped checkpoints, run by a forward pass written here ----------------

NORMS = ("rms", "layer", "none")
# The float32 forward pass the page reads differs from this float64 one by rounding: relative
# to the number, or some float32 ulps of the operands it is read from.
READ_RTOL, READ_ULPS = 1e-4, 8


def load(norm: str, seed: int) -> tuple[dict, dict]:
    """A checkpoint's tensors in float64 and its JSON config."""
    path = CHECKPOINTS / f"{norm}-seed{seed}.safetensors"
    tensors = {k: v.double() for k, v in load_file(str(path)).items()}
    return tensors, json.loads(path.with_suffix(".json").read_text())


def norm_layer(w: dict, cfg: dict, prefix: str, x: torch.Tensor) -> torch.Tensor:
    kind, d, eps = cfg["norm"], cfg["n_embd"], cfg["eps"]
    if kind == "layer":
        return F.layer_norm(x, (d,), w[f"{prefix}.weight"], w[f"{prefix}.bias"], eps)
    if kind == "rms":
        return F.rms_norm(x, (d,), w[f"{prefix}.weight"], eps)
    return x


def attention(w: dict, cfg: dict, prefix: str, x: torch.Tensor) -> torch.Tensor:
    """Causal multi-head self-attention of one row x (t, d), softmax written out."""
    t, d, heads = x.shape[0], cfg["n_embd"], cfg["n_head"]
    q, k, v = (x @ w[f"{prefix}.c_attn.weight"].T).split(d, dim=-1)
    q, k, v = (z.reshape(t, heads, d // heads).transpose(0, 1) for z in (q, k, v))
    scores = q @ k.transpose(1, 2) / math.sqrt(d // heads)  # (heads, t, t)
    future = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    weights = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1)
    y = (weights @ v).transpose(0, 1).reshape(t, d)
    return y @ w[f"{prefix}.c_proj.weight"].T


def gpt_forward(w: dict, cfg: dict, ids: torch.Tensor, shift: torch.Tensor | None = None, at=-1):
    """One row of byte ids (t,): the streams h_0..h_L (each (t, d)) and the logits (t, vocab).
    With ``shift``, h_at gets ``+ shift`` (a scalar tensor) before it is read."""
    x = w["wte.weight"][ids] + w["wpe.weight"][: ids.numel()]
    streams = []
    for layer in range(cfg["n_layer"] + 1):
        if layer == at:
            x = x + shift
        streams.append(x)
        if layer == cfg["n_layer"]:
            break
        block = f"blocks.{layer}"
        x = x + attention(w, cfg, f"{block}.attn", norm_layer(w, cfg, f"{block}.ln_1", x))
        hidden = F.gelu(norm_layer(w, cfg, f"{block}.ln_2", x) @ w[f"{block}.mlp.c_fc.weight"].T)
        x = x + hidden @ w[f"{block}.mlp.c_proj.weight"].T
    return streams, norm_layer(w, cfg, "ln_f", x) @ w["lm_head.weight"].T


def text_loss(w: dict, cfg: dict, ids: torch.Tensor, shift=None, at=-1):
    """Mean next-byte cross-entropy over the text, cut into rows of the block size, and the
    streams (each (N, d)) of the whole text."""
    rows = ids.split(cfg["block_size"])
    runs = [gpt_forward(w, cfg, row, shift, at) for row in rows]
    logits = torch.cat([r[1] for r in runs])
    streams = [torch.cat([r[0][i] for r in runs]) for i in range(cfg["n_layer"] + 1)]
    return F.cross_entropy(logits[:-1], ids[1:]), streams


@lru_cache(maxsize=len(PROMPTS))
def shipped(prompt: str) -> dict:
    """Per (norm, seed): the readings of every h_l, the loss, and the loss with h_l shifted by
    its own RMS along 1, with d loss / d c at c = 0 (autograd)."""
    ids = torch.tensor(list(TEXTS[prompt].encode("utf-8")), dtype=torch.long)
    # Matrices of width 48: on a shared machine a second thread makes every product wait for
    # it (3 s on one thread, over 100 s on two while other jobs held both cores).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _shipped(ids)
    finally:
        torch.set_num_threads(threads)


def _shipped(ids: torch.Tensor) -> dict:
    out = {}
    for norm in NORMS:
        for seed in SEEDS:
            w, config = load(norm, seed)
            cfg = config["model"]
            with torch.no_grad():
                loss, streams = text_loss(w, cfg, ids)
            h = [s.numpy() for s in streams]
            mu = np.array([x.mean(axis=1) for x in h])  # (L + 1, N)
            rms = np.array([np.sqrt((x**2).mean(axis=1)) for x in h])
            magnitude = np.array([np.abs(x).mean(axis=0) for x in h])  # (L + 1, d)
            shifted, slope = [], []
            for layer in range(cfg["n_layer"] + 1):
                c = torch.tensor(float(rms[layer].mean()), dtype=torch.float64)
                with torch.no_grad():
                    shifted.append(float(text_loss(w, cfg, ids, c, layer)[0]))
                zero = torch.zeros((), dtype=torch.float64, requires_grad=True)
                (grad,) = torch.autograd.grad(text_loss(w, cfg, ids, zero, layer)[0], zero)
                slope.append(float(grad))
            out[norm, seed] = {
                "config": config,
                "tokens": ids.numel(),
                "mean": mu.mean(axis=1),
                "rms": rms.mean(axis=1),
                "cos": (mu / rms).mean(axis=1),
                "share": (mu**2 / rms**2).mean(axis=1),
                "magnitude": magnitude,
                "ratio": magnitude.max(axis=1) / np.median(magnitude, axis=1),
                "loss": float(loss),
                "change": np.array(shifted) - float(loss),
                "slope": np.array(slope),
            }
    return out


def models(state: dict) -> dict:
    return {n: shipped(state["text"])[n, state["seed"]] for n in NORMS}


def close(shown: float, value: float, magnitude: float = 1.0) -> None:
    """A float32 reading against the float64 one; ``magnitude``: the operands' size (1 for a
    cosine or a share)."""
    tol = READ_RTOL * abs(value) + ulps(READ_ULPS, magnitude, "float32")
    assert abs(shown - value) <= tol, (shown, value)


def trained_model(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    configs = {n: m[n]["config"] for n in NORMS}
    arch = configs["rms"]["model"]
    assert (f["layers"], f["d"], f["seed"]) == (arch["n_layer"], arch["n_embd"], state["seed"])
    for n in NORMS:
        assert f[f"val_{n}"] == configs[n]["training"]["final_val_loss"]
        assert configs[n]["model"]["norm"] == n
        assert configs[n]["training"]["steps_done"] == f["steps"]
        assert configs[n]["data"] == configs["rms"]["data"]  # the same data
        # Everything but the norm and the loss it reached is the same: architecture, seeds of
        # the initial weights and of the data order, optimiser settings.
        same = ("n_layer", "n_head", "n_embd", "block_size", "vocab_size", "eps")
        assert all(configs[n]["model"][k] == arch[k] for k in same)
        trained = {k: v for k, v in configs[n]["training"].items() if k != "final_val_loss"}
        reference = {k: v for k, v in configs["rms"]["training"].items() if k != "final_val_loss"}
        assert trained == reference


def trained_text_loss(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    assert f["tokens"] == m["rms"]["tokens"] == len(view_text(state).encode("utf-8"))
    assert f["block"] == m["rms"]["config"]["model"]["block_size"]
    for n in NORMS:
        close(f[f"loss_{n}"], m[n]["loss"], m[n]["loss"])


def view_text(state: dict) -> str:
    return TEXTS[state["text"]]


def trained_offset_size(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    share = max(float(np.max(m[n]["share"])) for n in NORMS)
    cos = max(float(np.max(np.abs(m[n]["cos"]))) for n in NORMS)
    close(f["max_share_pct"], share)
    close(f["max_cos"], cos)
    assert (share <= 0.1) == (claim.key == "residual.trained_offset_small")


def trained_offset(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    for n in NORMS:
        close(f[f"offset_{n}"], m[n]["mean"][-1], m[n]["rms"][-1])
    wins = np.abs(m["rms"]["mean"]) > np.abs(m["layer"]["mean"])
    assert f["layers_rms"] == int(wins.sum()) and f["readings"] == wins.size
    runs = shipped(state["text"])
    seeds = [abs(runs["rms", s]["mean"][-1]) > abs(runs["layer", s]["mean"][-1]) for s in SEEDS]
    assert f["seeds_rms"] == sum(seeds) and f["seeds"] == len(SEEDS)
    assert bool(wins[-1]) == (claim.key == "residual.trained_offset_rms_larger")


def trained_share(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    for n in NORMS:
        close(f[f"share_{n}_pct"], m[n]["share"][-1])
    wins = m["rms"]["share"] > m["layer"]["share"]
    assert f["layers_rms"] == int(wins.sum()) and f["readings"] == wins.size
    close(f["random_pct"], 1 / m["rms"]["config"]["model"]["n_embd"])
    assert bool(np.all(wins)) == (claim.key == "residual.trained_share_rms_everywhere")
    # A random unit direction u holds E[<x, u>^2] = |x|^2 / d of a vector's energy.
    d = m["rms"]["config"]["model"]["n_embd"]
    u = np.random.default_rng(0).standard_normal((20000, d))
    x = np.random.default_rng(1).standard_normal(d)
    held = ((u @ x) ** 2 / (u**2).sum(axis=1) / (x @ x)).mean()
    np.testing.assert_allclose(held, 1 / d, rtol=0.03)


def trained_chance(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    d = m["rms"]["config"]["model"]["n_embd"]
    worst = float(np.max(m["layer"]["share"]))
    close(f["max_layer_pct"], worst)
    close(f["random_pct"], 1 / d)
    close(f["min_rms_pct"], np.min(m["rms"]["share"]))
    close(f["max_rms_pct"], np.max(m["rms"]["share"]))
    assert (worst < 1 / d) == (claim.key == "residual.trained_layer_below_chance")


def trained_shift(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    change = {n: float(np.max(np.abs(m[n]["change"]))) for n in NORMS}
    for n in ("rms", "none"):
        tol = 1e-3 * change[n] + ulps(64, m[n]["loss"], "float32")  # a difference of losses
        assert abs(f[f"change_{n}"] - change[n]) <= tol, (n, f[f"change_{n}"], change[n])
    # In float64 the LayerNorm model's loss does not move at all (to rounding): what the page
    # reads in float32 is that arithmetic's rounding, and the slope along 1 is zero.
    loss = m["layer"]["loss"]
    assert change["layer"] <= ulps(4096, loss) and f["change_layer"] <= 1e-5
    invisible = f["change_layer"] <= 1e-5 and min(change["rms"], change["none"]) >= 1e-3
    assert invisible == (claim.key == "residual.trained_shift_invisible")
    if invisible:
        # "No gradient": d loss / d c at rounding level, c in units of the stream's RMS.
        level = ulps(4096, loss / np.min(m["layer"]["rms"]))
        assert np.max(np.abs(m["layer"]["slope"])) <= level
        assert (
            np.max(np.abs(m["rms"]["slope"])) > 1e-3 and np.max(np.abs(m["none"]["slope"])) > 1e-3
        )


def trained_outliers(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    for n in NORMS:
        close(f[f"ratio_{n}"], m[n]["ratio"][-1], m[n]["ratio"][-1])
    largest = max(float(np.max(m[n]["ratio"])) for n in NORMS)
    close(f["max_ratio"], largest, largest)
    assert (largest <= 10) == (claim.key == "residual.trained_outliers_mild")


def trained_dims(state: dict, claim: Claim) -> None:
    m, f = models(state), claim.fields
    k = f["k"]
    top = {n: set(np.argsort(m[n]["magnitude"][-1])[::-1][:k].tolist()) for n in NORMS}
    assert k == 4
    assert f["shared_layer"] == len(top["rms"] & top["layer"])
    assert f["shared_none"] == len(top["rms"] & top["none"])
    # "All three started from the same initial weights": the same init seed in every config.
    seeds = {m[n]["config"]["training"]["init_seed"] for n in NORMS}
    assert len(seeds) == 1


def trained_table(state: dict, claim: Claim) -> None:
    assert claim.fields["tokens"] == len(view_text(state).encode("utf-8"))


# --- the charts' words: each from the arrays its chart draws ------------------------------------


def check_chart_words(state: dict, claim: Claim) -> None:
    """A figure's summary: the synthetic panels (the stream's offset, cos(zₗ, 1)) of both trunks
    by layer; the trained models' loss change under a shift along 1 (RMSNorm beside LayerNorm,
    then no norm); the heat maps' peaks."""
    v = view(state)
    chart = claim.fields.get("chart", claim.key).removeprefix("residual.")
    for ending in ("_equal", *FLAT_ENDINGS):
        chart = chart.removesuffix(ending)
    where = [int(layer) for layer in v.layers]
    if chart.startswith("figure_"):
        panel = chart.removeprefix("figure_")
        check_pair_words(claim, where, v.readings["rms"][panel], v.readings["layer"][panel])
    elif chart == "trained_figure_words":
        loss = [v.readings[n]["shift_loss"] for n in ("rms", "layer")]
        check_pair_words(claim, where, *loss)
    elif chart == "trained_figure_none":
        check_series_words(claim, where, v.readings["none"]["shift_loss"])
    else:
        assert chart == "coordinates_words", chart
        check_peak_words(claim, v.relative_magnitude)


CHECKS = {
    "charts.not_finite": check_chart_words,
    "charts.no_finite": check_chart_words,
    "charts.no_finite_values": check_chart_words,
    "charts.no_finite_panel": check_chart_words,
    "residual.figure_stream_mean": check_chart_words,
    "residual.figure_stream_mean_equal": check_chart_words,
    **dict.fromkeys(pair_keys("residual.figure_input_cos_ones"), check_chart_words),
    "residual.trained_figure_words": check_chart_words,
    "residual.trained_figure_words_equal": check_chart_words,
    "residual.trained_figure_none": check_chart_words,
    "residual.trained_figure_none_equal": check_chart_words,
    "residual.coordinates_words": check_chart_words,
    "residual.trained_model_caption": trained_model,
    "residual.trained_text_loss": trained_text_loss,
    "residual.trained_offset_small": trained_offset_size,
    "residual.trained_offset_large": trained_offset_size,
    "residual.trained_offset_rms_larger": trained_offset,
    "residual.trained_offset_rms_not_larger": trained_offset,
    "residual.trained_share_rms_everywhere": trained_share,
    "residual.trained_share_rms_some": trained_share,
    "residual.trained_layer_below_chance": trained_chance,
    "residual.trained_layer_not_below_chance": trained_chance,
    "residual.trained_shift_invisible": trained_shift,
    "residual.trained_shift_numbers": trained_shift,
    "residual.trained_outliers_mild": trained_outliers,
    "residual.trained_outliers_dominant": trained_outliers,
    "residual.trained_dims_shared": trained_dims,
    "residual.trained_table_caption": trained_table,
    "residual.offset_reading": check_offset,
    "residual.length_sqrt_d": check_length,
    "residual.length_below": check_length,
    "residual.explain_layer": check_layer,
    "residual.explain_layer_leaks": check_layer,
    "residual.explain_rms": check_rms,
    "residual.explain_rms_turned": check_rms,
    "residual.share_above_chance": check_share,
    "residual.share_near_chance": check_share,
    "residual.tokens_rms_alike": check_tokens,
    "residual.tokens_layer_alike": check_tokens,
    "residual.tokens_both": check_tokens,
    "residual.explain_swap": check_swap,
    "residual.explain_swap_offsets_too": check_swap,
    "residual.table_caption": check_table,
}
