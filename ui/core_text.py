"""The core's warnings, said in the reader's language.

``core`` speaks English to Python users; the pages show the same facts through the texts in
``assets/text/common.toml``. A message the table does not know is shown as the core wrote it.
"""

from __future__ import annotations

import re

from ui.i18n import t

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^the (?P<what>mean square|variance) overflowed to inf in (?P<dtype>\w+)"),
        "common.core_overflow",
    ),
    (
        re.compile(r"^(?P<what>zero vector|constant row \(zero variance\)) with eps = 0"),
        "common.core_zero",
    ),
    (re.compile(r"^the statistic is 0 but some coordinates are not"), "common.core_inf"),
)
_WHAT = {
    "mean square": "rms",
    "variance": "layer",
    "zero vector": "rms",
    "constant row (zero variance)": "layer",
}


def translate(message: str, lang: str) -> str:
    """``message`` from a NormWarning or a report's notes, in ``lang``."""
    for pattern, key in _PATTERNS:
        match = pattern.match(message)
        if match is None:
            continue
        fields = match.groupdict()
        if "what" in fields:
            fields["norm"] = "RMSNorm" if _WHAT[fields.pop("what")] == "rms" else "LayerNorm"
        return t(key, lang, **fields)
    return message
