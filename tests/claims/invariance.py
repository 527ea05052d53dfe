"""The invariance lab's sentences, rechecked with torch.nn.functional in float64.

The setup is drawn here as the page documents it (one generator seeded with ``seed``: the batch,
the weights, then whatever the change draws), and every norm is ``F.rms_norm`` or
``F.layer_norm``, so nothing below calls ``core.invariance``'s code except ``view``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from hypothesis import strategies as st

from core.claims import Claim
from core.defaults import DEFAULT_RMS_EPS
from core.invariance import SHIFT_LADDER, SIZE_LADDER, invariance_lab

TRANSFORM_IDS = (
    "weight_matrix_rescale",
    "weight_matrix_recenter",
    "weight_vector_rescale",
    "dataset_rescale",
    "dataset_recenter",
    "single_case_rescale",
    "shift_ones",
    "negative_rescale",
)
# Table 1 of Zhang & Sennrich (2019) for its six changes, then what the algebra gives for the two
# extra rows: (LayerNorm invariant, RMSNorm invariant).
EXPECTED = {
    "weight_matrix_rescale": (True, True),
    "weight_matrix_recenter": (True, False),
    "weight_vector_rescale": (False, False),
    "dataset_rescale": (True, True),
    "dataset_recenter": (False, False),
    "single_case_rescale": (True, True),
    "shift_ones": (True, False),
    "negative_rescale": (False, False),
}
PAPER_ROWS = 6
N, M, D = 16, 8, 8
TOL = 1e-9
SWEEP_EPS = DEFAULT_RMS_EPS
NAMES = {"RMSNorm": "rms", "LayerNorm": "layer"}

STATES = st.fixed_dictionaries(
    {
        "transform": st.sampled_from(TRANSFORM_IDS),
        "size": st.sampled_from(SIZE_LADDER),
        "seed": st.one_of(st.sampled_from((0, 1, 2**31 - 1)), st.integers(0, 2**31 - 1)),
        "c_max": st.sampled_from(SHIFT_LADDER),
    }
)


def view(state: dict):
    return invariance_lab(**state)


def norm(name: str, a: np.ndarray, eps: float) -> np.ndarray:
    t = torch.from_numpy(np.asarray(a, dtype=np.float64))
    d = t.shape[-1]
    out = F.rms_norm(t, (d,), eps=eps) if name == "rms" else F.layer_norm(t, (d,), eps=eps)
    return out.numpy()


def preactivations(seed: int, transform: str, size: float) -> tuple[np.ndarray, np.ndarray]:
    """A = x W^T + b before and after the change, drawn in the documented order."""
    rng = np.random.default_rng(seed)
    x, w, b = rng.standard_normal((N, M)), rng.standard_normal((D, M)), np.zeros(D)
    x2, w2, b2 = x.copy(), w.copy(), b.copy()
    if transform == "weight_matrix_rescale":
        w2 = size * w
    elif transform == "weight_matrix_recenter":
        w2 = w + size * rng.standard_normal(M)  # the same gamma on every row
    elif transform == "weight_vector_rescale":
        w2[rng.integers(D)] *= size
    elif transform == "dataset_rescale":
        x2 = size * x
    elif transform == "dataset_recenter":
        x2 = x + size * rng.standard_normal(M)
    elif transform == "single_case_rescale":
        x2[rng.integers(N)] *= size
    elif transform == "shift_ones":
        b2 = b + size
    else:
        w2 = -size * w
    return x @ w.T + b, x2 @ w2.T + b2


def changes(seed: int, transform: str, size: float) -> dict[str, np.ndarray]:
    """Per case and norm: |y' - y| / sqrt(d) and |y' + y| / sqrt(d), eps = 0."""
    a, a2 = preactivations(seed, transform, size)
    out = {}
    for name in ("rms", "layer"):
        y, y2 = norm(name, a, 0.0), norm(name, a2, 0.0)
        out[name] = np.linalg.norm(y2 - y, axis=-1) / math.sqrt(D)
        out[f"{name}_flip"] = np.linalg.norm(y2 + y, axis=-1) / math.sqrt(D)
    return out


def near(shown: float, value: float, rtol: float = 1e-9, atol: float = 1e-12) -> None:
    np.testing.assert_allclose(shown, value, rtol=rtol, atol=atol)


def shown_case(state: dict) -> tuple[int, dict[str, np.ndarray]]:
    ch = changes(state["seed"], state["transform"], state["size"])
    moved = ch["rms"] + ch["layer"]
    # The first case within rounding of the largest change (case 0 when nothing moves).
    return int(np.flatnonzero(moved >= np.max(moved) - TOL)[0]), ch


def check_case_intro(state: dict, claim: Claim) -> None:
    case, ch = shown_case(state)
    assert claim.fields["case"] == case and claim.fields["n"] == N
    moved = max(ch["rms"][case], ch["layer"][case]) > TOL
    assert moved == (claim.key == "invariance.case_intro_moved")


def check_case_norm(state: dict, claim: Claim) -> None:
    case, ch = shown_case(state)
    name = NAMES[claim.fields["norm"]]
    change, flip = ch[name][case], ch[f"{name}_flip"][case]
    near(claim.fields["change"], change)
    verdict = claim.key.rsplit("_", 1)[-1]
    assert (change <= TOL) == (verdict == "cancelled"), (change, claim.key)
    if verdict != "cancelled":
        assert (flip <= TOL) == (verdict == "flipped"), (flip, claim.key)


def residuals(seed: int, transform: str, size: float) -> tuple[float, float]:
    ch = changes(seed, transform, size)
    return float(np.max(ch["layer"])), float(np.max(ch["rms"]))


def check_why(state: dict, claim: Claim) -> None:
    transform = claim.fields["transform"]
    layer, rms = residuals(state["seed"], transform, state["size"])
    near(claim.fields["layer"], layer)
    near(claim.fields["rms"], rms)
    as_expected = (layer < TOL, rms < TOL) == EXPECTED[transform]
    assert as_expected == (claim.key == f"invariance.why_{transform}"), (claim.key, layer, rms)


def check_table(state: dict, claim: Claim) -> None:
    agree = 0
    for transform in TRANSFORM_IDS[:PAPER_ROWS]:
        layer, rms = residuals(state["seed"], transform, state["size"])
        agree += (layer < TOL, rms < TOL) == EXPECTED[transform]
    assert claim.fields["agree"] == agree and claim.fields["total"] == PAPER_ROWS
    assert claim.fields["tol"] == TOL
    assert (claim.fields["size"], claim.fields["seed"]) == (state["size"], state["seed"])


def case_vector(seed: int, case: int) -> np.ndarray:
    return preactivations(seed, "dataset_rescale", 1.0)[0][case]


def cosine_with_unshifted(name: str, x: np.ndarray, c: np.ndarray) -> np.ndarray:
    shifted, plain = norm(name, x + c[:, None], SWEEP_EPS), norm(name, x, SWEEP_EPS)
    dots = shifted @ plain
    return dots / (np.linalg.norm(shifted, axis=-1) * np.linalg.norm(plain))


def check_sweep_layer(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    low = float(np.min(cosine_with_unshifted("layer", x, np.linspace(-c, c, 401))))
    near(claim.fields["low"], low, atol=1e-12)
    assert (low >= 1 - TOL) == (claim.key == "invariance.sweep_layer_flat")


def check_sweep_rms(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    cos_neg, cos_far = cosine_with_unshifted("rms", x, np.array([-c, c]))
    y = norm("rms", x + c, SWEEP_EPS)
    energy = np.sum(y) ** 2 / D / np.sum(y**2)  # <y, 1/sqrt(d)>^2 / |y|^2
    near(claim.fields["cos_far"], cos_far)
    near(claim.fields["cos_neg"], cos_neg)
    near(claim.fields["energy_far"], energy)
    assert claim.fields["case"] == 0 and claim.fields["c"] == c


def check_sweep_limit(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    limit = np.mean(x) / math.sqrt(np.mean(x**2))
    near(claim.fields["limit"], limit)
    near(claim.fields["neg_limit"], -limit)
    # The limit itself: far out, the cosine sits on it (rounding of x + c costs ~1e-9 here).
    far = 1e7 * math.sqrt(np.mean(x**2))
    np.testing.assert_allclose(
        cosine_with_unshifted("rms", x, np.array([-far, far])), [-limit, limit], atol=1e-6
    )
    gap = abs(cosine_with_unshifted("rms", x, np.array([c]))[0] - limit)
    near(claim.fields["gap"], gap)
    assert (gap <= 0.01) == (claim.key == "invariance.sweep_limit_reached")


def check_collapse(state: dict, claim: Claim) -> None:
    x, c = case_vector(state["seed"], 0), state["c_max"]
    spread = float(np.std(norm("rms", x + c, SWEEP_EPS)))
    exact = np.std(x) / math.sqrt(np.var(x) + (np.mean(x) + c) ** 2 + SWEEP_EPS)
    near(spread, exact, rtol=1e-9)  # the formula the sentence writes
    bound = np.std(x) / abs(c + np.mean(x))
    near(claim.fields["spread"], spread)
    near(claim.fields["bound"], bound)
    near(claim.fields["off_pct"], abs(bound - spread) / spread)
    dominates = abs(spread - bound) <= 0.01 * bound
    assert dominates == (claim.key == "invariance.collapse_dominates")


def check_pair(state: dict, claim: Claim) -> None:
    seed, c = state["seed"], state["c_max"]
    a, b = case_vector(seed, 0), case_vector(seed, 1)
    dist = {}
    for name in ("rms", "layer"):
        for shift in (0.0, c):
            diff = norm(name, a + shift, SWEEP_EPS) - norm(name, b + shift, SWEEP_EPS)
            dist[name, shift] = float(np.linalg.norm(diff))
    near(claim.fields["dist"], dist["rms", c])
    near(claim.fields["dist0"], dist["rms", 0.0])
    near(claim.fields["dist_layer"], dist["layer", c], rtol=1e-7)
    kept = abs(dist["layer", c] - dist["layer", 0.0]) <= 1e-9 * dist["layer", 0.0]
    assert kept == (claim.key == "invariance.pair_kept")


CHECKS = {
    "invariance.case_intro_moved": check_case_intro,
    "invariance.case_intro_still": check_case_intro,
    "invariance.case_cancelled": check_case_norm,
    "invariance.case_flipped": check_case_norm,
    "invariance.case_moved": check_case_norm,
    **{f"invariance.why_{t}": check_why for t in TRANSFORM_IDS},
    "invariance.why_unexpected": check_why,
    "invariance.table_caption": check_table,
    "invariance.sweep_layer_flat": check_sweep_layer,
    "invariance.sweep_layer_moves": check_sweep_layer,
    "invariance.sweep_rms": check_sweep_rms,
    "invariance.sweep_limit_reached": check_sweep_limit,
    "invariance.sweep_limit_not_yet": check_sweep_limit,
    "invariance.collapse_dominates": check_collapse,
    "invariance.collapse_not_yet": check_collapse,
    "invariance.pair_kept": check_pair,
    "invariance.pair_changed": check_pair,
}
