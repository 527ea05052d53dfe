r"""The backward pass of RMSNorm and LayerNorm for one vector: Jacobians, spectra, gradients.

Back-propagation sends an upstream gradient :math:`g = \partial L / \partial y` through the norm
as :math:`\partial L / \partial x = J^\top g`. Whatever direction J flattens, the input gradient
cannot contain. Without a weight the spectra are known in closed form:

- RMSNorm, :math:`r = \sqrt{\overline{x^2} + \epsilon}`: :math:`d - 1` eigenvalues equal
  :math:`1/r` (every direction perpendicular to x) and one, along x, equals
  :math:`\epsilon / r^3`.
- LayerNorm, :math:`\sigma = \sqrt{\operatorname{Var}(x) + \epsilon}`: the eigenvalue along
  :math:`\mathbf{1}` is 0 for every eps, the one along :math:`x - \mu` is
  :math:`\epsilon / \sigma^3`, and the other :math:`d - 2` equal :math:`1/\sigma`.

So with eps = 0 both flatten the direction of x and LayerNorm also flattens 1; a positive eps
only damps the direction of x, by :math:`\epsilon/r^2` (or :math:`\epsilon/\sigma^2`) of what the
other directions pass."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.inputs import make_input
from core.jacobian import jacobian_spectrum, layer_norm_jacobian, rms_norm_jacobian
from core.norms import mean_square, rms_denominator, std_denominator, variance
from core.stats import cosine
from labkit.chart_words import grid_words, pair_words
from labkit.claims import Claim, Verdict, at_least, at_most, both, pick

# A d x d heatmap stays readable, and its eigen-decomposition instant, up to this width.
MAX_JACOBIAN_WIDTH = 64
# A direction counts as flattened when the norm passes less than this fraction of what it passes
# perpendicular to it (eps/r^2 for RMSNorm along x): eps = 1e-5 against mean(x^2) = 1 passes
# 1e-5 of it, while eps of order mean(x^2) passes a share a reader would see.
FLAT_TOLERANCE = 1e-3
# Upstream gradients: the all-ones direction, the direction of x itself, a seeded random one.
GRADIENTS = ("ones", "x", "random")
# Closed form against eigvalsh: a symmetric d x d eigensolver is accurate to a few ulps of the
# largest eigenvalue, so 1e-9 of it leaves room for d = 64 and still catches a wrong formula.
SPECTRUM_RTOL = 1e-9


@dataclass(frozen=True)
class Components:
    """A vector split against the unit ones direction u and the unit direction of x.

    ``ones`` is <v, u>, ``radial`` is <v, x/|x|>, ``norm`` is |v|. The two directions are not
    orthogonal unless mean(x) = 0, so the two numbers are read separately, not as a sum."""

    ones: float
    radial: float
    norm: float


@dataclass(frozen=True)
class BackwardLesson:
    """Everything the backward-pass page shows for one x, eps and upstream gradient."""

    x: np.ndarray  # (d,)
    eps: float
    rms_stat: float  # r = sqrt(mean(x^2) + eps)
    layer_stat: float  # sigma = sqrt(mean((x - mu)^2) + eps)
    upstream: np.ndarray  # (d,), unit length
    jacobian_rms: np.ndarray  # (d, d)
    jacobian_layer: np.ndarray  # (d, d)
    eig_rms: np.ndarray  # (d,), ascending
    eig_layer: np.ndarray  # (d,), ascending
    grad_rms: np.ndarray  # (d,), J_rms^T g
    grad_layer: np.ndarray  # (d,), J_layer^T g
    flat_rms: int
    flat_layer: int
    parts: dict[str, Components]  # "upstream", "rms", "layer"


def upstream_gradient(x: np.ndarray, kind: str, *, seed: int = 0) -> np.ndarray:
    """The upstream gradient ``dL/dy`` of the lesson, scaled to unit length; shape (d,).

    ``ones``: all ones; ``x``: x itself (the radial direction); ``random``: Gaussian draws from
    ``np.random.default_rng([seed, 2])``, a stream apart from the one that drew x."""
    x = np.asarray(x, dtype=np.float64)
    if kind == "ones":
        g = np.ones_like(x)
    elif kind == "x":
        g = x.copy()
    elif kind == "random":
        g = np.random.default_rng([seed, 2]).standard_normal(x.shape[-1])
    else:
        raise ValueError(f"kind must be one of {', '.join(GRADIENTS)}; got {kind!r}")
    length = float(np.linalg.norm(g))
    if length == 0.0:
        raise ValueError("the upstream gradient is the zero vector (x = 0 with kind='x')")
    return g / length


def components(v: np.ndarray, x: np.ndarray) -> Components:
    """Components of ``v`` along the unit ones direction and along ``x / |x|``."""
    d = x.shape[-1]
    length = float(np.linalg.norm(x))
    radial = float(v @ x) / length if length > 0 else 0.0
    return Components(float(np.sum(v)) / np.sqrt(d), radial, float(np.linalg.norm(v)))


def _flat_count(eigenvalues: np.ndarray) -> int:
    top = float(np.max(np.abs(eigenvalues)))
    return int(np.sum(np.abs(eigenvalues) <= FLAT_TOLERANCE * top)) if top > 0 else len(eigenvalues)


def backward_lesson(
    x: np.ndarray, *, eps: float, gradient: str = "random", seed: int = 0
) -> BackwardLesson:
    r"""Both Jacobians (no weight), their spectra and :math:`J^\top g` for one upstream g.

    Without a weight both Jacobians are symmetric: :math:`J^\top g = J g`. Raises ValueError for
    ``d > MAX_JACOBIAN_WIDTH`` and where ``core.jacobian`` does (x = 0 or constant x, eps = 0)."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    if d > MAX_JACOBIAN_WIDTH:
        raise ValueError(f"d must be at most {MAX_JACOBIAN_WIDTH} for the Jacobian; got {d}")
    g = upstream_gradient(x, gradient, seed=seed)
    per_norm: dict[str, np.ndarray | int] = {}
    parts = {"upstream": components(g, x)}
    for kind, jacobian in (("rms", rms_norm_jacobian), ("layer", layer_norm_jacobian)):
        j = jacobian(x, eps=eps)  # (d, d)
        eig = jacobian_spectrum(j)
        grad = j.T @ g
        per_norm |= {
            f"jacobian_{kind}": j,
            f"eig_{kind}": eig,
            f"grad_{kind}": grad,
            f"flat_{kind}": _flat_count(eig),
        }
        parts[kind] = components(grad, x)
    return BackwardLesson(
        x=x,
        eps=float(eps),
        rms_stat=float(rms_denominator(x, eps)[0]),  # (d,) -> (1,)
        layer_stat=float(std_denominator(x, eps)[0]),  # (d,) -> (1,)
        upstream=g,
        parts=parts,
        **per_norm,
    )


