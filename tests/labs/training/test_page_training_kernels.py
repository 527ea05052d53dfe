"""The training lab's fair-kernels section (labs/training/kernels_section.py) in both languages: its
two charts, the ratios as metrics, and every sentence the core chose for the shipped measurement."""

from __future__ import annotations

import pytest

from labs.training.fair_view import shipped_kernel_view
from tests.apptest_util import (
    assert_claims_shown,
    decode,
    figures,
    open_app,
    shown_number,
    shown_text,
)
from ui.i18n import translator

HEADINGS = {
    "en": "The speed question, asked fairly",
    "id": "Perbandingan kecepatan yang adil",
}


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_section_shows_both_fair_ratios_and_its_sentences(lang: str) -> None:
    at = open_app("training", lang=lang)
    assert not at.exception, [e.value for e in at.exception]
    assert HEADINGS[lang] in [h.value for h in at.header]
    view = shipped_kernel_view()
    assert_claims_shown(at, view.claims, lang)
    tr = translator(lang)
    for name, key in (("step_ops", ("step", "ops")), ("step_fused", ("step", "fused"))):
        [value] = [m.value for m in at.metric if m.label == tr(f"training.fair_metric_{name}")]
        assert value.endswith("×")
        assert shown_number(value.removesuffix("×"), lang) == pytest.approx(
            view.ratios[key], rel=5e-3
        )
    charts = figures(at)
    for what, scale in (("step", 1e3), ("layer", 1e6)):
        drawn = {t["name"]: decode(t["y"]) for t in charts[f"fair_{what}"]["data"]}
        timing = view.timings[("rms", "fused")]
        assert drawn["RMSNorm"][1] == pytest.approx(scale * getattr(timing, what).median)
        assert set(drawn) == {"RMSNorm", "LayerNorm"} | ({"DyT"} if view.dyt else set())
    page = "\n".join(shown_text(at))
    for kernel in ("ops", "fused"):
        assert tr(f"training.fair_{kernel}_heading") in page
