"""The core's warnings reach the reader in both languages."""

import warnings

import numpy as np
import pytest

from core import NormWarning, layer_norm, rms_norm
from ui.core_text import translate


def _messages(call) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NormWarning)
        call()
    return [str(w.message) for w in caught if w.category is NormWarning]


@pytest.mark.parametrize(
    ("call", "en", "id_"),
    [
        (
            lambda: rms_norm(np.zeros(4), eps=0.0),
            "RMSNorm with ε = 0 meets 0/0",
            "RMSNorm dengan ε = 0 bertemu 0/0",
        ),
        (
            lambda: layer_norm(np.ones(4), eps=0.0),
            "LayerNorm with ε = 0 meets 0/0",
            "LayerNorm dengan ε = 0 bertemu 0/0",
        ),
        (
            lambda: rms_norm(300 * np.ones(64), reduction_dtype="float16"),
            "RMSNorm: the sum of squares overflowed to infinity in float16",
            "RMSNorm: jumlah kuadrat meluap menjadi tak berhingga dalam float16",
        ),
    ],
)
def test_every_core_warning_the_pages_can_meet_is_translated(call, en: str, id_: str) -> None:
    (message,) = _messages(call)
    assert translate(message, "en").startswith(en)
    assert translate(message, "id").startswith(id_)


def test_an_unknown_message_is_shown_as_written() -> None:
    assert translate("something new", "id") == "something new"
