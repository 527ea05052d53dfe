r"""Fused row kernels for the CPU (numba): each row of x is read once from memory, normalised while
it sits in cache (a row of 4096 float32 values is 16 KiB), and written once, like ``x.clone()``.

Two paths, described in docs/speed.md ("Reads for ownership"): pipelined rows, and streamed
stores (``stream``, which :mod:`core.fast` sets for a large output) through ``_norm_line``'s
non-temporal vector stores (LLVM does not vectorise scalar ones), a store fence ending each
block. Both make the same additions in the same order, so they write the same bits
(``tests/test_fast.py`` checks it). Sums run in x's own dtype, as the core's reduction does (an
overflow shows as it would there), split into SIMD lanes. ``_rms_rows`` and ``_layer_rows`` run
a block of rows; ``*_parallel`` spreads the blocks over numba's threads, ``*_serial`` runs one
block in the calling thread. :mod:`core.fast` is the only caller."""

from __future__ import annotations

import math
import platform

from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

# "reassoc" lets LLVM split each row's sums into SIMD lanes (the order of the additions changes,
# so results move at rounding level). No other fast-math flag: inf and nan must stay what IEEE
# arithmetic makes them, because core.fast reads them to detect overflow and bad input.
_FASTMATH = {"reassoc"}
_JIT = {"cache": True, "fastmath": _FASTMATH, "nogil": True}
# A cache line: what a non-temporal store writes at once, and what an ordinary one reads first.
LINE_BYTES = 64
_X86 = platform.machine().lower() in ("x86_64", "amd64")


def _splat(builder, vector, value):
    """``value`` in every lane of a ``vector``-typed value."""
    lane = builder.insert_element(ir.Constant(vector, ir.Undefined), value, ir.IntType(32)(0))
    zeros = ir.Constant(ir.VectorType(ir.IntType(32), vector.count), [0] * vector.count)
    return builder.shuffle_vector(lane, ir.Constant(vector, ir.Undefined), zeros)


