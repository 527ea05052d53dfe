r"""Implementation contracts: two RMSNorm presets reading the same checkpoint, compared.

A checkpoint stores a weight, not a gain. "direct" presets use it as the gain ``g = w``; "offset"
presets (Gemma, Transformer Engine's zero-centred gamma) use ``g = 1 + w``, so a loader that
pairs a checkpoint with the wrong convention multiplies by the wrong gain:

.. math:: \Delta_i = y^{B}_i - y^{A}_i, \qquad
    \frac{\lVert \Delta \rVert_2}{\lVert y^{A} \rVert_2}
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core._backend import FLOAT_NAMES, HALF_NAMES, ops_for
from core.device import torch_available
from core.inputs import make_input
from core.messages import Message, NormWarning
from core.norms import rms_norm_report
from core.presets import get_preset
from labkit.chart_words import NOT_FINITE, pair_words
from labkit.claims import Claim
from labs.precision.reduced import running_sum_of_squares

DELTA_FORMULA = (
    r"\Delta_i = y^{B}_i - y^{A}_i, \qquad "
    r"\frac{\lVert \Delta \rVert_2}{\lVert y^{A} \rVert_2}"
)
# Spread of the seeded effective gains around 1: trained RMSNorm gains stay of order one and
# vary by coordinate, so a wrong reading shows per coordinate rather than as one constant factor.
GAIN_SPREAD = 0.1


def effective_gain(d: int, *, seed: int = 0) -> np.ndarray:
    """The gain a trained model applies, ``1 + GAIN_SPREAD z``, shape (d,), from ``seed``."""
    # A stream separate from the input's (which uses ``seed`` alone), so gain and x are unrelated.
    rng = np.random.default_rng([seed, 2])
    return 1.0 + GAIN_SPREAD * rng.standard_normal(d)


def stored_weight(gain: np.ndarray, gain_mode: str) -> np.ndarray:
    """What a checkpoint written for ``gain_mode`` stores for ``gain``: g, or g - 1 for offset."""
    if gain_mode not in ("direct", "offset"):
        raise ValueError(f"gain_mode must be 'direct' or 'offset' (got {gain_mode!r})")
    return np.asarray(gain, dtype=np.float64) - (1.0 if gain_mode == "offset" else 0.0)


@dataclass(frozen=True)
class Side:
    """One implementation: a preset, optionally with its eps or reduction dtype overridden."""

    preset: str
    eps: float | None = None
    reduction_dtype: str | None = None


@dataclass
class Comparison:
    """Both outputs (float64 copies of what each side returned), their difference and notes."""

    y_a: np.ndarray
    y_b: np.ndarray
    delta: np.ndarray
    max_abs: float
    relative: float
    settings_a: dict[str, Any]
    settings_b: dict[str, Any]
    # What each side met that its numbers alone would hide, by side ("a", "b"), coded.
    alerts: list[tuple[str, Message]] = field(default_factory=list)
    mean_square_b: float = math.nan


def _as_dtype(a: np.ndarray, dtype: str) -> Any:
    # A torch tensor in every dtype where torch is installed: the implementations compared are
    # torch code, and bit-for-bit agreement is a fact of their rounding. numpy sums in another
    # order, which near a tie (eps about half an ulp of the mean square) decides the other way.
    if dtype in HALF_NAMES or torch_available():
        import torch

        return torch.tensor(a, dtype=getattr(torch, dtype))
    return np.asarray(a, dtype=dtype)


def compare_sides(
    x: np.ndarray, weight: np.ndarray, side_a: Side, side_b: Side, *, dtype: str = "float32"
) -> Comparison:
    """Run both sides on ``x`` (shape (d,)) and the stored ``weight``, both held in ``dtype``.

    Weight and activations are rounded to ``dtype`` once, as a model loaded in it holds them
    (``_as_dtype``). Each side computes by its own contract. float16 and bfloat16 need torch."""
    if dtype not in FLOAT_NAMES:
        raise ValueError(f"dtype must be one of {list(FLOAT_NAMES)} (got {dtype!r})")
    if dtype in HALF_NAMES and not torch_available():
        raise ValueError(f"dtype {dtype!r} needs torch, which is not installed")
    xt, wt = _as_dtype(x, dtype), _as_dtype(weight, dtype)
    reports, alerts = [], []
    for name, side in zip("ab", (side_a, side_b), strict=True):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", NormWarning)
            reports.append(
                rms_norm_report(
                    xt,
                    wt,
                    preset=get_preset(side.preset, "rms"),
                    eps=side.eps,
                    reduction_dtype=side.reduction_dtype,
                )
            )
        coded = [w.message.message for w in caught if isinstance(w.message, NormWarning)]
        alerts += [(name, m) for m in dict.fromkeys(coded)]
    y_a, y_b = (ops_for(r.output).to_float64_numpy(r.output) for r in reports)
    with np.errstate(invalid="ignore"):
        delta = y_b - y_a  # inf - inf is NaN: an overflow shows as such
    scale = float(np.linalg.norm(y_a))
    with np.errstate(invalid="ignore", divide="ignore"):
        relative = float(np.linalg.norm(delta)) / scale if scale > 0 else float("inf")
    return Comparison(
        y_a=y_a,
        y_b=y_b,
        delta=delta,
        max_abs=float(np.max(np.abs(delta))),
        relative=relative,
        settings_a=reports[0].settings,
        settings_b=reports[1].settings,
        alerts=alerts,
        mean_square_b=float(reports[1].mean_square.ravel()[0]),
    )


# --- the page: one view per link state -------------------------------------------------------

# Wide enough for real hidden sizes; one comparison is two norms of one vector.
MAX_CONTRACT_WIDTH = 4096
# "preset" keeps the preset's own value; the others override it (the link carries the label).
EPS_CHOICES = ("preset", "0", "1e-12", "1e-8", "1e-6", "1e-5", "1e-4", "1e-3")
SCALE_LADDER = (1e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 100.0)
# The settings a contract is made of, in the order the page's table lists them.
CONTRACT_KEYS = ("eps", "eps_placement", "reduction_dtype", "gain_mode", "cast")
_PLAIN = {"eps_a": "preset", "eps_b": "preset", "red_a": "preset", "red_b": "preset"}
# Both sides Llama, the checkpoint written by A: the two mistakes of one model's own settings.
_LLAMA = {**_PLAIN, "a": "llama", "b": "llama", "checkpoint": "a"}
# Real checkpoint mistakes, as the settings that reproduce them on the page's synthetic checkpoint.
MISTAKES: dict[str, dict[str, Any]] = {
    # Gemma stores w with gain 1 + w; a Llama-style loader uses w itself.
    "gemma_gain": {**_PLAIN, "a": "gemma", "b": "llama", "checkpoint": "a", "scale": 1.0},
    # A config with the wrong rms_norm_eps (Llama 2 ships 1e-5, Llama 1 1e-6), seen at small x.
    "eps": {**_LLAMA, "eps_a": "1e-5", "eps_b": "1e-6", "scale": 0.01},
    # A hand-rolled norm that forgets the float32 upcast on a bfloat16 model.
    "bf16": {**_LLAMA, "red_b": "bfloat16", "dtype": "bfloat16", "scale": 1.0},
    # OLMo 2's checkpoints set rms_norm_eps 1e-6; a loader that builds Olmo2Config without the
    # checkpoint's config.json gets the library's default, 1e-5 (DEFAULT_EPS_OF).
    "default_eps": {**_PLAIN, "a": "olmo2", "b": "olmo2", "checkpoint": "a", "scale": 0.01}
    | {"eps_a": "1e-6", "eps_b": "1e-5"},
}
# The default rms_norm_eps of transformers' config classes (the pinned version's, checked by
# tests/test_presets.py) against the eps their families' released checkpoints set.
DEFAULT_EPS_OF = {
    "olmo2": {"config": "Olmo2Config", "default": 1e-5, "checkpoint": 1e-6},
    "llama": {"config": "LlamaConfig", "default": 1e-6, "checkpoint": 1e-5},  # Llama 3
}


@dataclass(frozen=True)
class ContractsView:
    """What the contracts page shows for one link state.

    ``same[key]``: whether the two resolved contracts agree on that ``CONTRACT_KEYS`` setting."""

    comparison: Comparison
    writer: str
    gain_mode: str
    weight_mean: float
    same: dict[str, bool]
    claims: dict[str, Claim]


def _side(preset: str, eps: str, red: str) -> Side:
    return Side(preset, None if eps == "preset" else float(eps), None if red == "preset" else red)


def active_mistake(state: dict[str, Any]) -> str | None:
    """The mistake whose settings ``state`` (the page's link state) reproduces, if any."""
    for name, settings in MISTAKES.items():
        if all(state[k] == v for k, v in settings.items()):
            return name
    return None


def contracts_view(state: dict[str, Any]) -> ContractsView:
    """Both sides on the page's seeded input and synthetic checkpoint, and the claims.

    ``state`` holds the page's link parameters: a, b, eps_a, eps_b, red_a, red_b, checkpoint,
    dtype, d, seed, scale."""
    d, seed, dtype = state["d"], state["seed"], state["dtype"]
    sides = tuple(_side(state[k], state[f"eps_{k}"], state[f"red_{k}"]) for k in "ab")
    writer = get_preset(state[state["checkpoint"]], "rms")
    weight = stored_weight(effective_gain(d, seed=seed), writer.gain_mode)

    def compare(scale: float) -> Comparison:
        return compare_sides(make_input(d, seed=seed, scale=scale), weight, *sides, dtype=dtype)

    c = compare(state["scale"])
    same = {k: c.settings_a[k] == c.settings_b[k] for k in CONTRACT_KEYS}
    mistake = active_mistake(state)
    claims = _agreement_claims(c, same, state, compare)
    if mistake is not None:
        claims["mistake"] = _mistake_claim(mistake, c, weight, state, compare)
    if mistake == "default_eps":
        eps = {f"{k}_{n}": v for n, e in DEFAULT_EPS_OF.items() for k, v in e.items()}
        claims["mistake_why"] = Claim("contracts.why_default_eps", eps)
    words = pair_words("contracts.figure_words", range(d), c.y_a, c.y_b)
    # The chart draws a third trace, Δ = y_B - y_A: its values count among those not drawn.
    bad = sum(int(np.sum(~np.isfinite(v))) for v in (c.y_a, c.y_b, c.delta))
    for slot in ("words", "not_finite"):
        if words.get(slot) is not None and words[slot].key.startswith("charts."):
            words[slot] = Claim(words[slot].key, words[slot].fields | {"total": 3 * d})
    if "not_finite" in words:
        words["not_finite"] = Claim(NOT_FINITE, words["not_finite"].fields | {"count": bad})
    elif bad:
        words["not_finite"] = Claim(
            NOT_FINITE, {"count": bad, "total": 3 * d, "chart": "contracts.figure_words"}
        )
    claims |= {f"figure_{slot}": claim for slot, claim in words.items()}
    return ContractsView(
        comparison=c,
        writer=writer.name,
        gain_mode=writer.gain_mode,
        weight_mean=float(np.mean(weight)),
        same=same,
        claims=claims,
    )


def _agreement_claims(
    c: Comparison, same: dict[str, bool], state: dict[str, Any], compare: Any
) -> dict[str, Claim]:
    """Whether the outputs agree on this input, and whether the contracts themselves differ."""
    dtype, count = state["dtype"], sum(not v for v in same.values())
    identical = c.max_abs == 0
    claims = {"agreement": Claim("contracts.identical", {"dtype": dtype})} if identical else {}
    if count == 0:
        key = "contracts.contract_same" if identical else "contracts.contract_same_settings"
        claims["contract"] = Claim(key, {"dtype": dtype})
    elif not identical:
        claims["contract"] = Claim("contracts.contract_differs", {"count": count})
    else:
        # The first scale at which both outputs are finite and differ.
        other = next(((s, r.relative) for s in SCALE_LADDER if _parts(r := compare(s))), None)
        if other is None:
            fields = {"count": count, "dtype": dtype}
            claims["contract"] = Claim("contracts.contract_differs_nowhere", fields)
        else:
            fields = {"count": count, "scale": other[0], "relative": other[1]}
            claims["contract"] = Claim("contracts.contract_differs_elsewhere", fields)
    return claims


def _parts(c: Comparison) -> bool:
    """Whether both outputs are finite and not equal."""
    finite = bool(np.isfinite(c.y_a).all() and np.isfinite(c.y_b).all())
    return finite and c.max_abs > 0


# Unit roundoff 2^-p for p significant bits: a relative change below it is lost in one rounding.
UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "float16": 2.0**-11, "bfloat16": 2.0**-8}


