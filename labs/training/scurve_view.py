"""The training lab's S-curve view: the shipped RMSNorm and LayerNorm models of one seed, every
norm layer's input against its output with a tanh fitted through them (``labs.training.scurve``),
and the sentences those fits make true (``labkit.claims``), per layer and per model."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labkit.chart_words import lines_words
from labkit.claims import Claim, at_least
from labs.training.scurve import (
    FIT_FORMS,
    FLAT_REACH,
    GOOD_FIT,
    LINE_TIE,
    LINEAR_REACH,
    SAMPLE,
    LayerCurve,
    layer_curves,
)

SCURVE_NORMS = ("rms", "layer")  # RMSNorm first, as on every page
NORM_NAMES = {"rms": "RMSNorm", "layer": "LayerNorm"}
SHAPES = ("linear", "bending", "one_arm", "saturated", "no_fit")
R2_KEYS = ("r2", "line_r2", "erf_r2")  # the R² of each of FIT_FORMS, in ScurveView.table


@dataclass(frozen=True)
class ScurveView:
    """The S-curve view for one training seed: per norm (``SCURVE_NORMS``), every norm layer's
    curve in forward order; the models' size and steps, the text and its length in bytes
    (``tokens``); the claims, by slot."""

    seed: int
    text: str
    tokens: int
    d: int
    n_layer: int
    steps: int
    curves: dict[str, tuple[LayerCurve, ...]]
    claims: dict[str, Claim]

    def layers(self) -> list[str]:
        """The norm layers' names, in forward order (the same in both models)."""
        return [c.name for c in self.curves[SCURVE_NORMS[0]]]

    def table(self, norm: str) -> dict[str, list]:
        """Per layer of ``norm``'s model, the numbers of its row in the page's table."""
        rows = self.curves[norm]
        fits = ("alpha", "amplitude", "r2", "line_r2", "reach", "flat_share")
        table = {"layer": [c.name for c in rows]}
        table |= {field: [getattr(c.fit, field) for c in rows] for field in fits}
        table |= {f"erf_{k}": [getattr(c.erf, k) for c in rows] for k in ("alpha", "shift", "r2")}
        return table | {"ratio": [c.ratio for c in rows]}


