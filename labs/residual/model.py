r"""A pre-norm residual stream in which a common offset accumulates, read by LayerNorm or RMSNorm.

A toy transformer trunk makes the article's point measurable (normalisation is part of the
residual path's geometry): n token vectors of width d, a stream :math:`h_0`, and L pre-norm blocks

.. math:: h_{l+1} = h_l + c\,\mathbf{1} + W_l\,\mathrm{norm}(h_l)

with :math:`(W_l)_{ij} \sim \mathcal{N}(0, 1/d)` (``RESIDUAL_FORMULA``): a common offset
:math:`c\,\mathbf{1}` (the drift) plus random features. ``simulate_residual`` reports what
:math:`W_l` is handed (:math:`z_l = \mathrm{norm}(h_l)`) and returns (:math:`p_l = W_l z_l`); an
extra :math:`W_L` reads the final stream. Both norms run on the same :math:`h_0` and weights.

LayerNorm removes the component along :math:`\mathbf{1}` before :math:`W_l` sees it; RMSNorm
divides it by the RMS and passes it on, so :math:`p_l` carries :math:`a_l W_l u` (u = 1/sqrt(d))
in every token alike. ``labs.residual.trained`` reads the shipped models' streams alike."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np

from core.defaults import DEFAULT_LAYER_EPS
from core.geometry import ones_direction
from core.norms import layer_norm, rms_norm
from core.stats import cosine
from labkit.chart_words import pair_words
from labkit.claims import Claim, at_least, at_most, both, close, pick

# Two lines, so that it fits a phone's width.
RESIDUAL_FORMULA = (
    r"\begin{gathered} h_{l+1} = h_l + c\,\mathbf{1} + W_l\,\mathrm{norm}(h_l), \\ "
    r"(W_l)_{ij} \sim \mathcal{N}(0, 1/d) \end{gathered}"
)

NORMS = ("layer", "rms")
# A handful of tokens shows the offset making them alike, at a matrix-vector product each per layer.
TOKENS = 8
# L + 1 weight matrices of d x d float64 are drawn one at a time; at these bounds a run draws
# 49 * 1024^2 normals (about 0.5 s on one core) and never holds more than one 8 MB matrix.
MAX_LAYERS = 48
STREAM_MAX_WIDTH = 1024
# A drift of 2 per block makes the offset dominate within a few layers. More only waits longer.
DRIFT_LIMIT = 2.0

QUANTITIES = (
    "stream_mean",
    "stream_cos_ones",
    "input_norm",
    "input_cos_ones",
    "input_share_ones",
    "output_norm",
    "output_cos_offset",
    "output_share_offset",
    "token_cosine",
)


def _check_int(value: object, *, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
    return int(value)


def _check_real(value: object, *, name: str, nonnegative: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite real number; got {value!r}")
    if nonnegative and value < 0:
        raise ValueError(f"{name} must be >= 0; got {value!r}")
    return float(value)


def initial_stream(*, n: int, d: int, seed: int) -> np.ndarray:
    """Token vectors :math:`h_0` of shape (n, d), standard normal, offset-free on average.

    Drawn from ``np.random.default_rng([seed, 0])``; the weights use other streams of the same
    seed, so changing L never changes :math:`h_0` or an earlier layer's weights."""
    return np.random.default_rng([seed, 0]).standard_normal((n, d))


def block_weight(layer: int, *, d: int, seed: int) -> np.ndarray:
    r"""Block ``layer``'s projection :math:`W_l`, shape (d, d), entries :math:`\mathcal{N}(0, 1/d)`.

    The variance 1/d keeps :math:`\lVert W z \rVert \approx \lVert z \rVert`, so each block adds
    features of about unit size per coordinate, whatever d is."""
    rng = np.random.default_rng([seed, 1, layer])
    # Drawn in float32, twice as fast (drawing is most of a run). Rounding changes no reading.
    draw = rng.standard_normal((d, d), dtype=np.float32).astype(np.float64)
    return draw / math.sqrt(d)


