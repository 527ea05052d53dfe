"""The residual page's sentences, rechecked on a trunk rebuilt with torch.nn.functional.

The draws follow the page's documented recipe (``h_0`` from ``default_rng([seed, 0])``, block
l's weight from ``default_rng([seed, 1, l])`` in float32, scaled by 1/sqrt(d)); the norms are
``F.rms_norm`` and ``F.layer_norm`` in float64. Nothing below calls ``core.residual`` except
``view``.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from core.claims import Claim
from core.defaults import EPS_LADDER, ladder_upto
from core.residual import residual_view

TOKENS = 8
TOL = 1e-9

STATES = st.fixed_dictionaries(
    {
        "layers": st.one_of(st.sampled_from((1, 48)), st.integers(1, 24)),
        "d": st.one_of(st.sampled_from((2, 3, 1024)), st.integers(2, 200)),
        "drift": st.one_of(st.sampled_from((-2.0, 0.0, 2.0)), st.floats(-2.0, 2.0)),
        "seed": st.one_of(st.sampled_from((0, 2**31 - 1)), st.integers(0, 2**31 - 1)),
        "eps": st.sampled_from(ladder_upto(EPS_LADDER, 1.0)),
    }
)


def view(state: dict):
    return residual_view(**state)


def _norm(name: str, h: torch.Tensor, eps: float) -> torch.Tensor:
    d = h.shape[-1]
    return F.rms_norm(h, (d,), eps=eps) if name == "rms" else F.layer_norm(h, (d,), eps=eps)


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a @ b) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(b))


@lru_cache(maxsize=8)
def trunk(layers: int, d: int, drift: float, seed: int, eps: float) -> dict:
    """Per norm: the streams h_0..h_L (L+1, n, d), the inputs z and outputs p of every
    projection, and each projection's W 1."""
    h0 = np.random.default_rng([seed, 0]).standard_normal((TOKENS, d))
    out = {"w1": []}
    weights = []
    for layer in range(layers + 1):
        draw = np.random.default_rng([seed, 1, layer]).standard_normal((d, d), dtype=np.float32)
        weights.append(draw.astype(np.float64) / math.sqrt(d))
        out["w1"].append(weights[-1].sum(axis=1))
    for name in ("rms", "layer"):
        h = torch.from_numpy(h0)
        hs, zs, ps = [], [], []
        for w in weights:
            z = _norm(name, h, eps)
            p = F.linear(z, torch.from_numpy(w))
            hs.append(h.numpy()), zs.append(z.numpy()), ps.append(p.numpy())
            h = h + drift + p
        out[name] = {"h": np.stack(hs), "z": np.stack(zs), "p": np.stack(ps)}
    return out


def run(state: dict) -> dict:
    return trunk(state["layers"], state["d"], state["drift"], state["seed"], state["eps"])


def near(shown: float, value: float, rtol: float = 1e-7, atol: float = 1e-10) -> None:
    np.testing.assert_allclose(shown, value, rtol=rtol, atol=atol)


def check_offset(state: dict, claim: Claim) -> None:
    t = run(state)
    near(claim.fields["offset_rms"], np.mean(t["rms"]["h"][-1]))
    near(claim.fields["offset_layer"], np.mean(t["layer"]["h"][-1]))
    near(claim.fields["total"], state["layers"] * state["drift"], atol=1e-12)
    assert claim.fields["layers"] == state["layers"]


def check_length(state: dict, claim: Claim) -> None:
    t, d = run(state), state["d"]
    lengths = {n: float(np.mean(np.linalg.norm(t[n]["z"][-1], axis=-1))) for n in ("rms", "layer")}
    near(claim.fields["len_rms"], lengths["rms"])
    near(claim.fields["len_layer"], lengths["layer"])
    near(claim.fields["sqrt_d"], math.sqrt(d))
    at_sqrt_d = all(abs(v - math.sqrt(d)) <= 1e-3 * math.sqrt(d) for v in lengths.values())
    assert at_sqrt_d == (claim.key == "residual.length_sqrt_d")
    if not at_sqrt_d:
        assert state["eps"] > 0  # with eps = 0 both lengths are sqrt(d)
        assert all(v < math.sqrt(d) for v in lengths.values())


def check_layer(state: dict, claim: Claim) -> None:
    z, d = run(state)["layer"]["z"], state["d"]
    per_token = _cos(z, np.ones(d))  # (L+1, n)
    worst = float(np.max(np.abs(np.mean(per_token, axis=-1))))
    # Rounding-level cosines differ between implementations by about their own size.
    near(claim.fields["worst"], worst, atol=1e-9)
    near(claim.fields["cos_layer"], np.mean(per_token[-1]), atol=1e-9)
    orthogonal = worst <= 1e-6
    assert orthogonal == (claim.key == "residual.explain_layer")
    if orthogonal:
        assert np.max(np.abs(per_token)) <= 1e-6  # every token, not only the mean


def check_rms(state: dict, claim: Claim) -> None:
    t, d = run(state)["rms"], state["d"]
    cos_z, cos_h = _cos(t["z"], np.ones(d)), _cos(t["h"], np.ones(d))  # (L+1, n)
    kept = float(np.max(np.abs(np.mean(cos_z, axis=-1) - np.mean(cos_h, axis=-1))))
    assert (kept <= TOL) == (claim.key == "residual.explain_rms")
    near(claim.fields["cos_rms"], np.mean(cos_z[-1]))
    near(claim.fields["share_rms"], np.mean(cos_z[-1] ** 2))


def share_along(p: np.ndarray, w1: np.ndarray) -> float:
    return float(np.mean(_cos(p, w1) ** 2))


def check_share(state: dict, claim: Claim) -> None:
    t, d = run(state), state["d"]
    out = {n: share_along(t[n]["p"][-1], t["w1"][-1]) for n in ("rms", "layer")}
    near(claim.fields["out_rms"], out["rms"])
    near(claim.fields["out_layer"], out["layer"])
    near(claim.fields["random"], 1 / d)
    assert (out["rms"] >= 10 / d) == (claim.key == "residual.share_above_chance")


def token_cosine(p: np.ndarray) -> float:
    unit = p / np.linalg.norm(p, axis=-1, keepdims=True)
    gram = unit @ unit.T
    n = p.shape[0]
    return float((np.sum(gram) - np.trace(gram)) / (n * (n - 1)))


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
    offset_gap = abs(m_rms - m_layer) / max(abs(m_rms), abs(m_layer))
    near(claim.fields["gap_pct"], gap)
    near(claim.fields["offset_gap_pct"], offset_gap)
    near(claim.fields["offset_rms"], m_rms)
    near(claim.fields["offset_layer"], m_layer)
    assert gap > 0  # the sentence says the streams differ
    assert (offset_gap <= gap) == (claim.key == "residual.explain_swap")


def check_table(state: dict, claim: Claim) -> None:
    assert claim.fields["n"] == TOKENS and claim.fields["layers"] == state["layers"]
    near(claim.fields["random"], 1 / state["d"])


CHECKS = {
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
