"""Numbers in the page's language: written with Babel's locale data, read back the same way,
and typed vectors read as the page's language writes numbers while links stay one language.

The readings here use Babel's own parser (``babel.numbers.parse_decimal``) or plain Python
floats, not ``ui.fmt``'s: a formatter and its own parser could agree on a wrong mark.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from babel.numbers import parse_decimal
from hypothesis import given, settings
from hypothesis import strategies as st

from core.inputs import VectorParseError, link_vector, other_reading, parse_vector
from tests.apptest_util import metric, open_app, shown_number
from tests.hypothesis_util import examples
from ui import fmt
from ui.i18n import t

LANGS = ("en", "id")
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


def babel_read(text: str, lang: str) -> float:
    """``text`` as Babel reads a number of ``lang``, with ``fmt``'s ``e`` exponent."""
    mantissa, _, exponent = text.partition("e")
    value = parse_decimal(mantissa, locale=lang, strict=True)
    return float(value.scaleb(int(exponent)) if exponent else value)


@pytest.mark.parametrize(
    ("value", "en", "id_"),
    [
        (1.016, "1.016", "1,016"),
        (1234.5, "1,234", "1.234"),
        (-12345.6, "-12,350", "-12.350"),
        (0.25, "0.25", "0,25"),
        (1.5e-8, "1.5e-8", "1,5e-8"),
        (8192, "8,192", "8.192"),
        (0.0, "0", "0"),
    ],
)
def test_each_language_writes_its_own_marks(value: float, en: str, id_: str) -> None:
    assert fmt.num(value, lang="en") == en
    assert fmt.num(value, lang="id") == id_


def test_percentages_and_tex_follow_the_language() -> None:
    # CLDR's percent pattern in both languages: no space before the sign, as the charts write it.
    from babel.numbers import format_percent

    assert fmt.pct(0.4213, lang="id") == "42,1%" == format_percent(0.421, "#,##0.0%", locale="id")
    assert fmt.pct(0.4213, lang="en") == "42.1%" == format_percent(0.421, "#,##0.0%", locale="en")
    # In TeX a bare comma is punctuation followed by a space; braced, it is a decimal mark.
    assert fmt.tex(1.5e-8, lang="id") == r"1{,}5 \times 10^{-8}"


@settings(max_examples=examples(300), deadline=None)
@given(value=finite, lang=st.sampled_from(LANGS))
def test_a_written_number_reads_back_to_itself_at_its_digits(value: float, lang: str) -> None:
    text = fmt.num(value, lang=lang)
    assert babel_read(text, lang) == pytest.approx(float(f"{value:.4g}"), rel=1e-12, abs=0)
    assert fmt.parse(text, lang) == babel_read(text, lang)


@settings(max_examples=examples(200), deadline=None)
@given(
    values=st.lists(finite.filter(lambda v: abs(v) <= 1e15), min_size=2, max_size=12),
    lang=st.sampled_from(LANGS),
)
def test_a_vector_written_for_a_text_box_reads_back_exactly(values: list, lang: str) -> None:
    text = fmt.vector(values, lang, exact=True)
    read = parse_vector(text, decimal=fmt.marks(lang)[0])
    assert read.tolist() == values
    # The link's form is the same in both languages and reads back with Python's float().
    assert [float(v) for v in link_vector(read).split(",")] == values


def test_an_indonesian_vector_reads_as_three_numbers() -> None:
    assert parse_vector("1,5; 2,5; -0,5", decimal=",").tolist() == [1.5, 2.5, -0.5]
    assert parse_vector("1,5 2,5 −0,5", decimal=",").tolist() == [1.5, 2.5, -0.5]
    assert parse_vector("1.234,5; 2", decimal=",").tolist() == [1234.5, 2.0]
    # The same text the English way is six numbers.
    assert parse_vector("1,5; 2,5; -0,5", decimal=".").tolist() == [1, 5, 2, 5, -0.0, 5]
    with pytest.raises(VectorParseError, match="not a number"):
        parse_vector("1.5; 2", decimal=",")  # a point is a group mark: 1.5 is not a number


def test_the_other_reading_is_offered_only_where_it_differs() -> None:
    assert other_reading("1,5; 2,5; -0,5", decimal=".").tolist() == [1.5, 2.5, -0.5]
    assert other_reading("1,2,3; 4", decimal=",").tolist() == [1, 2, 3, 4]
    assert other_reading("1; 2; 3", decimal=",") is None  # both ways the same
    assert other_reading("1,5x", decimal=",") is None  # no way


def test_typed_indonesian_vector_gives_mean_1_167_and_a_language_free_link() -> None:
    at = open_app("explorer", lang="id")
    at.text_input(key="x_typed").input("1,5; 2,5; -0,5").run()
    assert not at.exception and not at.error
    mean = next(m for m in at.metric if m.label == "mean(x)")
    assert mean.value == "1,167"
    assert math.isclose(metric(at, "mean(x)"), (1.5 + 2.5 - 0.5) / 3, rel_tol=1e-3)
    assert at.query_params["x"] == "1.5,2.5,-0.5"
    read = t("common.vector_read", "id", count=3, values="1,5; 2,5; -0,5")
    assert read in [c.value for c in at.sidebar.caption]
    # The same link in English shows the same vector with its own marks.
    english = open_app("explorer", lang="en", x=at.query_params["x"])
    assert english.text_input(key="x_typed").value == "1.5,2.5,-0.5"
    assert next(m for m in english.metric if m.label == "mean(x)").value == "1.167"
    # And back in Indonesian, the box shows the link's vector written the Indonesian way.
    again = open_app("explorer", lang="id", x="1.5,2.5,-0.5")
    assert again.text_input(key="x_typed").value == "1,5; 2,5; -0,5"