def _bfloat16(value: float) -> float:
    import torch

    return float(torch.tensor(value, dtype=torch.float64).to(torch.bfloat16))


def _held(state: dict[str, Any], scale: float) -> np.ndarray:
    """The input at ``scale`` as the model holds it: rounded to the model dtype, as float64."""
    x = make_input(state["d"], seed=state["seed"], scale=scale)
    held = _as_dtype(x, state["dtype"])
    return ops_for(held).to_float64_numpy(held)


def _mistake_claim(
    name: str, c: Comparison, weight: np.ndarray, state: dict[str, Any], compare: Any
) -> Claim:
    numbers = {"max_abs": c.max_abs, "relative": c.relative}
    if name == "gemma_gain":
        gain = weight + 1.0  # the checkpoint is Gemma's: w = g - 1
        return Claim(
            "contracts.explain_gemma_gain",
            {
                **numbers,
                "w_mean": float(np.mean(weight)),
                "w_rms": float(np.sqrt(np.mean(weight**2))),
                "g_rms": float(np.sqrt(np.mean(gain**2))),
            },
        )
    x = _held(state, state["scale"])
    mean_square = float(np.mean(x**2))  # (d,) -> ()
    if name in ("eps", "default_eps"):
        return _eps_mistake_claim(c, numbers, mean_square, state, compare)
    # The loop's mean rounded to bfloat16 as B's is, so the two differ by the running total only.
    loop = _bfloat16(running_sum_of_squares(x, "bfloat16")[-1] / x.size)
    errors = {
        "ms_err_pct": abs(c.mean_square_b - mean_square) / mean_square,
        "loop_err_pct": abs(loop - mean_square) / mean_square,
    }
    # "Only" where B's float32-accumulated mean is the closer one on this input.
    closer = errors["ms_err_pct"] < errors["loop_err_pct"]
    key = "contracts.explain_bf16" if closer else "contracts.explain_bf16_loop"
    return Claim(key, {**numbers, "red_b": c.settings_b["reduction_dtype"], **errors})


