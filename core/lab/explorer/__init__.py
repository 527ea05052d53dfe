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

with :math:`k = \lceil p\,d \rceil` (k = d for the plain RMSNorm). RMS(x) is
:math:`\sqrt{\frac{1}{d}\sum_j x_j^2}`, with no eps in it; the roots with eps are the
denominators. The explanations speak of the reports' ``x_hat``: x over RMSNorm's denominator
and :math:`(x - \mu)` over LayerNorm's, in float64, of the x that was normalised (after its cast
to the chosen dtype); a sentence about "here" quotes the outputs as the dtype computed them.
Three comparisons compute more, each against a reference: with p < 1, x over the full RMSNorm's
denominator (the plain RMSNorm pRMSNorm is compared with); the centring sentence, RMSNorm's
divisor of :math:`x - \mu` in plain float64 (a statistic, applied at one coordinate); and on
torch, ``F.layer_norm`` and ``F.rms_norm`` in the compute dtype, because the precision sentences
say whether the page agrees with torch's own kernels. Every sentence the page shows about these
numbers is a :class:`core.lab.claims.Claim` chosen by a verdict computed here, at a tolerance
relative to the quantities it compares.
"""  # noqa: E501

from core.lab.explorer.chart import CHART_BUCKETS, FLOAT32_SAFE, Series, envelope, envelope_width
from core.lab.explorer.state import (
    GAIN_LIMIT,
    OFFSET_LIMIT,
    PAPER_PARTIAL,
    PARTIAL_LADDER,
    ExplorerView,
    dtype_max,
    explore,
    fits,
)
from core.lab.explorer.units import Units

__all__ = [
    "CHART_BUCKETS",
    "FLOAT32_SAFE",
    "GAIN_LIMIT",
    "OFFSET_LIMIT",
    "PAPER_PARTIAL",
    "PARTIAL_LADDER",
    "ExplorerView",
    "Series",
    "Units",
    "dtype_max",
    "envelope",
    "envelope_width",
    "explore",
    "fits",
]
