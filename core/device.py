"""Which torch devices this machine offers, without importing torch until asked.

``import core`` must work on a machine without torch (the numpy path needs nothing else), so
torch is looked up with :func:`importlib.util.find_spec` and imported inside the functions."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager

DEVICE_NAMES = ("auto", "cpu", "cuda", "mps")


def torch_available() -> bool:
    """True when torch can be imported; checked without importing it."""
    try:
        return importlib.util.find_spec("torch") is not None
    except ValueError:
        # find_spec raises when sys.modules["torch"] is None, which is how a caller blocks torch.
        return False


def available_devices() -> list[str]:
    """Devices torch can compute on here: ``["cpu"]``, plus "cuda" and "mps" when present.

    Empty when torch is not installed: the numpy path (``device=None``) is then the only one."""
    if not torch_available():
        return []
    import torch

    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.append("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        devices.append("mps")
    return devices


def passive_openmp_threads() -> None:
    """Let torch's OpenMP threads sleep once their work is done, unless the environment says
    otherwise; call it before anything imports torch (libgomp reads the policy as torch loads it).
    Spinning, they take a core from the numba kernels started right after and from other
    visitors' sessions. The app's start (``ui.nav.preload``) and ``benchmarks`` call it."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block on ``n`` torch intra-op threads, then restore the count it found.

    The count is process-wide: callers that may overlap hold a lock around the block."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def resolve_device(name: str) -> str:
    """Turn a device name into one torch can use: "auto" picks cuda, then mps, then cpu.

    Raises ValueError naming ``device`` when the name is unknown, the device is absent, or torch
    is not installed."""
    if name not in DEVICE_NAMES:
        raise ValueError(f"device must be one of {list(DEVICE_NAMES)} or None (got {name!r})")
    devices = available_devices()
    if not devices:
        raise ValueError(f"device={name!r} needs torch, which is not installed; use device=None")
    if name == "auto":
        for preferred in ("cuda", "mps", "cpu"):
            if preferred in devices:
                return preferred
    if name not in devices:
        raise ValueError(f"device {name!r} is not available here; available: {devices}")
    return name
