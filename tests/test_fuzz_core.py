"""Fuzz the core with random shapes, dtypes, values, presets and knobs.

Whatever a page or a notebook passes, a norm either returns an array of the input's shape (finite
wherever x is finite, unless a ``NormWarning`` says why not) or raises a ``ValueError`` that names
the offending parameter. The typed-vector parser either returns a bounded finite vector or raises
``VectorParseError``; nothing else escapes.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import NormWarning, layer_norm, layer_norm_report, preset_names, rms_norm, rms_norm_report
from core.inputs import (
    DISTRIBUTIONS,
    GAIN_PATTERNS,
    MAX_ABS_VALUE,
    MAX_WIDTH,
    MIN_WIDTH,
    VectorParseError,
    gain_vector,
    make_input,
    parse_vector,
)
from core.knobs import CASTS, EPS_PLACEMENTS, GAIN_MODES, REDUCTION_DTYPES
from tests.hypothesis_util import examples

FUZZ = settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Row magnitudes from underflow territory to float64 overflow of the squares: each dtype gets the
# ones it can hold, and a cast that overflows to inf is a non-finite input (then a ValueError).
MAGNITUDES = (0.0, 1e-300, 1e-30, 1e-6, 1.0, 1e3, 6e4, 1e30, 1e150, 1e200)
NUMPY_DTYPES = ("float64", "float32", "float16")
TORCH_DTYPES = ("float64", "float32", "float16", "bfloat16")
NORMS = {"rms": (rms_norm, rms_norm_report), "layer": (layer_norm, layer_norm_report)}


@st.composite
def hostile_input(draw):
    """(x in float64, shape) with rows of random magnitude: zero, constant, tiny, huge."""
    lead = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    d = draw(st.integers(1, 64))
    shape = (*lead, d)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rows = int(np.prod(lead, dtype=int)) if lead else 1
    x = np.empty((rows, d))
    for i in range(rows):
        magnitude = draw(st.sampled_from(MAGNITUDES))
        kind = draw(st.sampled_from(("normal", "constant", "offset", "spike")))
        if kind == "normal":
            x[i] = magnitude * rng.standard_normal(d)
        elif kind == "constant":
            x[i] = magnitude
        elif kind == "offset":
            x[i] = magnitude * (1.0 + 1e-3 * rng.standard_normal(d))
        else:
            x[i] = 0.0
            x[i, rng.integers(d)] = magnitude
    return x.reshape(shape)


@st.composite
def knobs(draw, kind: str):
    options = {}
    if draw(st.booleans()):
        options["preset"] = draw(st.sampled_from(preset_names(kind)))
    if draw(st.booleans()):
        options["eps"] = draw(st.sampled_from((0.0, 1e-12, 1e-6, 1e-5, 0.1, 1.0)))
    if draw(st.booleans()):
        options["eps_placement"] = draw(st.sampled_from(EPS_PLACEMENTS))
    if draw(st.booleans()):
        options["reduction_dtype"] = draw(st.sampled_from(REDUCTION_DTYPES))
    if draw(st.booleans()):
        options["gain_mode"] = draw(st.sampled_from(GAIN_MODES))
    if draw(st.booleans()):
        options["cast"] = draw(st.sampled_from(CASTS))
    if kind == "rms" and draw(st.booleans()):
        options["partial"] = draw(st.sampled_from((1.0, 0.5, 0.07)))
    return options


def _as_backend(x64: np.ndarray, backend: str, dtype: str):
    with np.errstate(over="ignore"):
        if backend == "numpy":
            return x64.astype(dtype)
    return torch.tensor(x64, dtype=torch.float64).to(getattr(torch, dtype))


def _finite(a) -> np.ndarray:
    if isinstance(a, torch.Tensor):
        return torch.isfinite(a.float() if a.dtype == torch.bfloat16 else a).numpy()
    return np.isfinite(a)


@FUZZ
@given(
    data=st.data(),
    kind=st.sampled_from(("rms", "layer")),
    backend=st.sampled_from(("numpy", "torch")),
    report=st.booleans(),
)
def test_norms_keep_shape_and_stay_finite_or_say_why(data, kind, backend, report) -> None:
    x64 = data.draw(hostile_input())
    dtype = data.draw(st.sampled_from(NUMPY_DTYPES if backend == "numpy" else TORCH_DTYPES))
    x = _as_backend(x64, backend, dtype)
    d = x64.shape[-1]
    options = data.draw(knobs(kind))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    weight = (1.0 + 0.5 * rng.standard_normal(d)).astype(x64.dtype)
    bias = 0.5 * rng.standard_normal(d)
    args = []
    if data.draw(st.booleans()):
        args = [_as_backend(weight, backend, dtype)]
        if kind == "layer" and data.draw(st.booleans()):
            args.append(_as_backend(bias, backend, dtype))
    plain, with_report = NORMS[kind]
    x_finite = bool(_finite(x).all())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormWarning)
        if not x_finite:
            # Only casts that overflow make a non-finite input here; the error must name x.
            with pytest.raises(ValueError, match=r"\bx\b"):
                (with_report if report else plain)(x, *args, **options)
            return
        result = (with_report if report else plain)(x, *args, **options)
    y = result.output if report else result
    assert tuple(y.shape) == tuple(x.shape)
    assert isinstance(y, torch.Tensor) == (backend == "torch")
    if "preset" not in options and options.get("cast", "after") == "after":
        expected = x.dtype if backend == "torch" else np.dtype(dtype)
        assert y.dtype == expected
    said = [w for w in caught if issubclass(w.category, NormWarning)]
    if not _finite(y).all():
        assert said, f"non-finite output without a NormWarning for options {options}"
    if report:
        for stat in (result.stat, result.mean, result.mean_square, result.variance):
            assert stat.shape == (*x.shape[:-1], 1)
            assert stat.dtype == np.float64


@FUZZ
@given(
    kind=st.sampled_from(("rms", "layer")),
    bad=st.sampled_from(
        (
            ("eps", -1e-5),
            ("eps", math.nan),
            ("eps", math.inf),
            ("eps", "1e-5"),
            ("eps_placement", "<script>"),
            ("reduction_dtype", "float8"),
            ("gain_mode", ""),
            ("cast", "never"),
            ("preset", "no-such-model"),
            ("preset", 3),
            ("weight", "wrong shape"),
            ("weight", "nan"),
            ("bias", "wrong shape"),
            ("partial", 0.0),
            ("partial", 1.5),
        )
    ),
    d=st.integers(2, 16),
)
def test_bad_knobs_raise_a_value_error_naming_the_parameter(kind, bad, d) -> None:
    name, value = bad
    plain, _ = NORMS[kind]
    x = np.linspace(-1.0, 2.0, d)
    args: list[object] = [None, None]
    options: dict[str, object] = {}
    if name == "partial" and kind == "layer":
        return
    if name in ("weight", "bias"):
        args[0 if name == "weight" else 1] = (
            np.ones(d + 1) if value == "wrong shape" else np.full(d, np.nan)
        )
    else:
        options[name] = value
    with pytest.raises(ValueError, match=name):
        plain(x, *args, **options)


def test_a_non_finite_row_names_x() -> None:
    x = np.array([[1.0, 2.0], [np.nan, 0.0]])
    for plain, with_report in NORMS.values():
        for call in (plain, with_report):
            with pytest.raises(ValueError, match=r"\bx\b"):
                call(x)
            with pytest.raises(ValueError, match=r"\bx\b"):
                call(torch.tensor(x))


TOKENS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**70), 10**70).map(str),
    st.sampled_from(("nan", "inf", "-inf", "1e400", "1e150", "-1e151", "0x10", "1_000", "--1")),
    st.text(max_size=8),
)


@settings(max_examples=examples(100), deadline=None)
@given(tokens=st.lists(TOKENS, max_size=30), sep=st.sampled_from((", ", ";", " ", "\n", ",,")))
def test_parse_vector_returns_a_bounded_vector_or_names_the_problem(tokens, sep) -> None:
    text = sep.join(tokens)
    try:
        v = parse_vector(text)
    except VectorParseError as err:
        assert err.code in ("empty", "too_many", "too_few", "not_number", "not_finite", "too_large")
        if err.code in ("not_number", "not_finite", "too_large"):
            assert err.position >= 1
            assert len(err.token) <= 20
            assert err.token in text
        return
    assert v.dtype == np.float64
    assert MIN_WIDTH <= v.shape[0] <= MAX_WIDTH
    assert np.isfinite(v).all()
    assert np.abs(v).max() <= MAX_ABS_VALUE


def test_parse_vector_refuses_more_than_the_width_cap() -> None:
    with pytest.raises(VectorParseError) as info:
        parse_vector(" ".join(["1"] * (MAX_WIDTH + 1)))
    assert (info.value.code, info.value.count, info.value.limit) == (
        "too_many",
        MAX_WIDTH + 1,
        MAX_WIDTH,
    )
    assert parse_vector(" ".join(["1"] * MAX_WIDTH)).shape == (MAX_WIDTH,)


@settings(max_examples=examples(80), deadline=None)
@given(
    d=st.one_of(st.integers(-5, MAX_WIDTH + 5), st.sampled_from((2.5, True, "8"))),
    dist=st.sampled_from((*DISTRIBUTIONS, "cauchy")),
    pattern=st.sampled_from((*GAIN_PATTERNS, "zigzag")),
    seed=st.integers(0, 2**63 - 1),
    offset=st.sampled_from((0.0, -20.0, 1e300, math.nan, math.inf)),
    scale=st.sampled_from((0.0, 1e-4, 1e4, -math.inf)),
)
def test_input_makers_return_width_d_or_name_the_parameter(
    d, dist, pattern, seed, offset, scale
) -> None:
    try:
        x = make_input(d, dist=dist, seed=seed, offset=offset, scale=scale)
    except ValueError as err:
        assert any(name in str(err) for name in ("d ", "dist", "offset", "scale"))
    else:
        assert x.shape == (d,)
        assert np.isfinite(x).all()
    try:
        g = gain_vector(d, pattern=pattern, value=offset, seed=seed)
    except ValueError as err:
        assert any(name in str(err) for name in ("d ", "gain_pattern", "gain"))
    else:
        assert g.shape == (d,)
        assert np.isfinite(g).all()
