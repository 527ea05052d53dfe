r"""Fused row kernels for the CPU (numba): each row of x is read once from memory, normalised while
it sits in cache, and written once.

A row of 4096 float32 values is 16 KiB, well inside a core's L1/L2 cache, so the second and third
passes over it (the centred squares, the output) cost no memory traffic: the whole norm moves one
read and one write per element, like ``x.clone()``.

Pipelined rows. A row's output cannot start before its statistic is summed, so a kernel that
finishes one row before it starts the next alternates a pass that only reads memory (the sum) with
one that only writes it (the output), and neither uses the memory system fully. Here the loop that
writes row i's output also sums row i+1 as it streams in from memory: reads and writes overlap as
in a copy. Each row's sums are the same additions in the same order either way, so pipelining
changes no bit of the result (``tests/test_fast.py`` checks this).

Sums run in x's own dtype, as the core's reduction does for a plain call (so an overflow shows up
as it would there), split into SIMD lanes. The math of one row is written once (``_rms_rows``,
``_layer_rows`` run a block of rows); ``*_parallel`` spreads the blocks over numba's threads,
``*_serial`` runs all the rows as one block in the calling thread (small inputs, where waking
threads costs more than the work).

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
def _sum(row):
    total = row.dtype.type(0.0)
    for j in range(row.shape[0]):
        total += row[j]  # $\sum_j x_j$
    return total


@njit(**_JIT)
def _sum_squares(row):
    total = row.dtype.type(0.0)
    for j in range(row.shape[0]):
        total += row[j] * row[j]  # $\sum_j x_j^2$, in x's dtype like the reduction it stands for
    return total


@njit(**_JIT)
def _affine(y, weight, bias, j):
    if weight is not None:
        y = y * weight[j]
    if bias is not None:
        y = y + bias[j]
    return y


@njit(**_JIT)
def _rms_rows(x, weight, bias, eps, out, inv_rms, start, stop):
    """Rows start..stop-1: out = row / sqrt(mean(row^2) + eps) (* weight) (+ bias); 1/RMS per
    row into ``inv_rms``. Row i's output loop also sums row i+1's squares."""
    d = x.shape[1]
    total = _sum_squares(x[start])
    for i in range(start, stop):
        inv = x.dtype.type(1.0 / math.sqrt(total / d + eps))  # $1/\mathrm{RMS}(x)$
        inv_rms[i] = inv
        # The block's last row sums itself again (from cache) rather than need a loop of its own.
        row, o, following = x[i], out[i], x[min(i + 1, stop - 1)]
        total = x.dtype.type(0.0)
        for j in range(d):
            o[j] = _affine(row[j] * inv, weight, bias, j)  # row i is still in cache
            total += following[j] * following[j]  # row i+1 streams in from memory


@njit(**_JIT)
def _layer_rows(x, weight, bias, eps, out, mean, rstd, start, stop):
    """Rows start..stop-1: out = (row - mu) / sqrt(var + eps) (* weight) (+ bias); mu and 1/std
    per row into ``mean``, ``rstd``. The variance is the two-pass mean((x - mu)^2), taken from the
    cached row; row i's output loop also sums row i+1."""
    d = x.shape[1]
    total = _sum(x[start])
    for i in range(start, stop):
        row, o = x[i], out[i]
        mu = x.dtype.type(total / d)  # $\mu = \frac{1}{d}\sum_j x_j$
        squares = x.dtype.type(0.0)
        for j in range(d):
            c = row[j] - mu
            squares += c * c  # $\sum_j (x_j - \mu)^2$
        r = x.dtype.type(1.0 / math.sqrt(squares / d + eps))  # $1/\sqrt{\sigma^2 + \epsilon}$
        mean[i], rstd[i] = mu, r
        following = x[min(i + 1, stop - 1)]  # the last row: itself again, from cache
        total = x.dtype.type(0.0)
        for j in range(d):
            o[j] = _affine((row[j] - mu) * r, weight, bias, j)
            total += following[j]


@njit(parallel=True, **_JIT)
def rms_parallel(x, weight, bias, eps, out, inv_rms, blocks):
    """RMSNorm of each row of the C-contiguous (n, d) ``x`` into ``out``; 1/RMS per row. The rows
    are cut into ``blocks`` contiguous blocks, handed to the threads."""
    n = x.shape[0]
    for b in prange(blocks):
        start, stop = b * n // blocks, (b + 1) * n // blocks
        if start < stop:
            _rms_rows(x, weight, bias, eps, out, inv_rms, start, stop)


@njit(**_JIT)
def rms_serial(x, weight, bias, eps, out, inv_rms):
    """:func:`rms_parallel` in the calling thread."""
    if x.shape[0] > 0:
        _rms_rows(x, weight, bias, eps, out, inv_rms, 0, x.shape[0])


@njit(parallel=True, **_JIT)
def layer_parallel(x, weight, bias, eps, out, mean, rstd, blocks):
    """LayerNorm of each row of the C-contiguous (n, d) ``x`` into ``out``; mean, 1/std per row,
    in ``blocks`` blocks of rows."""
    n = x.shape[0]
    for b in prange(blocks):
        start, stop = b * n // blocks, (b + 1) * n // blocks
        if start < stop:
            _layer_rows(x, weight, bias, eps, out, mean, rstd, start, stop)


@njit(**_JIT)
def layer_serial(x, weight, bias, eps, out, mean, rstd):
    """:func:`layer_parallel` in the calling thread."""
    if x.shape[0] > 0:
        _layer_rows(x, weight, bias, eps, out, mean, rstd, 0, x.shape[0])