@dataclass(frozen=True)
class BackwardView:
    """The page state: the lesson (None where a Jacobian does not exist) and its claims.

    ``undefined`` names the norm whose Jacobian does not exist at eps = 0 ("rms" for x = 0,
    "layer" for a constant x), else None."""

    lesson: BackwardLesson | None
    undefined: str | None
    claims: dict[str, Claim]
    # Below this a Jacobian entry or a component is rounding noise (shown as "≈ 0").
    noise: float = 0.0


def backward_view(d: int, offset: float, eps: float, seed: int, grad: str) -> BackwardView:
    """Everything the backward-pass page shows for one link state."""
    x = make_input(d, seed=seed, offset=offset)
    try:
        lesson = backward_lesson(x, eps=eps, gradient=grad, seed=seed)
    except ValueError as err:
        if "d must be" in str(err):
            raise
        undefined = "rms" if not np.any(x) else "layer"
        return BackwardView(None, undefined, {})
    noise = _noise(lesson)
    return BackwardView(lesson, None, _claims(lesson, noise) | _chart_words(lesson, noise), noise)


def _chart_words(lesson: BackwardLesson, noise: float) -> dict[str, Claim]:
    """Each chart's caption and accessible name (``labkit.chart_words``): the Jacobians', spectra's
    (k from 1) and input gradients' extremes and where they part most, and the component bars."""
    d = lesson.x.shape[-1]
    charts = {
        "heatmap": grid_words(
            "backward.heatmap_words", lesson.jacobian_rms, lesson.jacobian_layer, noise=noise
        ),
        "spectrum": pair_words(
            "backward.spectrum_words",
            list(range(1, d + 1)),
            lesson.eig_rms,
            lesson.eig_layer,
            noise=noise,
        ),
        # The gradient sums d entries of a row against a unit g: at most sqrt(d) entries' noise.
        "gradient": pair_words(
            "backward.gradient_words",
            list(range(d)),
            lesson.grad_rms,
            lesson.grad_layer,
            noise=noise * math.sqrt(d),
        ),
    }
    claims = {
        f"{chart}_{slot}": claim for chart, words in charts.items() for slot, claim in words.items()
    }
    bars = {k: v for k, v in _component_fields(lesson).items() if k.endswith(("_ones", "_x"))}
    claims["components_words"] = Claim("backward.components_words", bars, noise)
    return claims


