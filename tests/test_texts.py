"""Every text exists in English and Bahasa Indonesia, and every key the code asks for exists."""

import re
import string
from pathlib import Path

import pytest

from labkit.claims import Claim
from ui.i18n import LANGUAGES, TEXT_DIR, Translator, catalogue, language_from_locale, t

ROOT = Path(__file__).resolve().parent.parent
KEYS = sorted(catalogue())


# One test per rule, each listing every key that breaks it (a test per key made 3,236 items).


def test_every_key_has_both_languages() -> None:
    texts = catalogue()
    wrong = [f"{key} has {sorted(texts[key])}" for key in KEYS if set(texts[key]) != set(LANGUAGES)]
    empty = [
        f"{key} is empty in {lang}"
        for key in KEYS
        for lang, text in texts[key].items()
        if not (isinstance(text, str) and text.strip())
    ]
    assert not wrong + empty, "\n".join(wrong + empty)


def test_both_languages_use_the_same_fields() -> None:
    differ = []
    for key in KEYS:
        fields = {
            lang: {name for _, name, _, _ in string.Formatter().parse(text) if name}
            for lang, text in catalogue()[key].items()
        }
        if fields.get("en") != fields.get("id"):
            differ.append(f"{key}: {fields}")
    assert not differ, "\n".join(differ)


def test_every_literal_key_in_the_code_exists() -> None:
    sources = [
        p
        for d in ("app.py", "pages", "ui")
        for p in ([ROOT / d] if d.endswith(".py") else sorted((ROOT / d).glob("*.py")))
    ]
    pattern = re.compile(r"""\b(?:t|tr)\(\s*["']([a-z_]+\.[a-z0-9_]+)["']""")
    missing = {
        (path.name, key)
        for path in sources
        for key in pattern.findall(path.read_text())
        if key not in catalogue()
    }
    assert not missing


def test_every_page_file_has_a_text_file_with_title_intro_and_nav() -> None:
    for page in sorted((ROOT / "pages").glob("*.py")):
        topic = page.stem
        assert (TEXT_DIR / f"{topic}.toml").exists(), topic
        for name in ("nav", "title", "intro"):
            assert f"{topic}.{name}" in catalogue(), f"{topic}.{name}"


def test_lookup_substitutes_fields_and_falls_back_to_english() -> None:
    assert t("common.param_above", "id", key="d", raw="`9`", limit="8") == (
        "Parameter tautan `d`: `9` melebihi batas atas; memakai batas atas, 8."
    )


def test_chart_words_are_each_chart_s_words_then_its_count_of_values_not_drawn() -> None:
    no_finite = Claim("charts.no_finite", {"total": 4})
    not_finite = Claim("charts.not_finite", {"count": 1, "total": 4})
    claims = {"b_words": no_finite, "a_not_finite": not_finite, "a_words": no_finite}
    tr = Translator("en")
    said = [tr.claim(no_finite), tr.claim(not_finite), tr.claim(no_finite)]
    assert tr.chart_words(claims, "a", "b") == " ".join(said)
    assert tr.chart_words(claims, "c") == ""  # no such chart


@pytest.mark.parametrize(
    ("locale", "lang"),
    [("id-ID", "id"), ("in_ID", "id"), ("en-GB", "en"), ("fr-FR", "en"), (None, "en"), ("", "en")],
)
def test_language_from_browser_locale(locale: str | None, lang: str) -> None:
    assert language_from_locale(locale) == lang


def test_a_pair_chart_that_can_be_flat_has_words_for_either_norm_and_both() -> None:
    """``labkit.chart_words.pair_words`` with a rounding level names the flat norms by the key's
    ending: a chart with any of those endings has all three, and the flat words quote no
    position of the norm they call flat."""
    endings = ("_rms_flat", "_layer_flat", "_flat")
    bases = {k.removesuffix(e) for k in KEYS for e in endings if k.endswith(e)}
    bases = {b for b in bases if f"{b}_equal" in catalogue()}  # pair charts (lines have no equal)
    missing = [b + e for b in sorted(bases) for e in endings if b + e not in catalogue()]
    assert not missing, missing
    for base in bases:
        for ending, flat in (("_rms_flat", "rms"), ("_layer_flat", "layer"), ("_flat", "")):
            for lang, text in catalogue()[base + ending].items():
                named = {n for _, n, _, _ in string.Formatter().parse(text) if n}
                quoted = {n for n in named if n.endswith(("_at", "_row", "_col", "_lo"))}
                assert not {n for n in quoted if n.startswith(flat or ("rms", "layer"))}, (
                    base + ending,
                    lang,
                )