def test_the_other_reading_can_be_taken_with_one_press() -> None:
    at = open_app("explorer", lang="en")
    at.text_input(key="x_typed").input("1,5; 2,5").run()
    assert metric(at, "mean(x)") == pytest.approx(3.25, rel=1e-3)  # 1, 5, 2, 5
    offer = t("common.vector_other_comma", "en", count=2, values="1.5, 2.5")
    assert offer in [c.value for c in at.sidebar.caption]
    next(b for b in at.button if b.key == "x_typed_other").click().run()
    assert at.text_input(key="x_typed").value == "1.5, 2.5"
    assert metric(at, "mean(x)") == pytest.approx(2.0, rel=1e-3)


def test_switching_language_rewrites_the_box_not_the_vector() -> None:
    at = open_app("explorer", lang="en")
    at.text_input(key="x_typed").input("0.25, -3, 1e-3").run()
    before = metric(at, "RMS(x)")
    at.segmented_control(key="lang").set_value("id").run()
    assert at.text_input(key="x_typed").value == "0,25; -3; 0,001"
    assert metric(at, "RMS(x)") == before
    assert [float(v) for v in at.query_params["x"].split(",")] == [0.25, -3, 0.001]


@pytest.mark.parametrize(
    "query", [{"d": "64", "dist": "ramp", "partial": "0.0625", "scale": "0.0001"}, {"offset": "3"}]
)
def test_indonesian_metrics_and_tables_are_the_english_ones_with_swapped_marks(query) -> None:
    shown = {}
    for lang in LANGS:
        at = open_app("explorer", lang=lang, **query)
        metrics = [m.value for m in at.metric]
        text = " ".join(m.value for m in at.markdown)
        shown[lang] = (metrics, text)
        assert all(np.isfinite(shown_number(v, lang)) for v in metrics if v != "≈ 0")
    swap = str.maketrans(".,", ",.")
    assert [v.translate(swap) for v in shown["en"][0]] == shown["id"][0]
    assert "1,016e-4" in shown["id"][1] or "1,016e-4" not in shown["en"][1].translate(swap)
    if query.get("partial"):
        assert "| 1.016e-4 |" in shown["en"][1] and "| 1,016e-4 |" in shown["id"][1]


def test_figures_carry_the_language_separators() -> None:
    from tests.apptest_util import figures

    for lang, separators in (("en", ".,"), ("id", ",.")):
        at = open_app("explorer", lang=lang)
        specs = figures(at)
        assert specs and all(s["layout"]["separators"] == separators for s in specs.values())


def test_exports_keep_a_decimal_point_on_an_indonesian_page() -> None:
    from ui.chart import columns_csv
    from ui.export import coordinates_csv

    with fmt.language("id"):
        assert fmt.num(1.5) == "1,5"  # the page's numbers, for contrast
        texts = [
            coordinates_csv({"x": np.array([1.5, -1234.25])}),
            columns_csv({"i": [0, 1], "y": [1.5, -1234.25]}),
        ]
    for text in texts:
        rows = [line.split(",") for line in text.strip().splitlines()[1:]]
        assert [float(row[-1]) for row in rows] == [1.5, -1234.25]


def test_ladder_labels_follow_the_language_and_the_link_does_not() -> None:
    for lang, mark in (("en", "."), ("id", ",")):
        at = open_app("explorer", lang=lang, partial="0.0625")
        ladder = at.select_slider(key="partial")
        assert ladder.value == 0.0625
        assert f"0{mark}0625" in ladder.options
        ladder.set_value(0.5).run()
        assert at.query_params["partial"] == "0.5"


def test_slider_stops_follow_the_language_and_the_link_does_not() -> None:
    for lang, mark in (("en", "."), ("id", ",")):
        at = open_app("explorer", lang=lang, offset="-0.3", gain="1.25")
        offset, gain = at.select_slider(key="offset"), at.select_slider(key="gain")
        assert (offset.value, gain.value) == (-0.3, 1.25)
        assert f"-0{mark}3" in offset.options and f"1{mark}25" in gain.options
        stops = [round(-20 + i * 0.1, 1) for i in range(401)]  # the offset's, -20 to 20
        assert [babel_read(o, lang) for o in offset.options] == stops
        offset.set_value(1.7).run()
        assert at.query_params["offset"] == "1.7" and not at.exception


def test_a_link_between_two_stops_takes_the_nearest_with_a_notice() -> None:
    at = open_app("explorer", lang="id", offset="0.33")
    assert at.select_slider(key="offset").value == 0.3 and at.query_params["offset"] == "0.3"
    notice = " ".join(w.value for w in at.warning)
    assert "`offset`" in notice and "0,3" in notice


@settings(max_examples=examples(200), deadline=None)
@given(values=st.lists(finite, max_size=20), lang=st.sampled_from(LANGS))
def test_a_table_column_is_written_as_each_number_is(values: list, lang: str) -> None:
    assert fmt.column(values, lang) == [fmt.num(v, lang=lang) for v in values]
    assert fmt.column(["k1", 3, True], lang) == ["k1", "3", True]


def test_a_count_in_a_sentence_is_grouped_and_a_seed_is_not() -> None:
    """ "11712 titik" and "8683520 elemen" read as the language groups them; a seed is a name."""
    from ui.i18n import t

    counted = t("scurve.sample_caption", "id", sample=500, points=11712)
    assert "11.712 titik" in counted and "11712" not in counted
    assert "11,712 points" in t("scurve.sample_caption", "en", sample=500, points=11712)
    model = t("scurve.model_caption", "en", seed=123456, layers=4, d=64, steps=2000, tokens=183,
              points=11712)  # fmt: skip
    assert "seed 123456" in model and "2,000 steps" in model and "11,712 points" in model
