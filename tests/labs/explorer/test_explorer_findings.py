"""Links at which the explorer once said something false, opened as a visitor would.

Each test opens the exact link in both languages and holds the page's sentences to numbers
recomputed here with plain numpy: RMS(x) has no eps in it (the quantities with eps are the
denominators), a sentence about "here" quotes the outputs as the chosen dtype computed them,
and a tolerance scales with what it compares.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.inputs import make_input
from tests.apptest_util import metric, open_app, shown_text
from ui import fmt
from ui.i18n import t

LANGS = ["en", "id"]


def page(lang: str, **link: str) -> str:
    at = open_app(lang=lang, **link)
    assert not at.exception, [e.value for e in at.exception]
    return "\n".join(shown_text(at))


def rms(x: np.ndarray) -> float:
    """Root mean square, no eps: |x| / sqrt(d)."""
    return float(np.linalg.norm(x)) / math.sqrt(x.shape[-1])


# --- pRMSNorm: the RMS it quotes and decides on is RMS without eps -----------------------------

FAR = {"en": "more than 5% off", "id": "meleset lebih dari 5%"}
CLOSE = {"en": "within 5%", "id": "meleset tidak lebih dari 5%"}


@pytest.mark.parametrize("lang", LANGS)
def test_partial_rms_of_a_tiny_ramp_is_far_from_rms_x(lang: str) -> None:
    link = {"d": "64", "dist": "ramp", "partial": "0.0625", "scale": "0.0001"}
    x = make_input(64, dist="ramp", scale=1e-4)
    head, whole = rms(x[:4]), rms(x)
    assert head / whole > 1.6  # 1.651e-4 against 1.016e-4
    text = page(lang, **link)
    assert FAR[lang] in text and CLOSE[lang] not in text
    assert fmt.num(head, lang=lang) in text and f"RMS(x) = {fmt.num(whole, lang=lang)}" in text
    at = open_app(lang=lang, **link)
    assert math.isclose(metric(at, "RMS(x)"), whole, rel_tol=1e-3)


@pytest.mark.parametrize("lang", LANGS)
def test_partial_rms_with_a_large_eps_quotes_rms_and_names_the_denominators(lang: str) -> None:
    x = np.array([1e-4, 1e-2])
    text = page(lang, x="0.0001,0.01", eps="10", partial="0.5")
    assert FAR[lang] in text and CLOSE[lang] not in text
    against = {"en": "is {}, against RMS(x) = {}", "id": "adalah {}, dibandingkan RMS(x) = {}"}
    assert against[lang].format(fmt.num(rms(x[:1]), lang=lang), fmt.num(rms(x), lang=lang)) in text
    # sqrt(mean + eps) is quoted only as a denominator.
    dens = (
        fmt.num(math.sqrt(1e-8 + 10), lang=lang),
        fmt.num(math.sqrt(float(np.mean(x**2)) + 10), lang=lang),
    )
    named = {"en": "the denominators are {} and {}", "id": "penyebutnya {} dan {}"}
    assert named[lang].format(*dens) in text


# --- "Here" quotes the outputs as the dtype computed them --------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_float16_overflow_sphere_quotes_the_outputs_shown(lang: str) -> None:
    link = {"d": "3", "scale": "10000", "dtype": "float16", "backend": "torch"}
    at = open_app(lang=lang, **link)
    assert not at.exception
    # Every x^2 overflows float16: the outputs, and the metrics, are 0.
    assert metric(at, "‖RMSNorm(x)‖") == 0 and metric(at, "‖LayerNorm(x)‖") == 0
    text = "\n".join(shown_text(at))
    assert "‖RMSNorm(x)‖ = 0" in text and "‖LayerNorm(x)‖ = 0" in text
    assert "‖RMSNorm(x)‖ = 1.732" not in text
    # The plane's float64 picture says it is float64, not the float16 computation, and its
    # sentences quote the float16 outputs beside the picture's distances.
    label = {"en": "not the float16 computation", "id": "bukan komputasi float16"}
    assert text.count(label[lang]) == 2  # the geometry and the explanations
    picture = {"en": "In the float64 picture", "id": "Dalam gambar float64"}
    assert text.count(picture[lang]) == 2 and text.count("‖LayerNorm(x)‖ = 0") == 2


@pytest.mark.parametrize("lang", LANGS)
def test_float64_whose_squares_underflow_says_its_pictures_are_not_its_computation(lang: str):
    # x = 1e-200: float64's own x^2 underflow, so the page's RMSNorm divides by 0 (outputs inf),
    # while its pictures and explanations rescale x first and read a finite RMS.
    at = open_app(lang=lang, x="1e-200,3e-200", eps="0")
    assert not at.exception
    assert [m.value for m in at.metric if m.label == "‖RMSNorm(x)‖"] == ["∞"]
    label = {"en": "not the float64 computation", "id": "bukan komputasi float64"}
    assert "\n".join(shown_text(at)).count(label[lang]) == 2


# --- Tiny typed vectors: verdicts relative to the vector, mu / RMS(x) without eps --------------

TINY_LINKS = [{"x": "1e-15,3e-15"}, {"x": "1e-12,3e-12", "eps": "10"}]
# The sentence that finds no offset to remove (why_offset_none), in every wording it had.
NO_OFFSET = {"en": "there is no offset to remove", "id": "tidak ada pergeseran yang perlu dihapus"}
SAME = {"en": "the two normalisations are the same", "id": "kedua normalisasi itu sama"}


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("link", TINY_LINKS, ids=lambda link: link["x"])
def test_tiny_typed_vector_keeps_its_mean_and_its_difference(link: dict, lang: str) -> None:
    typed = np.array([float(v) for v in link["x"].split(",")])
    eps = float(link.get("eps", 1e-5))
    text = page(lang, **link)
    ratio = float(np.mean(typed)) / rms(typed)  # 0.8944, no eps
    assert f"μ/RMS(x) = {fmt.num(ratio, lang=lang)}" in text
    assert NO_OFFSET[lang] not in text and SAME[lang] not in text
    # RMSNorm(x) and LayerNorm(x) differ by about 6.3e-13, on outputs of at most 9.5e-13.
    full = typed / math.sqrt(float(np.mean(typed**2)) + eps)
    layer = (typed - typed.mean()) / math.sqrt(float(np.var(typed)) + eps)
    diff = float(np.max(np.abs(full - layer)))
    assert diff > 0.5 * float(np.max(np.abs(full)))
    assert fmt.num(diff, lang=lang) in text


# --- The notes say where eps came from -----------------------------------------------------


@pytest.mark.parametrize("lang", LANGS)
def test_eps_note_does_not_say_the_link_gave_it(lang: str) -> None:
    text = page(lang, d="8")
    assert "given explicitly" not in text and "diberikan secara eksplisit" not in text
    default = {"en": "ε = 1e-5, this page's default", "id": "ε = 1e-5, nilai bawaan halaman ini"}
    assert default[lang] in text
    chosen = {"en": "ε = 0.01, chosen on this page", "id": "ε = 0,01, dipilih di halaman ini"}
    assert chosen[lang] in page(lang, d="8", eps="0.01")


# --- States the claims sweep found a sentence false in -----------------------------------------

BASE = {"typed": None, "d": 16, "dist": "normal", "seed": 0, "offset": 0.0, "scale": 1.0,
        "eps": 1e-5, "gain": 1.0, "gain_pattern": "constant", "bias": 0.0, "rms_bias": 0.0,
        "partial": 1.0, "dtype": "float64", "torch": False}  # fmt: skip
SWEEP_FOUND = [
    # Nearly constant, p < 1: the plane projected onto a direction of x - mu that was mostly
    # rounding, and put RMSNorm's point 2e-5 off its radius.
    {"typed": [-1.0] * 20 + [-1.0000000002220446], "scale": 1e-4, "offset": 0.1,
     "gain": 0.8333096189852585, "partial": 0.0625, "eps": 1e-12},
    # Constant to float64 rounding, mu/RMS(x) = -1: "the two normalisations are the same".
    {"typed": [-890358204122990.9, -890358204122991.2], "scale": 1e4, "gain": -1.0,
     "partial": 0.0625, "eps": 1e-8},
    # A first coordinate of 4.3e-152 beside 9e16: its square in units of max|x| underflowed, and
    # the RMS of the first k read 0.
    {"typed": [0.0, -2000010000000.0, -9035959492229.53, -6605871424090.409], "scale": 1e4,
     "offset": 4.307244801723098e-152, "eps": 10.0, "partial": 0.03125},
    # x = -1.8e-212, constant: mu^2 / RMS^2 is 1, but its squares underflow and it read 0 %.
    {"typed": [-0.4104074091882375] * 5 + [-0.4104074091882376], "scale": 0.0,
     "offset": -1.7809865830373972e-212, "eps": 1.0},
    # A gain of 3.7e-190: |RMSNorm(x)| = 1.2e-189, whose squares underflow; it read 0.
    {"typed": [100.0, 100.0, 100.00000002220446], "scale": 1e4, "offset": 3.85543879098298,
     "gain": 3.6732904813267827e-190, "rms_bias": 3.6732904813267827e-190,
     "gain_pattern": "random", "seed": 2, "eps": 3.0},
    # x = 1e-200, eps = 0: float64's RMSNorm(x - mu) divides by an underflowed 0, and the two
    # LayerNorms "differ by at most inf: the same numbers up to rounding".
    {"typed": [1e-200, 3e-200], "eps": 0.0},
]  # fmt: skip


@pytest.mark.parametrize("found", SWEEP_FOUND, ids=range(len(SWEEP_FOUND)))
def test_every_claim_holds_where_the_sweep_once_found_one_false(found: dict) -> None:
    from tests.claims import explorer as oracle

    state = {**BASE, **found}
    claims = oracle.view(state).claims
    for claim in claims.values():
        oracle.CHECKS[claim.key](state, claim)


@pytest.mark.parametrize("lang", ["en", "id"])
def test_the_zero_vector_gets_no_angle_and_no_share(lang: str) -> None:
    """x = 0 has no direction and RMS² = 0: no sentence quotes an angle with 1 or the mean's
    share of RMS² (an outside audit found "an angle of 0°" and "0 % of RMS²" there)."""
    text = "\n".join(shown_text(open_app("explorer", x="0,0,0", lang=lang)))
    assert t("explorer.plane_position_zero", lang) in text
    assert t("explorer.why_moment_share_zero", lang) in text
    assert "0°" not in text and "0%" not in text