def _claims(lesson: BackwardLesson, noise: float) -> dict[str, Claim]:
    upstream = {k: v for k, v in _component_fields(lesson).items() if k in ("g_ones", "g_x")}
    return {
        "components_upstream": Claim("backward.components_upstream", upstream, noise),
        "heatmap": _heatmap_claim(lesson),
        "spectrum_rms": _spectrum_claim(lesson, "rms"),
        "spectrum_layer": _spectrum_claim(lesson, "layer"),
        "components_layer": _layer_components_claim(lesson),
        "components_rms": _rms_components_claim(lesson),
        "components_conclusion": _conclusion_claim(lesson),
        "components_why": Claim(
            "backward.components_why", {"cos": float(cosine(np.ones_like(lesson.x), lesson.x))}
        ),
    }


def _noise(lesson: BackwardLesson) -> float:
    """Rounding noise of a Jacobian entry or a component: a few ulps of d over the statistic."""
    d = lesson.x.shape[-1]
    top = max(1 / lesson.rms_stat, 1 / lesson.layer_stat)
    return 1e-12 * d * top


def _heatmap_claim(lesson: BackwardLesson) -> Claim:
    d = lesson.x.shape[-1]
    rows_layer = lesson.jacobian_layer.sum(axis=1)  # (d, d) -> (d,)
    rows_rms = lesson.jacobian_rms.sum(axis=1)  # (d, d) -> (d,)
    diag_rms = np.diag(lesson.jacobian_rms)
    noise = _noise(lesson)
    fields = {"inv_r": 1 / lesson.rms_stat, "diag_rms_lo": float(diag_rms.min())}
    fields |= {"diag_rms_hi": float(diag_rms.max()), "sub_layer": 1 / (d * lesson.layer_stat)}
    fields["row_sum_layer"] = float(np.max(np.abs(rows_layer)))
    fields |= {"row_min_rms": float(rows_rms.min()), "row_max_rms": float(rows_rms.max())}
    rows_vanish = at_most(fields["row_sum_layer"], noise)
    return pick(
        rows_vanish,
        "backward.heatmap_caption",
        "backward.heatmap_caption_rows",
        noise=noise,
        **fields,
    )


def _spectrum_matches(eig: np.ndarray, expected: np.ndarray, scale: float) -> Verdict:
    """The sorted eigenvalues against the closed form, to SPECTRUM_RTOL of the largest."""
    gap = float(np.max(np.abs(np.sort(expected) - eig)))
    return at_most(gap, SPECTRUM_RTOL * scale)


# Per norm: the field naming 1/s, the eigenvalues it pins at 0 (LayerNorm's along 1), and the
# moment whose root (plus eps) is its statistic s.
_SPECTRA = {
    "rms": ("inv_r", 0, "mean_square", mean_square),
    "layer": ("inv_sigma", 1, "variance", variance),
}


