"""Every default and range NormLab uses more than once, defined here and imported elsewhere.

The numbers come from the implementations the app teaches; each says where it comes from."""

from __future__ import annotations

# rms_norm_eps in the Llama, Gemma, T5 and OLMo-2 configs, and the default of their RMSNorm
# classes in transformers: the usual RMSNorm eps.
DEFAULT_RMS_EPS = 1e-6
# torch.nn.LayerNorm's default eps (also OLMo-1's LayerNorm and Transformer Engine's RMSNorm).
DEFAULT_LAYER_EPS = 1e-5
# rmsnorm_torch.py in the RMSNorm paper's repository (bzhangGo/rmsnorm): eps added to the RMS.
PAPER_EPS = 1e-8
# torch.nn.functional.normalize's default eps, which x-transformers' RMSNorm inherits.
NORMALIZE_EPS = 1e-12

# The floating-point dtypes the pages offer, widest first.
DTYPES = ("float64", "float32", "float16", "bfloat16")

# Vector widths a link may ask for: 2 is the smallest with a direction besides 1; 8192 keeps the
# explorer's chart and every per-coordinate table within a classroom laptop's means.
MIN_WIDTH = 2
MAX_WIDTH = 8192

# One ladder of eps values (a log scale with 0 in front); pages offer a prefix of it.
EPS_LADDER = (0.0, 1e-12, 1e-10, 1e-8, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
# One ladder of scales for x (multiplies the draw); 0 makes the all-zero vector.
SCALE_LADDER = (
    0.0,
    1e-4,
    1e-3,
    0.01,
    0.03,
    0.1,
    0.3,
    0.5,
    1.0,
    2.0,
    3.0,
    5.0,
    10.0,
    30.0,
    100.0,
    1e3,
    1e4,
)


def ladder_upto(ladder: tuple[float, ...], hi: float, *, lo: float = -float("inf")) -> tuple:
    """The rungs of ``ladder`` within [lo, hi], for a page that offers part of it."""
    return tuple(v for v in ladder if lo <= v <= hi)