def _eps_mistake_claim(
    c: Comparison,
    numbers: dict[str, float],
    mean_square: float,
    state: dict[str, Any],
    compare: Any,
) -> Claim:
    eps_a, eps_b = c.settings_a["eps"], c.settings_b["eps"]
    at_one = compare(1.0)
    fields = {
        **numbers,
        "eps_a": eps_a,
        "eps_b": eps_b,
        "scale": state["scale"],
        "mean_square": mean_square,
        # y_B / y_A = sqrt((ms + eps_a) / (ms + eps_b)) = 1 + (eps_a - eps_b) / (2 ms) + ...
        "estimate": abs(eps_a - eps_b) / (2 * mean_square),
        "mean_square_1": float(np.mean(_held(state, 1.0) ** 2)),
        "relative_1": at_one.relative,
        "dtype": state["dtype"],
    }
    fields["estimate_1"] = abs(eps_a - eps_b) / (2 * fields["mean_square_1"])
    if at_one.max_abs == 0:
        return Claim("contracts.explain_eps_same_at_1", fields)
    unit = UNIT_ROUNDOFF[state["dtype"]]
    if fields["estimate_1"] < unit:
        # At scale 1 eps's change is under one rounding: far under it (a sixteenth), what differs
        # there is rounding; nearer, eps tips roundings, and the two are not told apart.
        key = "rounding" if fields["estimate_1"] < unit / 16 else "near_rounding"
        return Claim(f"contracts.explain_eps_{key}_at_1", fields | {"unit": unit})
    return Claim("contracts.explain_eps", {**fields, "ratio": c.relative / at_one.relative})
