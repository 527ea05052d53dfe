"""Array-library dispatch for the norms: one algorithm, numpy or torch underneath.

The norms in :mod:`core.norms` are written once against the small set of operations below, so
the numpy path and the torch path cannot disagree about the math. Dtypes travel as plain names
("float64", "float32", "float16", "bfloat16") because numpy has no bfloat16 and the two
libraries spell their dtypes differently."""

from __future__ import annotations

from typing import Any

import numpy as np

FLOAT_NAMES = ("float64", "float32", "float16", "bfloat16")
HALF_NAMES = ("float16", "bfloat16")

# Rank by precision, for the "promote" rule both libraries apply to mixed float operands.
_RANK = {"bfloat16": 0, "float16": 0, "float32": 1, "float64": 2}


def promote(a: str, b: str) -> str:
    """Result dtype name of a binary op between two float dtypes (numpy and torch agree)."""
    if a == b:
        return a
    if {a, b} == {"float16", "bfloat16"}:
        return "float32"
    return a if _RANK[a] > _RANK[b] else b


def is_torch(a: Any) -> bool:
    """True for a torch.Tensor, without importing torch when nobody else has."""
    return type(a).__module__.startswith("torch") and hasattr(a, "dtype") and hasattr(a, "device")


def opmath(dtype: str) -> str:
    """The dtype torch computes a ``dtype`` operation in: float32 for the half types."""
    return "float32" if dtype in HALF_NAMES else dtype


def ops_for(a: Any) -> NumpyOps | TorchOps:
    """The operations for ``a``'s library: torch for a tensor, numpy for anything else."""
    return TorchOps() if is_torch(a) else NumpyOps()


class NumpyOps:
    """The operations the norms need, on numpy arrays."""

    name = "numpy"

    @staticmethod
    def dtype_name(a: np.ndarray) -> str:
        return a.dtype.name

    @staticmethod
    def cast(a: np.ndarray, dtype: str) -> np.ndarray:
        # copy=False: the plain path converts at most once and never copies for nothing.
        return a.astype(dtype, copy=False)

    @staticmethod
    def mean_last(a: np.ndarray) -> np.ndarray:
        return a.mean(axis=-1, keepdims=True)  # (..., d) -> (..., 1)

    @staticmethod
    def square(a: np.ndarray) -> np.ndarray:
        return np.square(a)

    @staticmethod
    def sqrt(a: np.ndarray) -> np.ndarray:
        return np.sqrt(a)

    @staticmethod
    def norm_last(a: np.ndarray) -> np.ndarray:
        return np.linalg.norm(a, axis=-1, keepdims=True)  # (..., d) -> (..., 1)

    @staticmethod
    def rsqrt(a: np.ndarray) -> np.ndarray:
        return 1.0 / np.sqrt(a)

    @staticmethod
    def maximum(a: np.ndarray, floor: float) -> np.ndarray:
        return np.maximum(a, np.asarray(floor, dtype=a.dtype))

    @staticmethod
    def where(cond: np.ndarray, a: np.ndarray, b: float) -> np.ndarray:
        return np.where(cond, a, np.asarray(b, dtype=a.dtype))

    @staticmethod
    def all_finite(a: np.ndarray) -> bool:
        return bool(np.isfinite(a).all())

    @staticmethod
    def any_true(a: np.ndarray) -> bool:
        return bool(a.any())

    @staticmethod
    def all_last(a: np.ndarray) -> np.ndarray:
        return a.all(axis=-1, keepdims=True)  # (..., d) -> (..., 1)

    @staticmethod
    def to_float64_numpy(a: np.ndarray) -> np.ndarray:
        return np.asarray(a, dtype=np.float64)

    @staticmethod
    def finfo_eps(dtype: str) -> float:
        return float(np.finfo(dtype).eps)


class TorchOps:
    """The same operations on torch tensors; torch is imported only when this is used."""

    name = "torch"

    def __init__(self) -> None:
        import torch

        self.torch = torch

    def dtype_name(self, a: Any) -> str:
        return str(a.dtype).removeprefix("torch.")

    def dtype(self, name: str) -> Any:
        return getattr(self.torch, name)

    def cast(self, a: Any, dtype: str) -> Any:
        # Tensor.to returns the tensor itself when the dtype already matches: no copy.
        return a.to(self.dtype(dtype))

    @staticmethod
    def mean_last(a: Any) -> Any:
        return a.mean(-1, keepdim=True)  # (..., d) -> (..., 1)

    @staticmethod
    def square(a: Any) -> Any:
        # pow(2), as every upstream RMSNorm writes it, so results match them bit for bit.
        return a.pow(2)

    def sqrt(self, a: Any) -> Any:
        return self.torch.sqrt(a)

    @staticmethod
    def norm_last(a: Any) -> Any:
        # x.norm(2, dim=-1), as rmsnorm_torch.py and F.normalize write it: a half x accumulates
        # in float32 and the norm is rounded to x's dtype once.
        return a.norm(2, dim=-1, keepdim=True)  # (..., d) -> (..., 1)

    def rsqrt(self, a: Any) -> Any:
        return self.torch.rsqrt(a)

    @staticmethod
    def maximum(a: Any, floor: float) -> Any:
        return a.clamp_min(floor)

    def where(self, cond: Any, a: Any, b: float) -> Any:
        return self.torch.where(cond, a, self.torch.zeros((), dtype=a.dtype, device=a.device) + b)

    def all_finite(self, a: Any) -> bool:
        return bool(self.torch.isfinite(a).all())

    @staticmethod
    def any_true(a: Any) -> bool:
        return bool(a.any())

    @staticmethod
    def all_last(a: Any) -> Any:
        return a.all(dim=-1, keepdim=True)  # (..., d) -> (..., 1)

    def to_float64_numpy(self, a: Any) -> np.ndarray:
        return a.detach().to("cpu", self.torch.float64).numpy()

    def finfo_eps(self, dtype: str) -> float:
        return float(self.torch.finfo(self.dtype(dtype)).eps)
