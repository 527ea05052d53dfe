"""Tests for core.stats: the statistics both norms divide by."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.stats import (
    IDENTITY_FORMULA,
    STAT_NAMES,
    VectorStats,
    batch_vector_stats,
    cosine,
    second_moment_identity,
    vector_stats,
)
from tests.hypothesis_util import examples

# Each of at most 64 additions and one division rounds by at most 2**-53 relative, so the two
# sides of the identity agree to about 64 * 1.1e-16 = 7e-15; 1e-12 leaves a wide margin.
IDENTITY_RTOL = 1e-12
# Squares of values near 1e-160 are subnormal and lose relative precision; an absolute floor far
# below any number a lesson shows absorbs that without hiding a real error.
IDENTITY_ATOL = 1e-300

finite_vectors = st.lists(
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_subnormal=False),
    min_size=1,
    max_size=64,
)


def test_vector_stats_hand_computed():
    # x = [1, 2, 3, 6]: mean 3, deviations -2, -1, 0, 3, squares sum to 50.
    s = vector_stats([1.0, 2.0, 3.0, 6.0])
    assert s.d == 4
    np.testing.assert_allclose(
        [s.mean, s.variance, s.second_moment, s.rms, s.l2, s.cos_ones],
        [3.0, 3.5, 12.5, math.sqrt(12.5), math.sqrt(50.0), 12.0 / (math.sqrt(50.0) * 2.0)],
        rtol=1e-15,
    )


def test_vector_stats_matches_numpy_reference():
    x = np.random.default_rng(0).normal(1.5, 2.0, size=33)
    s = vector_stats(x)
    np.testing.assert_allclose(s.mean, np.mean(x), rtol=1e-14)
    np.testing.assert_allclose(s.variance, np.var(x), rtol=1e-13)
    np.testing.assert_allclose(s.rms, np.sqrt(np.mean(x**2)), rtol=1e-14)
    np.testing.assert_allclose(s.l2, np.linalg.norm(x), rtol=1e-14)
    np.testing.assert_allclose(s.cos_ones, s.mean / s.rms, rtol=1e-13)


def test_zero_vector_has_cos_ones_zero():
    s = vector_stats(np.zeros(5))
    assert s.as_dict() == {
        "mean": 0.0,
        "variance": 0.0,
        "second_moment": 0.0,
        "rms": 0.0,
        "l2": 0.0,
        "cos_ones": 0.0,
        "d": 5,
    }


@pytest.mark.parametrize("c, expected", [(2.5, 1.0), (-0.1, -1.0)])
def test_constant_vector_points_along_ones(c, expected):
    s = vector_stats(np.full(7, c))
    np.testing.assert_allclose(s.cos_ones, expected, rtol=1e-15)
    np.testing.assert_allclose(s.variance, 0.0, atol=1e-30)


def test_stat_names_are_the_field_order():
    assert STAT_NAMES == ("mean", "variance", "second_moment", "rms", "l2", "cos_ones", "d")
    assert tuple(vector_stats([1.0, -1.0]).as_dict()) == STAT_NAMES


def test_vector_stats_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        vector_stats([1.0, 2.0]).mean = 0.0  # type: ignore[misc]


def test_batch_matches_single_vector_stats():
    x = np.random.default_rng(1).normal(size=(2, 3, 6))
    batch = batch_vector_stats(x)
    assert tuple(batch) == STAT_NAMES
    for key in STAT_NAMES:
        assert batch[key].shape == (2, 3)
    for i in range(2):
        for j in range(3):
            single = vector_stats(x[i, j])
            for key in STAT_NAMES:
                np.testing.assert_allclose(batch[key][i, j], getattr(single, key), rtol=1e-15)


@settings(max_examples=examples(80), deadline=None)
@given(finite_vectors)
def test_second_moment_identity_holds(values):
    rms2, var, mean2 = second_moment_identity(values)
    assert var >= 0.0 and mean2 >= 0.0
    np.testing.assert_allclose(var + mean2, rms2, rtol=IDENTITY_RTOL, atol=IDENTITY_ATOL)


def test_second_moment_identity_numbers():
    rms2, var, mean2 = second_moment_identity([1.0, 2.0, 3.0, 6.0])
    np.testing.assert_allclose([rms2, var, mean2], [12.5, 3.5, 9.0], rtol=1e-15)


def test_identity_formula_is_the_one_in_the_docstring():
    def squash(text: str) -> str:
        return "".join(text.split())

    assert squash(IDENTITY_FORMULA) in squash(second_moment_identity.__doc__)
    assert IDENTITY_FORMULA == r"\mathrm{RMS}(x)^2 = \mathrm{Var}(x) + \mu^2"


def test_cosine_values_and_zero_convention():
    np.testing.assert_allclose(cosine([1.0, 0.0], [0.0, 3.0]), 0.0, atol=1e-15)
    np.testing.assert_allclose(cosine([1.0, 1.0], [2.0, 2.0]), 1.0, rtol=1e-15)
    np.testing.assert_allclose(cosine([1.0, 2.0], [-1.0, -2.0]), -1.0, rtol=1e-15)
    assert cosine([0.0, 0.0], [1.0, 2.0]) == 0.0
    np.testing.assert_allclose(
        cosine([[1.0, 0.0], [0.0, 0.0]], [1.0, 1.0]), [1.0 / math.sqrt(2.0), 0.0], rtol=1e-15
    )


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.zeros((2, 3)), "x must be 1-D"),
        ([], "x must have at least one element"),
        (3.0, "x must have at least one axis"),
        ([1.0, float("nan")], "x must contain only finite"),
        ([1.0, float("inf")], "x must contain only finite"),
        (["a", "b"], "x must be an array of real numbers"),
        ([1 + 2j, 3.0], "x must be an array of real numbers"),
    ],
)
def test_vector_stats_rejects_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        vector_stats(bad)


def test_other_functions_reject_bad_input():
    with pytest.raises(ValueError, match="x must contain only finite"):
        batch_vector_stats([[1.0, float("nan")]])
    with pytest.raises(ValueError, match="x must be 1-D"):
        second_moment_identity([[1.0, 2.0]])
    with pytest.raises(ValueError, match="a and b must share their last axis"):
        cosine([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="b must contain only finite"):
        cosine([1.0, 2.0], [1.0, float("nan")])


def test_vector_stats_type():
    s = vector_stats(np.arange(4.0))
    assert isinstance(s, VectorStats)
    assert all(type(getattr(s, k)) is float for k in STAT_NAMES if k != "d")
    assert type(s.d) is int


def test_cosine_of_tiny_and_huge_vectors_does_not_underflow() -> None:
    from core.stats import cosine

    x = np.array([3.0, -1.0, 2.0])
    for scale in (1e-200, 1e-310, 1e200):
        np.testing.assert_allclose(cosine(scale * x, np.ones(3)), x.sum() / np.sqrt(3 * x @ x))
        np.testing.assert_allclose(cosine(scale * x, -x), -1.0)


def test_statistics_of_an_output_that_overflowed() -> None:
    stats = vector_stats(np.array([1.0, np.inf, 0.0]), finite=False)
    assert stats.mean == np.inf and np.isnan(stats.cos_ones)
    with pytest.raises(ValueError, match="finite"):
        vector_stats(np.array([1.0, np.inf]))
