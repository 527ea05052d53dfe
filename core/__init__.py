"""NormLab's numerics: RMSNorm and LayerNorm, their presets and devices (numpy; torch lazily).

Start reading at ``core/norms.py``: ``rms_norm_reference`` and ``layer_norm_reference`` are each
norm in a few lines, and every other path is tested against them."""

from core.device import available_devices, resolve_device, torch_available
from core.geometry import PlaneImages, Sphere3D, decompose, ones_direction, plane_images
from core.jacobian import (
    LAYER_JACOBIAN_FORMULA,
    RMS_JACOBIAN_FORMULA,
    jacobian_spectrum,
    layer_norm_jacobian,
    rms_norm_jacobian,
)
from core.messages import Message, NormWarning
from core.norms import (
    LAYER_FORMULA,
    RMS_FORMULA,
    gated_rms_norm,
    layer_norm,
    layer_norm_reference,
    layer_norm_report,
    mean_square,
    rms_denominator,
    rms_norm,
    rms_norm_reference,
    rms_norm_report,
    std_denominator,
    variance,
)
from core.presets import PRESETS, Preset, get_preset, preset_names
from core.stats import (
    IDENTITY_FORMULA,
    STAT_NAMES,
    VectorStats,
    batch_vector_stats,
    second_moment_identity,
    vector_stats,
)
from core.steps import NormReport
