"""core.inputs: reproducible vectors, gain patterns and the typed-vector parser."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.inputs import (
    DISTRIBUTIONS,
    GAIN_PATTERNS,
    MAX_WIDTH,
    VectorParseError,
    base_vector,
    gain_vector,
    make_input,
    parse_vector,
)
from tests.hypothesis_util import examples


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_same_seed_same_vector_and_unit_second_moment(dist: str) -> None:
    a = base_vector(4096, dist, 3)
    np.testing.assert_array_equal(a, base_vector(4096, dist, 3))
    # Every distribution is standardised to mean(z^2) about 1 (exactly 1 for the spike and
    # the constant; (d + 1) / (d - 1) for the evenly spaced ramp), so scale alone sets the RMS.
    tol = {"normal": 0.1, "uniform": 0.1, "laplace": 0.1, "ramp": 1e-3}.get(dist, 1e-12)
    np.testing.assert_allclose(np.mean(a**2), 1.0, rtol=tol)


def test_offset_and_scale_are_affine() -> None:
    z = base_vector(10, "normal", 1)
    np.testing.assert_allclose(make_input(10, seed=1, offset=2.0, scale=3.0), 3.0 * z + 2.0)


def test_spike_is_one_hot() -> None:
    z = base_vector(9, "spike", 5)
    assert np.count_nonzero(z) == 1 and math.isclose(z.max(), 3.0)


@pytest.mark.parametrize("pattern", GAIN_PATTERNS)
def test_gain_patterns_scale_with_value(pattern: str) -> None:
    np.testing.assert_allclose(
        gain_vector(16, pattern=pattern, value=2.0, seed=4),
        2.0 * gain_vector(16, pattern=pattern, value=1.0, seed=4),
    )


def test_gain_pattern_shapes() -> None:
    np.testing.assert_array_equal(
        gain_vector(4, pattern="alternating", value=1.5), [1.5, -1.5, 1.5, -1.5]
    )
    ramp = gain_vector(5, pattern="ramp", value=2.0)
    assert ramp[0] == 1.0 and ramp[-1] == 3.0


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: make_input(1), "d"),
        (lambda: make_input(MAX_WIDTH + 1), "d"),
        (lambda: make_input(4, dist="cauchy"), "dist"),
        (lambda: make_input(4, offset=math.nan), "offset"),
        (lambda: make_input(4, scale=math.inf), "scale"),
        (lambda: gain_vector(4, pattern="zigzag"), "gain_pattern"),
        (lambda: gain_vector(4, value=math.nan), "gain"),
    ],
)
def test_bad_arguments_name_the_parameter(call, name: str) -> None:
    with pytest.raises(ValueError, match=rf"^{name} "):
        call()


def test_parse_accepts_commas_semicolons_and_spaces() -> None:
    np.testing.assert_array_equal(parse_vector("1, -2.5;3e-2\n4  5"), [1, -2.5, 0.03, 4, 5])


@pytest.mark.parametrize(
    ("text", "code", "position"),
    [
        ("", "empty", 0),
        ("   ", "empty", 0),
        ("7", "too_few", 0),
        ("1, x2, 3", "not_number", 2),
        ("1, 2, nan", "not_finite", 3),
        ("1, -inf", "not_finite", 2),
        ("1, 1e400", "not_finite", 2),
        ("1, 2, 3, 1e200", "too_large", 4),
        ("<b>1</b>, 2", "not_number", 1),
    ],
)
def test_parse_errors_point_at_the_token(text: str, code: str, position: int) -> None:
    with pytest.raises(VectorParseError) as info:
        parse_vector(text)
    assert info.value.code == code
    assert info.value.position == position
    assert str(info.value).startswith("x")


def test_parse_limits_the_count() -> None:
    with pytest.raises(VectorParseError) as info:
        parse_vector(",".join(["1"] * (MAX_WIDTH + 1)))
    assert info.value.code == "too_many" and info.value.count == MAX_WIDTH + 1


@settings(max_examples=examples(60), deadline=None)
@given(
    st.lists(
        st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
        min_size=2,
        max_size=50,
    )
)
def test_parse_round_trips_printed_floats(values: list[float]) -> None:
    np.testing.assert_array_equal(parse_vector(", ".join(repr(v) for v in values)), values)
