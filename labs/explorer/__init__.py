r"""The explorer's state: one vector through both norms, every view derived from that one pass.

Per interaction the explorer normalises x once per norm, with the settings the visitor chose
(gain, biases, pRMSNorm's ``partial``, backend and dtype): ``rms_norm_report`` and
``layer_norm_report`` give each output in the compute dtype and the normalised vector before gain
and bias, ``x_hat``, in float64 (computed in units of max|x|, so a tiny or huge x keeps its
direction). Everything else derives from that pass and from float64 statistics of the same x:

.. math::
    \mathrm{RMSNorm}(x) = g \odot \frac{x}{\sqrt{\frac{1}{k}\sum_{j \le k} x_j^2 + \epsilon}} + b_{\mathrm{rms}},
    \qquad
    \mathrm{LayerNorm}(x) = g \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta,

with :math:`k = \lceil p\,d \rceil` (k = d for the plain RMSNorm). RMS(x) has no eps in it;
the roots with eps are the denominators. A sentence about "here" quotes the outputs as the dtype
computed them. Three comparisons compute more, each against a reference: the full RMSNorm for
p < 1, RMSNorm's divisor of :math:`x - \mu` for the centring sentence, and on torch
``F.layer_norm`` and ``F.rms_norm`` for the precision sentences. Every sentence is a
:class:`labkit.claims.Claim` chosen by a verdict computed here, at a relative tolerance.
"""  # noqa: E501

from labs.explorer.chart import CHART_BUCKETS, FLOAT32_SAFE, Series, envelope, envelope_width
from labs.explorer.state import (
    GAIN_LIMIT,
    OFFSET_LIMIT,
    PAPER_PARTIAL,
    PARTIAL_LADDER,
    ExplorerView,
    dtype_max,
    explore,
    fits,
)
from labs.explorer.units import Units