@dataclass(frozen=True)
class ResidualTrace:
    r"""What ``simulate_residual`` measured.

    ``readings[norm][quantity]`` has shape (L + 1,): index l is the reading of :math:`h_l`,
    l = 0 .. L, each the mean over the tokens. ``streams[norm]`` holds every :math:`h_l`, shape
    (L + 1, n, d). ``layers`` is ``arange(L + 1)``. The quantities, with
    :math:`z_l = \mathrm{norm}(h_l)` and :math:`p_l = W_l z_l`:

    - ``stream_mean``: mean coordinate of :math:`h_l`, the accumulated offset.
    - ``stream_cos_ones``: :math:`\cos(h_l, \mathbf{1})`.
    - ``input_norm``: :math:`\lVert z_l \rVert`.
    - ``input_cos_ones``: :math:`\cos(z_l, \mathbf{1})`.
    - ``input_share_ones``: share of :math:`z_l`'s energy along u,
      :math:`\langle z_l, u\rangle^2 / \lVert z_l \rVert^2`, which is the squared cosine.
    - ``output_norm``: :math:`\lVert p_l \rVert`.
    - ``output_cos_offset``: :math:`\cos(p_l, W_l \mathbf{1})`, "cosine with 1" carried through
      the projection (the plain cosine with 1 of a random projection's output is noise).
    - ``output_share_offset``: share of :math:`p_l`'s energy along :math:`W_l \mathbf{1}`.
    - ``token_cosine``: mean cosine between the projection outputs of different tokens.

    ``input_cos_ones_worst`` is the largest :math:`|\cos(z_l, \mathbf{1})|` over the tokens, not
    their mean: "orthogonal to 1" must hold for every token."""

    layers: np.ndarray
    readings: dict[str, dict[str, np.ndarray]]
    streams: dict[str, np.ndarray]
    eps: float
    d: int
    n: int


def _share(a: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Share of each row's energy along ``direction`` (a unit vector): (n, d) -> (n,)."""
    energy = np.sum(a**2, axis=-1)  # (n, d) -> (n,)
    along = (a @ direction) ** 2  # (n, d) -> (n,)
    # A zero row has no direction; it puts no energy anywhere.
    return np.where(energy > 0.0, along / np.where(energy > 0.0, energy, 1.0), 0.0)


def _mean_pairwise_cosine(p: np.ndarray) -> float:
    """Mean cosine over the n(n-1) ordered pairs of distinct rows of p, shape (n, d)."""
    n = p.shape[0]
    if n < 2:
        return 1.0
    cos = cosine(p[:, None, :], p[None, :, :])  # (n, 1, d), (1, n, d) -> (n, n)
    return float((np.sum(cos) - np.trace(cos)) / (n * (n - 1)))


def _read(
    h: np.ndarray, z: np.ndarray, p: np.ndarray, offset_image: np.ndarray
) -> dict[str, float]:
    """One layer's readings for one norm: h, z = norm(h), p = W z, all (n, d); W 1 of (d,)."""
    d = h.shape[-1]
    u = ones_direction(d)
    offset_unit = offset_image / np.linalg.norm(offset_image)
    cos_offset = cosine(p, offset_image)
    return {
        "stream_mean": float(np.mean(h)),
        "stream_cos_ones": float(np.mean(cosine(h, np.ones(d)))),
        "input_norm": float(np.mean(np.linalg.norm(z, axis=-1))),  # (n, d) -> (n,) -> ()
        "input_cos_ones": float(np.mean(cosine(z, np.ones(d)))),
        "input_cos_ones_worst": float(np.max(np.abs(cosine(z, np.ones(d))))),
        "input_share_ones": float(np.mean(_share(z, u))),
        "output_norm": float(np.mean(np.linalg.norm(p, axis=-1))),  # (n, d) -> (n,) -> ()
        "output_cos_offset": float(np.mean(cos_offset)),
        "output_share_offset": float(np.mean(_share(p, offset_unit))),
        "token_cosine": _mean_pairwise_cosine(p),
    }


def simulate_residual(
    *,
    layers: int = 12,
    d: int = 256,
    drift: float = 0.5,
    seed: int = 0,
    eps: float = DEFAULT_LAYER_EPS,
    n: int = TOKENS,
) -> ResidualTrace:
    """Run L pre-norm blocks (module docstring) twice, with LayerNorm and with RMSNorm; read them.

    Args:
        layers: L, the number of blocks, 1 .. ``MAX_LAYERS``.
        d: width of the stream, 2 .. ``MAX_WIDTH``.
        drift: c, the common offset each block writes along 1 (any finite value).
        seed: picks :math:`h_0` and every :math:`W_l` (see ``initial_stream``, ``block_weight``).
        eps: added to the variance (LayerNorm) or mean square (RMSNorm); both use the same eps
            and no weight or bias, so the two differ only by centring.
        n: number of tokens, 2 .. 64."""
    layers = _check_int(layers, name="layers", lo=1, hi=MAX_LAYERS)
    d = _check_int(d, name="d", lo=2, hi=STREAM_MAX_WIDTH)
    n = _check_int(n, name="n", lo=2, hi=64)
    seed = _check_int(seed, name="seed", lo=0, hi=2**63 - 1)
    drift = _check_real(drift, name="drift", nonnegative=False)
    eps = _check_real(eps, name="eps", nonnegative=True)
    norms = {"layer": layer_norm, "rms": rms_norm}
    h0 = initial_stream(n=n, d=d, seed=seed)
    streams = {name: [h0] for name in NORMS}
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in NORMS}
    for layer in range(layers + 1):
        weight = block_weight(layer, d=d, seed=seed)
        offset_image = np.sum(weight, axis=-1)  # W 1: (d, d) -> (d,)
        for name in NORMS:
            h = streams[name][-1]
            z = norms[name](h, eps=eps)
            p = z @ weight.T  # (n, d) @ (d, d) -> (n, d)
            rows[name].append(_read(h, z, p, offset_image))
            if layer < layers:
                streams[name].append(h + drift + p)
    readings = {
        name: {q: np.array([row[q] for row in rows[name]]) for q in rows[name][0]} for name in NORMS
    }
    return ResidualTrace(
        layers=np.arange(layers + 1),
        readings=readings,
        streams={name: np.stack(streams[name]) for name in NORMS},
        eps=eps,
        d=d,
        n=n,
    )


