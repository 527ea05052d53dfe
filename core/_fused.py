r"""Fused row kernels for the CPU (numba): each row of x is read once from memory, normalised while
it sits in cache, and written once.

A row of 4096 float32 values is 16 KiB, well inside a core's L1/L2 cache, so the second and third
passes over it (the centred squares, the output) cost no memory traffic: the whole norm moves one
read and one write per element, like ``x.clone()``.

Sums run in x's own dtype, as the core's reduction does for a plain call (so an overflow shows up
as it would there), split into SIMD lanes. The math of one row is written once (``_rms_row``,
``_layer_row``); ``*_parallel`` spreads the rows over numba's threads, ``*_serial`` runs them in
the calling thread (small inputs, where waking threads costs more than the work).

Importing this module compiles nothing: numba compiles each kernel on its first call for the
dtypes it meets (and for a weight or bias that is present or None: numba prunes the untaken
branch) and caches the machine code on disk next to this file, so a later process loads it in
milliseconds. :mod:`core.fast` is the only caller: it allocates the output, picks the kernel and
the threads and checks the per-row statistics written here.
"""

from __future__ import annotations

import math

from numba import njit, prange

# "reassoc" lets LLVM split each row's sums into SIMD lanes (the order of the additions changes,
# so results move at rounding level). No other fast-math flag: inf and nan must stay what IEEE
# arithmetic makes them, because core.fast reads them to detect overflow and bad input.
_FASTMATH = {"reassoc"}
_JIT = {"cache": True, "fastmath": _FASTMATH, "nogil": True}


@njit(**_JIT)
def _rms_row(row, weight, bias, eps, out):
    """One row: out = row / sqrt(mean(row^2) + eps) (* weight) (+ bias); returns 1/RMS."""
    d = row.shape[0]
    total = row.dtype.type(0.0)
    for j in range(d):
        total += row[j] * row[j]  # $\sum_j x_j^2$, in x's dtype like the reduction it stands for
    inv = row.dtype.type(1.0 / math.sqrt(total / d + eps))  # $1/\mathrm{RMS}(x)$
    for j in range(d):
        y = row[j] * inv  # the row is still in cache: no second read from memory
        if weight is not None:
            y = y * weight[j]
        if bias is not None:
            y = y + bias[j]
        out[j] = y
    return inv


@njit(**_JIT)
def _layer_row(row, weight, bias, eps, out):
    """One row: out = (row - mu) / sqrt(var + eps) (* weight) (+ bias); returns (mu, 1/std).

    The variance is the two-pass mean((x - mu)^2), taken from the cached row.
    """
    d = row.shape[0]
    total = row.dtype.type(0.0)
    for j in range(d):
        total += row[j]
    mu = row.dtype.type(total / d)  # $\mu = \frac{1}{d}\sum_j x_j$
    squares = row.dtype.type(0.0)
    for j in range(d):
        c = row[j] - mu
        squares += c * c  # $\sum_j (x_j - \mu)^2$
    rstd = row.dtype.type(1.0 / math.sqrt(squares / d + eps))  # $1/\sqrt{\sigma^2 + \epsilon}$
    for j in range(d):
        y = (row[j] - mu) * rstd
        if weight is not None:
            y = y * weight[j]
        if bias is not None:
            y = y + bias[j]
        out[j] = y
    return mu, rstd


@njit(parallel=True, **_JIT)
def rms_parallel(x, weight, bias, eps, out, inv_rms):
    """RMSNorm of each row of the C-contiguous (n, d) ``x`` into ``out``; 1/RMS per row."""
    for i in prange(x.shape[0]):
        inv_rms[i] = _rms_row(x[i], weight, bias, eps, out[i])


@njit(**_JIT)
def rms_serial(x, weight, bias, eps, out, inv_rms):
    """:func:`rms_parallel` in the calling thread."""
    for i in range(x.shape[0]):
        inv_rms[i] = _rms_row(x[i], weight, bias, eps, out[i])


@njit(parallel=True, **_JIT)
def layer_parallel(x, weight, bias, eps, out, mean, rstd):
    """LayerNorm of each row of the C-contiguous (n, d) ``x`` into ``out``; mean, 1/std per row."""
    for i in prange(x.shape[0]):
        mean[i], rstd[i] = _layer_row(x[i], weight, bias, eps, out[i])


@njit(**_JIT)
def layer_serial(x, weight, bias, eps, out, mean, rstd):
    """:func:`layer_parallel` in the calling thread."""
    for i in range(x.shape[0]):
        mean[i], rstd[i] = _layer_row(x[i], weight, bias, eps, out[i])