@intrinsic
def _norm_line(typingctx, dst, j, row, mu, scale, weight, bias):
    """``dst[j:j+L] = ((row[j:j+L] - mu) * scale) * weight[j:j+L] + bias[j:j+L]`` for the L values
    of one 64-byte line (``dst[j]`` must start one), :func:`_affine`'s operations in its order
    (``mu``, ``weight``, ``bias`` left out where None), in one non-temporal vector store."""

    def codegen(context, builder, sig, args):
        dtype = sig.args[0].dtype
        value = context.get_data_type(dtype)
        size = context.get_abi_sizeof(value)
        vector = ir.VectorType(value, LINE_BYTES // size)

        def line(position):  # the line of the array argument at ``position``, from j
            data = context.make_array(sig.args[position])(context, builder, args[position]).data
            return builder.bitcast(builder.gep(data, [args[1]]), vector.as_pointer())

        def every_lane(position):  # the scalar argument at ``position``, in dst's dtype
            scalar = context.cast(builder, args[position], sig.args[position], dtype)
            return _splat(builder, vector, scalar)

        y = builder.load(line(2), align=size)
        if sig.args[3] != types.none:
            y = builder.fsub(y, every_lane(3))
        y = builder.fmul(y, every_lane(4))
        if sig.args[5] != types.none:
            y = builder.fmul(y, builder.load(line(5), align=size))
        if sig.args[6] != types.none:
            y = builder.fadd(y, builder.load(line(6), align=size))
        store = builder.store(y, line(0), align=LINE_BYTES)
        store.set_metadata("nontemporal", builder.module.add_metadata([ir.IntType(32)(1)]))
        return context.get_dummy_value()

    return types.none(dst, types.intp, row, mu, scale, weight, bias), codegen


@intrinsic
def _prefetch(typingctx, ary, index):
    """Fetch the line holding ``ary[index]`` into cache (a hint: no fault, no effect on values)."""

    def codegen(context, builder, sig, args):
        data = context.make_array(sig.args[0])(context, builder, args[0]).data
        byte, i32 = ir.IntType(8).as_pointer(), ir.IntType(32)
        kind = ir.FunctionType(ir.VoidType(), [byte, i32, i32, i32])
        prefetch = cgutils.get_or_insert_function(builder.module, kind, "llvm.prefetch.p0")
        address = builder.bitcast(builder.gep(data, [args[1]]), byte)
        builder.call(prefetch, [address, i32(0), i32(3), i32(1)])  # read, keep in all levels
        return context.get_dummy_value()

    return types.none(ary, types.intp), codegen


@intrinsic
def _store_fence(typingctx):
    """The non-temporal stores before it reach memory before anything after it (x86's sfence;
    elsewhere a full fence)."""

    def codegen(context, builder, sig, args):
        if _X86:
            kind = ir.FunctionType(ir.VoidType(), [])
            sfence = cgutils.get_or_insert_function(builder.module, kind, "llvm.x86.sse.sfence")
            builder.call(sfence, [])
        else:
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.none(), codegen


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
def _centred(v, mu):
    return v if mu is None else v - mu


@njit(**_JIT)
def _emit(dst, row, mu, scale, weight, bias, ahead):
    """``dst[j] = _affine((row[j] - mu) * scale, weight, bias, j)`` (``row[j] * scale`` when
    ``mu`` is None): the whole 64-byte lines of ``dst`` with :func:`_norm_line`, the values before
    the first and after the last with ordinary stores; ``ahead`` (a row as long) is fetched into
    cache meanwhile, line by line."""
    n, size = dst.shape[0], dst.itemsize
    address = dst.ctypes.data
    head = n if address % size else min(n, (-address) % LINE_BYTES // size)
    _prefetch(ahead, 0)
    for j in range(head):
        dst[j] = _affine(_centred(row[j], mu) * scale, weight, bias, j)
    j = head
    while j + LINE_BYTES // size <= n:
        _prefetch(ahead, j)
        _norm_line(dst, j, row, mu, scale, weight, bias)
        j += LINE_BYTES // size
    _prefetch(ahead, n - 1)
    for k in range(j, n):
        dst[k] = _affine(_centred(row[k], mu) * scale, weight, bias, k)


@njit(**_JIT)
def _rms_rows(x, weight, bias, eps, out, inv_rms, start, stop, stream):
    """Rows start..stop-1: out = row / sqrt(mean(row^2) + eps) (* weight) (+ bias); 1/RMS per
    row into ``inv_rms``. Row i's output loop also sums row i+1's squares; with ``stream``, row i
    is written with non-temporal stores while row i+2 is fetched, then row i+1 is summed."""
    d = x.shape[1]
    total = _sum_squares(x[start])
    for i in range(start, stop):
        inv = x.dtype.type(1.0 / math.sqrt(total / d + eps))  # $1/\mathrm{RMS}(x)$
        inv_rms[i] = inv
        # The block's last row sums itself again (from cache) rather than need a loop of its own.
        row, o, following = x[i], out[i], x[min(i + 1, stop - 1)]
        if stream:
            _emit(o, row, None, inv, weight, bias, x[min(i + 2, stop - 1)])
            total = _sum_squares(following)
            continue
        total = x.dtype.type(0.0)
        for j in range(d):
            o[j] = _affine(row[j] * inv, weight, bias, j)  # row i is still in cache
            total += following[j] * following[j]  # row i+1 streams in from memory
    if stream:
        _store_fence()


@njit(**_JIT)
def _layer_rows(x, weight, bias, eps, out, mean, rstd, start, stop, stream):
    """Rows start..stop-1: out = (row - mu) / sqrt(var + eps) (* weight) (+ bias); mu and 1/std
    per row into ``mean``, ``rstd``. The variance is the two-pass mean((x - mu)^2), taken from the
    cached row; row i's output loop also sums row i+1. ``stream`` as in :func:`_rms_rows`."""
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
        if stream:
            _emit(o, row, mu, r, weight, bias, x[min(i + 2, stop - 1)])
            total = _sum(following)
            continue
        total = x.dtype.type(0.0)
        for j in range(d):
            o[j] = _affine((row[j] - mu) * r, weight, bias, j)
            total += following[j]
    if stream:
        _store_fence()


@njit(parallel=True, **_JIT)
def rms_parallel(x, weight, bias, eps, out, inv_rms, stream, blocks):
    """RMSNorm of each row of the C-contiguous (n, d) ``x`` into ``out``; 1/RMS per row, in
    ``blocks`` blocks of rows handed to the threads; with ``stream``, non-temporal stores."""
    n = x.shape[0]
    for b in prange(blocks):
        start, stop = b * n // blocks, (b + 1) * n // blocks
        if start < stop:
            _rms_rows(x, weight, bias, eps, out, inv_rms, start, stop, stream)


@njit(**_JIT)
def rms_serial(x, weight, bias, eps, out, inv_rms, stream):
    """:func:`rms_parallel` in the calling thread."""
    if x.shape[0] > 0:
        _rms_rows(x, weight, bias, eps, out, inv_rms, 0, x.shape[0], stream)


@njit(parallel=True, **_JIT)
def layer_parallel(x, weight, bias, eps, out, mean, rstd, stream, blocks):
    """LayerNorm of each row of the C-contiguous (n, d) ``x`` into ``out``; mean, 1/std per row,
    in ``blocks`` blocks of rows; with ``stream``, non-temporal stores."""
    n = x.shape[0]
    for b in prange(blocks):
        start, stop = b * n // blocks, (b + 1) * n // blocks
        if start < stop:
            _layer_rows(x, weight, bias, eps, out, mean, rstd, start, stop, stream)


@njit(**_JIT)
def layer_serial(x, weight, bias, eps, out, mean, rstd, stream):
    """:func:`layer_parallel` in the calling thread."""
    if x.shape[0] > 0:
        _layer_rows(x, weight, bias, eps, out, mean, rstd, 0, x.shape[0], stream)
