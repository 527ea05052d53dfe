r"""The backward passes of RMSNorm and LayerNorm as numba row kernels, the twins of the forward
kernels in :mod:`core._fused`: each row of x and of the incoming gradient is read once from
memory, and each row of dx written once.

With :math:`\hat x = x \cdot r` (RMSNorm, :math:`r = 1/\sqrt{\overline{x^2} + \epsilon}`) or
:math:`\hat x = (x - \mu) \cdot r` (LayerNorm, :math:`r = 1/\sqrt{\sigma^2 + \epsilon}`), the
gradient :math:`g` of the loss with respect to y and :math:`h = g \odot w`:

.. math::
    \text{RMSNorm:}\quad dx = r \,\bigl(h - \hat x \, \overline{h \hat x}\bigr), \qquad
    \text{LayerNorm:}\quad dx = r \,\bigl(h - \bar h - \hat x \, \overline{h \hat x}\bigr),

    dw = \textstyle\sum_{\text{rows}} g \odot \hat x, \qquad db = \sum_{\text{rows}} g,

the bars being means over the row; ``r`` (and :math:`\mu`) come from the forward kernel. Sums
run in x's dtype with the forward kernels' "reassoc" flag, in the calling thread (the training
lab times one torch thread)."""

from __future__ import annotations

from numba import njit

# As core._fused: only "reassoc" (SIMD sums), so that inf and nan stay what IEEE makes them.
_JIT = {"cache": True, "fastmath": {"reassoc"}, "nogil": True}


@njit(**_JIT)
def rms_backward(x, weight, inv_rms, grad, dx, dweight):
    """RMSNorm's backward over the C-contiguous (n, d) ``x`` and ``grad``: dx into ``dx``,
    the weight's gradient added into ``dweight`` (the caller zeroes it)."""
    n, d = x.shape
    for i in range(n):
        r, row, g, out = inv_rms[i], x[i], grad[i], dx[i]
        dot = x.dtype.type(0.0)
        for j in range(d):
            x_hat = row[j] * r  # $\hat x_j = x_j / \mathrm{RMS}$
            dot += g[j] * weight[j] * x_hat  # $\sum_j h_j \hat x_j$
            dweight[j] += g[j] * x_hat  # $dw_j \mathrel{+}= g_j \hat x_j$
        dot = dot / d
        for j in range(d):
            out[j] = r * (g[j] * weight[j] - row[j] * r * dot)


@njit(**_JIT)
def layer_backward(x, weight, mean, rstd, grad, dx, dweight, dbias):
    """LayerNorm's backward over the C-contiguous (n, d) ``x`` and ``grad``: dx into ``dx``,
    the weight's and bias's gradients added into ``dweight`` and ``dbias`` (None: no bias)."""
    n, d = x.shape
    for i in range(n):
        mu, r, row, g, out = mean[i], rstd[i], x[i], grad[i], dx[i]
        h_sum = x.dtype.type(0.0)
        dot = x.dtype.type(0.0)
        for j in range(d):
            x_hat = (row[j] - mu) * r  # $\hat x_j = (x_j - \mu) / \sqrt{\sigma^2 + \epsilon}$
            h = g[j] * weight[j]
            h_sum += h  # $\sum_j h_j$
            dot += h * x_hat  # $\sum_j h_j \hat x_j$
            dweight[j] += g[j] * x_hat
            if dbias is not None:
                dbias[j] += g[j]
        h_mean, dot = h_sum / d, dot / d
        for j in range(d):
            out[j] = r * (g[j] * weight[j] - h_mean - (row[j] - mu) * r * dot)