# --- What the residual page shows: the last projection's readings and the claims about them ----

# A reading of LayerNorm's output along 1 below this is rounding (float64 leaves about 1e-16).
ROUNDING = 1e-9
# A cosine with 1 below this counts as orthogonal: rounding a large offset out of a narrow stream
# (d = 2, an offset of 100 against a spread of 1e-4) leaves about 1e-10, a real component far more.
ORTHOGONAL = 1e-6
# The norm's output has length sqrt(d) "up to eps" when it is within this relative distance.
LENGTH_RTOL = 1e-3
# A share along W 1 counts as far above chance from ten times the 1/d a random direction holds.
ABOVE_CHANCE = 10.0
# Mean token cosines that differ by less than this count as "about as alike".
ALIKE = 0.1


@dataclass(frozen=True)
class ResidualView:
    r"""The residual page's state for one link: both trunks' readings and the claims.

    ``readings`` is ``ResidualTrace.readings``; ``last[norm][quantity]`` is the reading at the
    last projection (index L); ``stream_gap`` is
    :math:`\lVert h_L^{rms} - h_L^{layer} \rVert / \lVert h_L^{layer} \rVert` over all tokens
    and ``offset_gap`` the same relative difference of the two mean offsets."""

    layers: np.ndarray
    readings: dict[str, dict[str, np.ndarray]]
    last: dict[str, dict[str, float]]
    stream_gap: float
    offset_gap: float
    d: int
    n: int
    claims: dict[str, Claim]


def _stream_claims(last: dict, d: int, layers: int, drift: float, eps: float) -> dict:
    """The offset each stream carries and the length of what each norm hands on."""
    rms, lay = last["rms"], last["layer"]
    sqrt_d = math.sqrt(d)
    lengths = both(*(close(r["input_norm"], sqrt_d, rtol=LENGTH_RTOL) for r in (rms, lay)))
    offset = {"layers": layers, "offset_rms": rms["stream_mean"]}
    offset |= {"offset_layer": lay["stream_mean"], "total": layers * drift}
    return {
        "offset": Claim("residual.offset_reading", offset),
        "length": pick(
            lengths,
            "residual.length_sqrt_d",
            "residual.length_below",
            len_rms=rms["input_norm"],
            len_layer=lay["input_norm"],
            sqrt_d=sqrt_d,
            eps=eps,
        ),
    }


