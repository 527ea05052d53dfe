"""What the core tells its caller besides the numbers: coded notes and warnings.

A :class:`Message` is a code and its fields. Its English text lives in
``assets/text/core.toml`` under the code (with the Indonesian beside it), so a Python user reads
``str(message)`` and a page translates the same message by its code: no text is written twice
and nothing is recognised by matching English. ``NormWarning`` carries its message, so
``caught.message.message`` gives the code and fields back::

    with warnings.catch_warnings(record=True) as caught:
        rms_norm(x, eps=0)
    [w.message.message.code for w in caught]   # ['zero_vector']
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

TEXTS = Path(__file__).resolve().parent.parent / "assets" / "text" / "core.toml"


@cache
def _english() -> dict[str, str]:
    with TEXTS.open("rb") as fh:
        return {code: texts["en"] for code, texts in tomllib.load(fh).items()}


def _plain(value: Any) -> Any:
    """A field as English prose shows it: floats short (``1e-05`` -> ``1e-5``)."""
    if isinstance(value, float) and math.isfinite(value) and value != int(value):
        text = f"{value:.6g}"
        if "e" in text:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}e{int(exponent)}"
        return text
    return value


@dataclass(frozen=True)
class Message:
    """A note or warning: ``code`` names its text in ``assets/text/core.toml``."""

    code: str
    fields: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.code not in _english():
            raise KeyError(f"no text for core message code {self.code!r} in {TEXTS.name}")

    def __str__(self) -> str:
        return _english()[self.code].format(**{k: _plain(v) for k, v in self.fields.items()})

    def __hash__(self) -> int:
        # Hashable like its code and fields, so that callers can de-duplicate notes.
        return hash((self.code, tuple(sorted(self.fields.items()))))


class NormWarning(UserWarning):
    """Something happened that the numbers alone would hide (0/0, an overflow to inf).

    ``args[0]`` is the English text; ``.message`` is the :class:`Message` behind it."""

    def __init__(self, message: Message) -> None:
        super().__init__(str(message))
        self.message = message
