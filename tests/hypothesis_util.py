"""Example counts for Hypothesis under the suite's two profiles (tests/conftest.py)."""

from __future__ import annotations

import math

from hypothesis import settings

# Hypothesis's own count a test, which the "full" profile keeps, and the quick loop's.
FULL_EXAMPLES = 100
QUICK_EXAMPLES = 20
# Under "quick", a test with a count of its own still tries at least this many (or all of its own).
QUICK_FLOOR = 5


def examples(n: int) -> int:
    """A test's own example count under the profile loaded: ``n`` under "full" (or any profile
    of at least Hypothesis's 100 a test), the profile's share of ``n`` under "quick"."""
    share = settings.default.max_examples / FULL_EXAMPLES
    if share >= 1:
        return n
    return max(min(n, QUICK_FLOOR), math.ceil(n * share))