def _norm_claims(readings: dict, last: dict, d: int) -> dict:
    rms, lay = last["rms"], last["layer"]
    # At every layer: LayerNorm's output along 1, and how far RMSNorm turned the stream.
    # Orthogonal only if every token is, at every layer; the largest |cos| of any token is shown.
    worst_token = float(np.max(readings["layer"]["input_cos_ones_worst"]))
    turned = readings["rms"]["input_cos_ones"] - readings["rms"]["stream_cos_ones"]
    kept = float(np.max(np.abs(turned)))
    tokens = rms["token_cosine"] - lay["token_cosine"]
    if tokens >= ALIKE:
        tokens_key = "residual.tokens_rms_alike"
    elif tokens <= -ALIKE:
        tokens_key = "residual.tokens_layer_alike"
    else:
        tokens_key = "residual.tokens_both"
    return {
        "layer": pick(
            at_most(worst_token, ORTHOGONAL),
            "residual.explain_layer",
            "residual.explain_layer_leaks",
            noise=ROUNDING,
            cos_layer=lay["input_cos_ones"],
            worst=worst_token,
        ),
        "rms": pick(
            at_most(kept, ROUNDING),
            "residual.explain_rms",
            "residual.explain_rms_turned",
            cos_rms=rms["input_cos_ones"],
            share_rms=rms["input_share_ones"],
        ),
        "share": pick(
            at_least(rms["output_share_offset"], ABOVE_CHANCE / d),
            "residual.share_above_chance",
            "residual.share_near_chance",
            out_rms=rms["output_share_offset"],
            out_layer=lay["output_share_offset"],
            random=1.0 / d,
        ),
        "tokens": Claim(
            tokens_key,
            {"tok_rms": rms["token_cosine"], "tok_layer": lay["token_cosine"], "alike": ALIKE},
        ),
    }


# The figure's summary reads the stream's offset and the cosine with 1 of what each norm hands on.
SUMMARY_PANELS = ("stream_mean", "input_cos_ones")
# LayerNorm hands on a centred z, whose cosine with 1 is rounding. The stream's mean never is.
SUMMARY_NOISE = {"stream_mean": 0.0, "input_cos_ones": ROUNDING}


def _chart_words(layers: np.ndarray, readings: dict) -> dict[str, Claim]:
    """The figure's summary, its caption and accessible name (``labkit.chart_words``): each
    panel of ``SUMMARY_PANELS``, both trunks' extremes by layer and where they part most."""
    claims = {}
    for panel in SUMMARY_PANELS:
        words = pair_words(
            f"residual.figure_{panel}",
            list(layers),
            readings["rms"][panel],
            readings["layer"][panel],
            noise=SUMMARY_NOISE[panel],
        )
        claims |= {f"figure_{panel}_{slot}": claim for slot, claim in words.items()}
    return claims


def residual_view(
    *, layers: int, d: int, drift: float, seed: int, eps: float = DEFAULT_LAYER_EPS
) -> ResidualView:
    """``simulate_residual`` for one link state, read at the last projection, with its claims."""
    trace = simulate_residual(layers=layers, d=d, drift=drift, seed=seed, eps=eps)
    last = {
        name: {q: float(values[-1]) for q, values in trace.readings[name].items()} for name in NORMS
    }
    h_rms, h_layer = trace.streams["rms"][-1], trace.streams["layer"][-1]  # (n, d) each
    stream_gap = float(np.linalg.norm(h_rms - h_layer) / np.linalg.norm(h_layer))
    m_rms, m_layer = last["rms"]["stream_mean"], last["layer"]["stream_mean"]
    offset_gap = abs(m_rms - m_layer) / max(abs(m_rms), abs(m_layer), np.finfo(float).tiny)
    claims = {
        **_stream_claims(last, d, layers, drift, eps),
        **_norm_claims(trace.readings, last, d),
        "swap": pick(
            at_most(offset_gap, stream_gap),
            "residual.explain_swap",
            "residual.explain_swap_offsets_too",
            layers=layers,
            gap_pct=stream_gap,
            offset_gap_pct=offset_gap,
            offset_rms=m_rms,
            offset_layer=m_layer,
        ),
        "table": Claim("residual.table_caption", {"n": trace.n, "layers": layers, "random": 1 / d}),
    }
    claims |= _chart_words(trace.layers, trace.readings)
    return ResidualView(
        trace.layers, trace.readings, last, stream_gap, offset_gap, d, trace.n, claims
    )