def _spectrum_claim(lesson: BackwardLesson, kind: str) -> Claim:
    """The closed-form spectrum of ``kind``'s Jacobian (module docstring) against eigvalsh's."""
    inv_name, zeros, moment_name, moment = _SPECTRA[kind]
    d, eps, s = lesson.x.shape[-1], lesson.eps, getattr(lesson, f"{kind}_stat")
    eig = getattr(lesson, f"eig_{kind}")
    along = eps / s**3
    rest = d - 1 - zeros
    expected = np.array([0.0] * zeros + [along] + [1 / s] * rest)
    fields = {"rest": rest, inv_name: 1 / s, "along": along, "ratio_pct": eps / s**2}
    fields |= {moment_name: float(moment(lesson.x)[0]), "eps": eps, "min": float(eig[0])}
    fields["max"] = float(eig[-1])
    if not _spectrum_matches(eig, expected, 1 / s):
        return Claim(f"backward.spectrum_{kind}_range", fields)
    flat = at_most(eps / s**2, FLAT_TOLERANCE)
    stem = f"backward.spectrum_{kind}" + ("_d2" if kind == "layer" and d == 2 else "")
    return pick(flat, f"{stem}_flat", f"{stem}_damped", **fields)


def _component_fields(lesson: BackwardLesson) -> dict[str, float]:
    """Each vector's parts along 1 and along x (the upstream's as ``g``), and the moments."""
    fields: dict[str, float] = {}
    for name, part in (("g", "upstream"), ("rms", "rms"), ("layer", "layer")):
        fields |= {f"{name}_ones": lesson.parts[part].ones, f"{name}_x": lesson.parts[part].radial}
    fields["mean_square"] = float(mean_square(lesson.x)[0])
    fields["variance"] = float(variance(lesson.x)[0])
    return fields | {"eps": lesson.eps, "tol_pct": FLAT_TOLERANCE}


def _gone(value: float, stat: float) -> Verdict:
    """A component is gone when it is below FLAT_TOLERANCE of what the norm passes (1/stat)
    of a unit upstream gradient perpendicular to the flattened directions."""
    return at_most(abs(value), FLAT_TOLERANCE / stat)


def _layer_components_claim(lesson: BackwardLesson) -> Claim:
    fields = _component_fields(lesson)
    sigma = lesson.layer_stat
    ones_gone = _gone(fields["layer_ones"], sigma)
    if not ones_gone:
        return Claim("backward.components_layer_plain", fields, _noise(lesson))
    x_gone = _gone(fields["layer_x"], sigma)
    return pick(
        x_gone,
        "backward.components_layer_gone",
        "backward.components_layer_x_left",
        noise=_noise(lesson),
        **fields,
    )


def _rms_components_claim(lesson: BackwardLesson) -> Claim:
    fields = _component_fields(lesson)
    r = lesson.rms_stat
    x_gone = _gone(fields["rms_x"], r).holds
    ones_gone = _gone(fields["rms_ones"], r).holds
    key = {
        (True, False): "backward.components_rms_x_gone",
        (True, True): "backward.components_rms_both_small",
        (False, False): "backward.components_rms_x_left",
        (False, True): "backward.components_rms_x_left_ones_small",
    }[(x_gone, ones_gone)]
    return Claim(key, fields, _noise(lesson))


def _conclusion_claim(lesson: BackwardLesson) -> Claim:
    """What each norm does to the direction of 1: J 1 (J is symmetric, so also J^T 1)."""
    d = lesson.x.shape[-1]
    unit = np.ones(d) / math.sqrt(d)
    layer_image = float(np.linalg.norm(lesson.jacobian_layer @ unit))
    rms_image = float(np.linalg.norm(lesson.jacobian_rms @ unit))
    verdict = both(
        at_most(layer_image, _noise(lesson)), at_least(rms_image, FLAT_TOLERANCE / lesson.rms_stat)
    )
    return pick(
        verdict,
        "backward.components_conclusion",
        "backward.components_conclusion_plain",
        noise=_noise(lesson),
        layer_image=layer_image,
        rms_image=rms_image,
    )
