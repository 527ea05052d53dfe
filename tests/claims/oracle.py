"""Oracle helpers more than one claims module uses; nothing here imports ``core``.

- ``round_to``: a float rounded correctly to a narrower dtype (a scalar model of one rounding);
- ``f_norm``: RMSNorm or LayerNorm of float64 rows by ``torch.nn.functional``;
- ``ulps``: a tolerance of some units in the last place of a dtype, scaled by the operands;
- the invariance lab's documented setup (``preactivations``, ``changes``, ``residuals``) and
  Table 1 of Zhang & Sennrich (2019);
- the residual page's documented synthetic trunk (``trunk``, ``cosines``, ``token_cosine``).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch
import torch.nn.functional as F

# --- one rounding, written out ------------------------------------------------------------------

SIGNIFICAND = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
MIN_EXP = {"float64": -1022, "float32": -126, "float16": -14, "bfloat16": -126}
MAX_FINITE = {
    "float64": 1.7976931348623157e308,
    "float32": 3.4028234663852886e38,
    "float16": 65504.0,
    "bfloat16": 3.3895313892515355e38,
}


def round_to(v: float, dtype: str) -> float:
    """``v`` rounded to nearest, ties to even, in ``dtype`` (subnormals and overflow included)."""
    if v == 0 or not math.isfinite(v):
        return v
    bits = SIGNIFICAND[dtype]
    exponent = max(math.frexp(v)[1] - 1, MIN_EXP[dtype])
    step = 2.0 ** (exponent - bits + 1)
    rounded = round(v / step) * step  # exact scaling by a power of two; round() ties to even
    return math.copysign(math.inf, v) if abs(rounded) > MAX_FINITE[dtype] else rounded


def ulps(count: float, magnitude: float, dtype: str = "float64") -> float:
    """``count`` units in the last place of ``dtype`` at ``magnitude`` (the operands' size)."""
    return count * 2.0 ** (1 - SIGNIFICAND[dtype]) * abs(magnitude)


def f_norm(name: str, a: np.ndarray, eps: float) -> np.ndarray:
    """RMSNorm ("rms") or LayerNorm ("layer") over the last axis, no gain, float64 torch."""
    t = torch.from_numpy(np.asarray(a, dtype=np.float64))
    d = t.shape[-1]
    out = F.rms_norm(t, (d,), eps=eps) if name == "rms" else F.layer_norm(t, (d,), eps=eps)
    return out.numpy()


# --- the invariance lab's setup -----------------------------------------------------------------

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
CASES, INPUTS, UNITS = 16, 8, 8


def preactivations(seed: int, transform: str, size: float) -> tuple[np.ndarray, np.ndarray]:
    """A = x W^T + b before and after the change, drawn as the lab documents it: one generator
    seeded with ``seed`` draws the batch, the weights, then whatever the change draws."""
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((CASES, INPUTS)), rng.standard_normal((UNITS, INPUTS))
    x2, w2, b2 = x.copy(), w.copy(), np.zeros(UNITS)
    if transform == "weight_matrix_rescale":
        w2 *= size
    elif transform == "weight_matrix_recenter":
        w2 += size * rng.standard_normal(INPUTS)  # the same gamma on every row
    elif transform == "weight_vector_rescale":
        w2[rng.integers(UNITS)] *= size
    elif transform == "dataset_rescale":
        x2 *= size
    elif transform == "dataset_recenter":
        x2 += size * rng.standard_normal(INPUTS)
    elif transform == "single_case_rescale":
        x2[rng.integers(CASES)] *= size
    elif transform == "shift_ones":
        b2 += size
    else:
        w2 = w * -size
    before = np.einsum("nm,dm->nd", x, w)
    return before, np.einsum("nm,dm->nd", x2, w2) + b2


@lru_cache(maxsize=256)
def changes(seed: int, transform: str, size: float) -> dict[str, np.ndarray]:
    """Per case and norm, eps = 0: |y' - y| / sqrt(d) and |y' + y| / sqrt(d), each (n,)."""
    a, a2 = preactivations(seed, transform, size)
    out = {}
    for name in ("rms", "layer"):
        y, y2 = f_norm(name, a, 0.0), f_norm(name, a2, 0.0)
        out[name] = np.sqrt(np.einsum("nd,nd->n", y2 - y, y2 - y) / UNITS)
        out[f"{name}_flip"] = np.sqrt(np.einsum("nd,nd->n", y2 + y, y2 + y) / UNITS)
    return out


def residuals(seed: int, transform: str, size: float) -> tuple[float, float]:
    """(LayerNorm's, RMSNorm's) largest change over the cases."""
    ch = changes(seed, transform, size)
    return float(max(ch["layer"])), float(max(ch["rms"]))


# --- the residual page's synthetic trunk --------------------------------------------------------

TOKENS = 8


@lru_cache(maxsize=8)
def trunk(layers: int, d: int, drift: float, seed: int, eps: float) -> dict:
    """Per norm: the streams h_0..h_L (L+1, n, d), the inputs z and outputs p of every
    projection; and each projection's W 1 (L+1, d). Drawn as the page documents: h_0 from
    ``default_rng([seed, 0])``, block l's weight from ``default_rng([seed, 1, l])`` in float32,
    scaled by 1/sqrt(d)."""
    h0 = np.random.default_rng([seed, 0]).standard_normal((TOKENS, d))
    weights = [
        torch.from_numpy(
            np.random.default_rng([seed, 1, layer]).standard_normal((d, d), dtype=np.float32)
        ).double()
        / math.sqrt(d)
        for layer in range(layers + 1)
    ]
    ones = torch.ones(d, dtype=torch.float64)
    out = {"w1": np.stack([F.linear(ones, w).numpy() for w in weights])}
    for name in ("rms", "layer"):
        h = torch.from_numpy(h0)
        hs, zs, ps = [], [], []
        for w in weights:
            z = torch.from_numpy(f_norm(name, h.numpy(), eps))
            p = F.linear(z, w)
            hs.append(h.numpy()), zs.append(z.numpy()), ps.append(p.numpy())
            h = h + drift + p
        out[name] = {"h": np.stack(hs), "z": np.stack(zs), "p": np.stack(ps)}
    return out


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` (..., d) with the vector ``b`` (d,); 0 for a zero row, as the
    pages document (a collapsed output shares no direction)."""
    lengths = np.linalg.norm(a, axis=-1) * np.linalg.norm(b)
    dots = np.einsum("...d,d->...", a, b)
    return np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 0)


def token_cosine(p: np.ndarray) -> float:
    """Mean cosine over the ordered pairs of distinct rows of p (n, d); a pair with a zero row
    counts 0."""
    lengths = np.linalg.norm(p, axis=-1, keepdims=True)
    unit = np.divide(p, lengths, out=np.zeros_like(p), where=lengths > 0)
    n, whole = p.shape[0], int(np.count_nonzero(lengths))
    total = np.linalg.norm(unit.sum(axis=0)) ** 2  # every pair, and each whole row with itself
    return float((total - whole) / (n * (n - 1)))


# --- words for a chart ----------------------------------------------------------------------------


def _first_at(where: list, at: object) -> int:
    """The position ``at`` quotes, as an index into the chart's points."""
    assert at in where, (at, where[:5])
    return where.index(at)


def check_pair_words(
    claim, where, rms, layer, rtol: float = 0.0, scale: float | None = None
) -> None:
    """A chart's summary of RMSNorm beside LayerNorm, from the values it draws at ``where``:
    each norm's smallest and largest finite value, each quoted at a position that holds it, and
    the largest |RMSNorm - LayerNorm| over positions where both are finite, with the sentence for
    equal outputs exactly when that is 0; a count of the values that are not finite. ``rtol``:
    where the oracle recomputes the drawn values another way (a median by ``statistics``), how
    far apart, relative to the largest value, the two may be. A norm whose values are equal up
    to rounding is named flat (:func:`check_flat`, ``scale`` as there)."""
    where = [w.item() if hasattr(w, "item") else w for w in where]
    a = [float(v) for v in rms]
    b = [float(v) for v in layer]
    assert len(a) == len(b) == len(where)
    f = claim.fields
    bad = sum(1 for v in a + b if not math.isfinite(v))
    if claim.key == "charts.not_finite":
        assert f["count"] == bad > 0 and f["total"] == 2 * len(where), (f, bad)
        return
    pairs = [(p, q) for p, q in zip(a, b, strict=True) if math.isfinite(p) and math.isfinite(q)]
    if claim.key == "charts.no_finite":
        assert not pairs and f["total"] == 2 * len(where)
        return
    tol = rtol * max(abs(v) for v in a + b if math.isfinite(v))

    def same(p: float, q: float) -> bool:
        return p == q or abs(p - q) <= tol

    for name, values in (("rms", a), ("layer", b)):
        finite = sorted(v for v in values if math.isfinite(v))
        assert same(f[f"{name}_lo"], finite[0]) and same(f[f"{name}_hi"], finite[-1]), (name, f)
        assert same(values[_first_at(where, f[f"{name}_lo_at"])], finite[0]), name
        assert same(values[_first_at(where, f[f"{name}_hi_at"])], finite[-1]), name
    top = max(abs(p - q) for p, q in pairs)
    assert same(f["gap"], top), (f["gap"], top)
    i = _first_at(where, f["gap_at"])
    assert same(abs(a[i] - b[i]), top)
    noise = check_flat(claim, {"rms": a, "layer": b}, scale)
    if claim.key.endswith("flat"):
        return
    if tol == 0:
        assert claim.key.endswith("_equal") == (top <= noise), (claim.key, top)
    else:  # equal only where the oracle's values are equal up to its tolerance
        assert not claim.key.endswith("_equal") or top <= 2 * tol + noise, (claim.key, top)


FLAT_ENDINGS = ("_rms_flat", "_layer_flat", "_flat")


def pair_keys(base: str) -> list[str]:
    """Every key a pair chart's words may take: ``base``, equal, and the flat endings."""
    return [base, f"{base}_equal"] + [base + ending for ending in FLAT_ENDINGS]


def chart_of(key: str) -> str:
    """The chart a words key speaks of: ``key`` without ``_words`` and its endings."""
    for ending in ("_equal", *FLAT_ENDINGS):
        key = key.removesuffix(ending)
    return key.removesuffix("_words")


def check_flat(claim, groups: dict, scale: float | None = None) -> float:
    """The flat groups a chart's words name (``_flat``, ``_<group>_flat``): exactly those whose
    finite values lie within the claim's rounding level of each other; that level is float64
    rounding, at most 1e-9 of ``scale`` (the size of what the values come from; by default the
    largest |value| drawn, at least 1). Returns the level."""
    noise = claim.noise_of(f"{next(iter(groups))}_lo")
    finite = {n: [v for v in vs if math.isfinite(v)] for n, vs in groups.items()}
    if scale is None:
        scale = max([1.0] + [abs(v) for vs in finite.values() for v in vs])
    assert 0 <= noise <= 1e-9 * scale, (claim.key, noise, scale)
    flat = [n for n, vs in finite.items() if noise > 0 and max(vs) - min(vs) <= noise]
    if not flat:
        ending = ""
    elif len(flat) == len(groups):
        ending = "_flat"
    else:
        ending = "".join(f"_{n}" for n in flat) + "_flat"
    named = claim.key.removesuffix("_equal")
    assert named.endswith(ending) and (ending or not named.endswith("_flat")), (claim.key, flat)
    return noise


def check_point_words(claim, rms, layer, **others: float) -> None:
    """A picture's points: RMSNorm(x) and LayerNorm(x) where they are drawn, the straight-line
    distance between them (no distance where a point is not finite), the other numbers quoted."""
    f = claim.fields
    a, b = [float(v) for v in rms], [float(v) for v in layer]
    for i, (p, q) in enumerate(zip(a, b, strict=True)):
        for field, value in ((f"rms_{i}", p), (f"layer_{i}", q)):
            assert f[field] == value or (math.isnan(value) and math.isnan(f[field])), field
    for name, value in others.items():
        assert f[name] == value, name
    finite = all(math.isfinite(v) for v in a + b)
    assert claim.key.endswith("_not_finite") == (not finite), claim.key
    if finite:
        distance = math.dist(a, b)
        assert abs(f["gap"] - distance) <= 1e-12 * max(distance, max(map(abs, a + b))), (
            f["gap"],
            distance,
        )


def check_grid_words(claim, rms, layer, scale: float | None = None) -> None:
    """Two heat maps' summary: as :func:`check_pair_words` over every entry (row by row), each
    position quoted as a row and a column counted from 0."""
    rms, layer = np.asarray(rms, dtype=float), np.asarray(layer, dtype=float)
    assert rms.shape == layer.shape and rms.ndim == 2
    where = [(i, j) for i in range(rms.shape[0]) for j in range(rms.shape[1])]
    fields = {}
    for name, value in claim.fields.items():
        if name.endswith("_row"):
            stem = name.removesuffix("_row")
            fields[f"{stem}_at"] = (value, claim.fields[f"{stem}_col"])
        elif not name.endswith("_col"):
            fields[name] = value
    as_pair = type(claim)(claim.key, fields, claim.noise)
    check_pair_words(as_pair, where, rms.ravel().tolist(), layer.ravel().tolist(), scale=scale)


def check_lines_words(claim, rows, where, grids: dict, rtol: float = 0.0) -> None:
    """A chart of lines named by ``rows`` (eps values, dtypes) at the positions ``where``: per
    group, its smallest and largest finite value, each quoted at a line and a position that hold
    it; a count of the values that are not finite over the chart, or the sentence for a group
    with none. ``rtol`` as in :func:`check_pair_words`, relative to the group's largest |value|."""
    rows = [r.item() if hasattr(r, "item") else r for r in rows]
    where = [w.item() if hasattr(w, "item") else w for w in where]
    lines = {}
    for name, grid in grids.items():
        grid = [list(grid)] if np.ndim(grid) == 1 else [list(line) for line in grid]
        assert len(grid) == len(rows) and all(len(line) == len(where) for line in grid)
        lines[name] = [[float(v) for v in line] for line in grid]
    every = [v for grid in lines.values() for line in grid for v in line]
    bad = sum(1 for v in every if not math.isfinite(v))
    f = claim.fields
    if claim.key in ("charts.not_finite", "charts.lines_no_finite"):
        assert f["count"] == bad > 0 and f["total"] == len(every), (f, bad)
        empty = [n for n, g in lines.items() if not any(math.isfinite(v) for ln in g for v in ln)]
        assert bool(empty) == (claim.key == "charts.lines_no_finite"), empty
        return
    for name, grid in lines.items():
        finite = sorted(v for line in grid for v in line if math.isfinite(v))
        tol = rtol * max(abs(finite[0]), abs(finite[-1]))
        for end, value in (("lo", finite[0]), ("hi", finite[-1])):
            shown = f[f"{name}_{end}"]
            assert shown == value or abs(shown - value) <= tol, (name, end, shown, value)
            line = grid[_first_at(rows, f[f"{name}_{end}_row"])]
            at = line[_first_at(where, f[f"{name}_{end}_at"])]
            assert at == value or abs(at - value) <= tol, (name, end)
    check_flat(claim, {n: [v for line in g for v in line] for n, g in lines.items()})


def check_series_words(claim, where, values, rtol: float = 0.0, atol: float = 0.0) -> None:
    """One series' summary: its smallest and largest finite value, each quoted at a position
    that holds it, the sentence for equal values exactly when they are (with ``rtol`` > 0: when
    they lie within ``rtol`` of the largest |value| of each other); a count of the values that
    are not finite.

    ``atol`` > 0: values recomputed another way, up to ``atol`` of the page's rounding; the
    extremes and the values at their positions within it, the sentence for equal values only
    where the extremes lie within twice it of each other."""
    where = [w.item() if hasattr(w, "item") else w for w in where]
    values = [float(v) for v in values]
    assert len(values) == len(where)
    f = claim.fields
    finite = sorted(v for v in values if math.isfinite(v))
    if claim.key == "charts.not_finite":
        assert f["count"] == len(values) - len(finite) > 0 and f["total"] == len(values)
        return
    if claim.key == "charts.no_finite_values":
        assert not finite and f["total"] == len(values)
        return
    if atol > 0:
        for end, value in (("lo", finite[0]), ("hi", finite[-1])):
            assert abs(f[end] - value) <= atol, (end, f[end], value)
            assert abs(values[where.index(f[f"{end}_at"])] - value) <= atol, end
        assert not claim.key.endswith("_equal") or finite[-1] - finite[0] <= 2 * atol
        return
    assert f["lo"] == finite[0] and f["hi"] == finite[-1], (f, finite[0], finite[-1])
    assert values[_first_at(where, f["lo_at"])] == finite[0]
    assert values[_first_at(where, f["hi_at"])] == finite[-1]
    close = finite[-1] - finite[0] <= rtol * max(abs(finite[0]), abs(finite[-1]))
    assert claim.key.endswith("_equal") == (finite[0] == finite[-1] or close), claim.key


def check_peak_words(claim, grids: dict) -> None:
    """Heat maps' summary: each one's largest finite entry, quoted at a row and column (from
    0) that hold it; a count of the entries that are not finite; the sentence for a panel with
    nothing finite exactly when one has none."""
    grids = {name: np.asarray(grid, dtype=float) for name, grid in grids.items()}
    total = sum(g.size for g in grids.values())
    bad = sum(int((~np.isfinite(g)).sum()) for g in grids.values())
    f = claim.fields
    if claim.key == "charts.not_finite":
        assert f["count"] == bad > 0 and f["total"] == total
        return
    empty = any(not np.isfinite(g).any() for g in grids.values())
    assert (claim.key == "charts.no_finite_panel") == empty
    if empty:
        assert f["total"] == total
        return
    for name, grid in grids.items():
        top = max(float(v) for v in grid.ravel() if math.isfinite(v))
        assert f[f"{name}_hi"] == top, (name, f[f"{name}_hi"], top)
        assert float(grid[f[f"{name}_hi_row"], f[f"{name}_hi_col"]]) == top, name


def check_runs_words(claim, groups: dict, rtol: float = 0.0) -> None:
    """A chart of runs whose lines need not share positions: ``groups[name]`` holds each line as
    ``(label, where, values)``. A group's words: its smallest and largest finite value, each quoted
    at a line (by its label) and a position that hold it (``rtol`` as in
    :func:`check_pair_words`, relative to the group's largest |value|); the count: the values
    that are not finite over every group, and more than none."""
    every = [float(v) for lines in groups.values() for _, _, values in lines for v in values]
    f = claim.fields
    if "count" in f:  # the count of values not drawn
        bad = sum(1 for v in every if not math.isfinite(v))
        assert f["count"] == bad > 0 and f["total"] == len(every), (f, bad, len(every))
        return
    (name,) = [n for n, lines in groups.items() if claim.key.endswith(f"_{n}")]
    points = [
        (
            label.item() if hasattr(label, "item") else label,
            w.item() if hasattr(w, "item") else w,
            float(v),
        )
        for label, where, values in groups[name]
        for w, v in zip(where, values, strict=True)
    ]
    finite = sorted(v for _, _, v in points if math.isfinite(v))
    assert finite, (name, "words for a group with nothing to draw")
    tol = rtol * max(abs(finite[0]), abs(finite[-1]))
    for end, value in (("lo", finite[0]), ("hi", finite[-1])):
        shown = f[f"{end}"]
        assert shown == value or abs(shown - value) <= tol, (name, end, shown, value)
        line = [(w, v) for label, w, v in points if label == f[f"{end}_line"]]
        assert line, (name, end, f[f"{end}_line"])
        held = [v for w, v in line if w == f[f"{end}_at"]]
        assert held, (name, end, f[f"{end}_at"])
        assert held[0] == value or abs(held[0] - value) <= tol, (name, end, held[0], value)