def scurve_view(*, seed: int) -> ScurveView:
    """The RMSNorm and LayerNorm checkpoints trained from ``seed`` (one of
    ``labs.training.activations.SHIPPED_SEEDS``) read on its ``DEFAULT_TEXT``, every norm layer
    fitted, with every claim the view makes about them."""
    from core.device import torch_threads
    from labs.training import activations
    from labs.training.store import load_checkpoint

    if isinstance(seed, bool) or seed not in activations.SHIPPED_SEEDS:
        raise ValueError(f"seed must be one of {list(activations.SHIPPED_SEEDS)}; got {seed!r}")
    curves, configs = {}, {}
    # One reading at a time, on one thread (as labs.training.activations reads the models).
    with activations._READ_LOCK, torch_threads(activations.READ_THREADS):
        for norm in SCURVE_NORMS:
            model, configs[norm] = load_checkpoint(activations.shipped_path(norm, seed))
            curves[norm] = layer_curves(model, activations.DEFAULT_TEXT)
    model_config = configs["rms"]["model"]
    d = int(model_config["n_embd"])
    view = ScurveView(
        seed=int(seed),
        text=activations.DEFAULT_TEXT,
        tokens=int(curves["rms"][0].x.size // d),
        d=d,
        n_layer=int(model_config["n_layer"]),
        steps=int(configs["rms"]["training"]["steps_done"]),
        curves=curves,
        claims={},
    )
    view.claims.update(_claims(view))
    return view


# --- The sentences ------------------------------------------------------------------------------


def layer_claims(norm: str, curve: LayerCurve) -> dict[str, Claim]:
    """One layer's words: ``fit`` (the curve and the line), ``quality`` (how well the curve
    describes the points) and ``shape`` (over the data), which its chart's caption joins, and
    ``cell`` (its shape in a word, for the table). A fit that did not converge has ``fit`` (why)
    and ``cell`` only. Every claim carries the model (``norm``, its name) and the ``layer`` it
    is about."""
    fit, erf = curve.fit, curve.erf
    which = {"norm": NORM_NAMES[norm], "layer": curve.name}
    cell = Claim(f"scurve.cell_{fit.shape}", which)
    erf_words = {**which} | {k: getattr(erf, k) for k in ("alpha", "shift", "amplitude", "r2")}
    erf_words = Claim("scurve.erf_words" if erf.converged else "scurve.erf_no_fit", erf_words)
    if not fit.converged:
        fields = {**which, "evaluations": fit.evaluations, "line_r2": fit.line_r2}
        return {"fit": Claim(f"scurve.no_fit_{fit.reason}", fields), "cell": cell}
    words = which | {k: getattr(fit, k) for k in ("alpha", "amplitude", "r2", "slope", "line_r2")}
    quality = (
        Claim("scurve.fit_close", {**which, "good": GOOD_FIT})
        if at_least(fit.r2, GOOD_FIT)
        else Claim("scurve.fit_loose", {**which, "good": GOOD_FIT, "ratio": curve.ratio})
    )
    # How far tanh(u) falls short of u at the data's edge: 1 - tanh(u) / u.
    bend = 1.0 - math.tanh(fit.reach) / fit.reach if fit.reach > 0 else 0.0
    shape: dict[str, object] = {**which, "reach": fit.reach, "bend_pct": bend}
    key = f"scurve.shape_{fit.shape}"
    if fit.shape == "linear":
        shape["gap"] = abs(fit.r2 - fit.line_r2)
    elif fit.shape in ("saturated", "one_arm"):
        shape |= {"flat_pct": fit.flat_share, "flat_reach": FLAT_REACH}
        shape["slope_pct"] = 1.0 - math.tanh(FLAT_REACH) ** 2
    if fit.shape == "one_arm":  # how far the other side reaches (0 where it has no points)
        near = fit.reach_positive if fit.flat_side == "negative" else fit.reach_negative
        shape["other"] = max(near, 0.0)
        key = f"{key}_{fit.flat_side}"
    return {
        "fit": Claim("scurve.fit_words", words),
        "quality": quality,
        "shape": Claim(key, shape),
        "erf": erf_words,
        "cell": cell,
    }


def _extreme(curves: list[LayerCurve], values: list[float], largest: bool) -> tuple[float, str]:
    """The largest (or smallest) value and the first layer that holds it."""
    at = int(np.argmax(values) if largest else np.argmin(values))
    return float(values[at]), curves[at].name


def model_claims(norm: str, curves: tuple[LayerCurve, ...]) -> dict[str, Claim]:
    """One model's words: ``summary`` (R² against ``GOOD_FIT``, the best and worst layer), one
    ``group_<shape>`` per shape some layer has (its layers by name) and ``divisors`` (the least
    and most spread of the tokens' denominators within a layer)."""
    name = NORM_NAMES[norm]
    fitted = [c for c in curves if c.fit.converged]
    claims: dict[str, Claim] = {}
    if not fitted:
        claims["summary"] = Claim("scurve.summary_no_fit", {"norm": name, "n": len(curves)})
    else:
        r2 = [c.fit.r2 for c in fitted]
        good = [c.name for c in fitted if at_least(c.fit.r2, GOOD_FIT)]
        best, best_at = _extreme(fitted, r2, largest=True)
        worst, worst_at = _extreme(fitted, r2, largest=False)
        fields = {"norm": name, "n": len(fitted), "good": GOOD_FIT, "best": best}
        fields |= {"best_at": best_at, "worst": worst, "worst_at": worst_at}
        which = "all" if len(good) == len(fitted) else "some" if good else "none"
        if which == "some":
            fields |= {"good_count": len(good), "good_layers": ", ".join(good)}
        claims["summary"] = Claim(f"scurve.summary_{which}", fields)
    limits = {"linear": LINEAR_REACH, "one_arm": FLAT_REACH, "saturated": FLAT_REACH}
    for shape in SHAPES:
        members = [c.name for c in curves if c.fit.shape == shape]
        if members:
            fields = {"norm": name, "layers": ", ".join(members), "count": len(members)}
            fields["tie"] = LINE_TIE
            if shape in limits:
                fields["reach"] = limits[shape]
            claims[f"group_{shape}"] = Claim(f"scurve.group_{shape}", fields)
    both = [c for c in curves if c.fit.converged and c.erf.converged]
    gains = [c.erf.r2 - c.fit.r2 for c in both]  # Derf's curve's R² over DyT's, layer by layer
    if both:
        (lo, lo_at), (hi, hi_at) = (_extreme(both, gains, largest=m) for m in (False, True))
        fields = {"norm": name, "n": len(both), "tie": LINE_TIE, "lo": lo, "lo_at": lo_at}
        fields |= {"hi": hi, "hi_at": hi_at, "above": sum(g > LINE_TIE for g in gains)}
        fields["below"] = sum(g < -LINE_TIE for g in gains)  # the rest within LINE_TIE
        key = "apart" if fields["above"] + fields["below"] else "close"
        claims["erf"] = Claim(f"scurve.erf_{key}", fields)
    ratios = [c.ratio for c in curves]
    (lo, lo_at), (hi, hi_at) = (_extreme(list(curves), ratios, largest=m) for m in (False, True))
    fields = {"norm": name, "lo": lo, "lo_at": lo_at, "hi": hi, "hi_at": hi_at}
    return claims | {"divisors": Claim("scurve.divisors", fields)}


def _depth_claim(view: ScurveView) -> Claim:
    """Whether the tokens' denominators spread less in the first block's norms than in every
    later norm layer, in both models."""
    curves = [c for n in SCURVE_NORMS for c in view.curves[n]]
    first = [c.ratio for c in curves if c.name.startswith("blocks.0.")]
    later = [c.ratio for c in curves if not c.name.startswith("blocks.0.")]
    fields = {"first_hi": max(first), "later_lo": min(later), "later_hi": max(later)}
    key = "scurve.depth_grows" if max(first) < min(later) else "scurve.depth_mixed"
    return Claim(key, fields)


def _claims(view: ScurveView) -> dict[str, Claim]:
    """Every claim of the view, by slot: ``model``, ``sample``, ``depth``, ``r2_words`` (and
    ``r2_not_finite``), and per norm ``<norm>_<slot>`` of ``model_claims`` and
    ``<norm>_<layer>_<slot>`` of ``layer_claims``."""
    first = view.curves[SCURVE_NORMS[0]][0]
    caption = {"seed": view.seed, "layers": view.n_layer, "d": view.d, "steps": view.steps}
    caption |= {"tokens": view.tokens, "points": first.x.size}
    claims = {
        "model": Claim("scurve.model_caption", caption),
        # Every chart draws the same random positions and each layer's extremes: how many in
        # all differs by layer (an extreme may be among the positions), so that is not quoted.
        "sample": Claim(
            "scurve.sample_caption", {"sample": min(SAMPLE, first.x.size), "points": first.x.size}
        ),
        "depth": _depth_claim(view),
    }
    for norm in SCURVE_NORMS:
        claims |= {f"{norm}_{k}": c for k, c in model_claims(norm, view.curves[norm]).items()}
        for curve in view.curves[norm]:
            words = layer_claims(norm, curve)
            claims |= {f"{norm}_{curve.name}_{k}": c for k, c in words.items()}
    grids = {n: np.array([view.table(n)[k] for k in R2_KEYS]) for n in SCURVE_NORMS}
    words = lines_words("scurve.r2_words", FIT_FORMS, view.layers(), grids)
    claims |= {f"r2_{slot}": claim for slot, claim in words.items()}
    return claims
