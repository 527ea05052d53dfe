"""Numbers agree with themselves: a number a sentence quotes equals the metric or table cell
that shows the same quantity, to display precision, on every page, in both languages.

Every page is opened by link (``streamlit.testing.v1.AppTest``) in a few states chosen to reach
its extremes (tiny and huge scales, large ε, the smallest and a large width, low-precision
dtypes, typed input). From each run the test collects every metric (label, value), every table
cell (row, column, value, from ``st.table``, ``st.dataframe`` and Markdown tables) and every
sentence (Markdown, captions, notices and the numbers of the LaTeX formulas). Then one rule:

- A **metric's label** (``RMS(x)``, ``‖RMSNorm(x)‖``) or a page's **phrase alias** (``μ``,
  ``Var(x)``) followed by ``=``, ``:`` or ``is``/``adalah`` and a number quotes that quantity.
- A page's **field alias** names a placeholder of its text templates (``{r_rms}``): wherever a
  template holding it is rendered, the number in that place quotes the aliased metric or cell.
  The template is read from ``assets/text`` in the page's language, so one alias covers both.

A quoted number agrees with a shown one when both can be the same value at the precision each
is written with (their rounding intervals overlap); a written 0 agrees with a number below a
millionth of the page's median magnitude (the rounding noise it stands for). An alias can be
suspended where the page says it means something else there (``Aliases.unless``: the plane
drawn with g = 1 under a gain pattern). The alias tables are small and declared per
page; ``test_every_alias_is_quoted`` makes sure each of them matched a sentence in the sampled
states, so that the check cannot silently compare nothing, and ``test_matcher_*`` feed it
fabricated pairs to prove it can fail.
"""

from __future__ import annotations

import fnmatch
import math
import re
import statistics
import string
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from urllib.parse import urlencode

import pytest

from tests.apptest_util import SHOWN_KINDS, open_app
from ui.i18n import catalogue
from ui.nav import PAGES

LANGS = ("en", "id")

# ---------------------------------------------------------------------------------------------
# Numbers as written on a page


# A number as ui.fmt writes it (``-0.2897``, ``1.235e-8``, ``≈ 0``, ``∞``), in either locale's
# decimal mark, with the units the pages put after numbers. A percentage is read as a fraction.
_NUMBER = r"≈\s?0|[-−]?(?:\d+(?:[.,]\d+)*(?:e[-+−]?\d+)?|∞)|NaN"
_UNIT = r"\s?(?:%|ms|µs|μs|×)|\ss(?!\w)"
# Not the first term of an expression (``1.94/18.52``, ``2 × 3``, ``2⁻²⁴``).
_NOT_EXPRESSION = r"(?![\w/^(⁻¹²³⁴⁵⁶⁷⁸⁹⁰])(?!\s?[×·/+−-]\s?[\d(√])"
QUOTED = rf"(?P<num>(?:{_NUMBER})(?:{_UNIT})?){_NOT_EXPRESSION}"
# How a label is joined to the number it names: "=", ":", "is" (English), "adalah" (Indonesian).
CONNECTOR = r"\**\s*(?:=|:|\bis\b|\badalah\b|\bialah\b|\bsebesar\b)\s*\**\s*"
# A label starts a word: not glued to what precedes it ("μ/RMS(x)" is not "RMS(x)").
LABEL_START = r"(?<![^\s(\[*“\"‘'])"


@dataclass(frozen=True)
class Quoted:
    """One written number: its value, half its last digit's step, its unit, whether zero."""

    text: str
    value: float
    half: float
    unit: str

    @property
    def zero(self) -> bool:
        return self.value == 0


def _decimal_mark(mantissa: str, lang: str) -> str | None:
    """The decimal mark of ``mantissa``; the other of ``.``/``,`` is a digit group separator.

    English pages write ``.`` and group with ``,``; Indonesian pages (Babel's locale data) the
    reverse.
    """
    marks = [c for c in mantissa if c in ".,"]
    if not marks:
        return None
    if len(set(marks)) == 2:
        return marks[-1]
    mark = marks[0]
    if len(marks) > 1:  # "110,928,000": groups only
        return None
    # One mark: the language's decimal mark, or else a group separator ("1,234" / "1.234").
    return mark if mark == {"en": ".", "id": ","}[lang] else None


def parse_number(text: str, lang: str) -> Quoted | None:
    """``text`` as one written number, or None when it is not exactly one."""
    match = re.fullmatch(rf"\s*({_NUMBER})({_UNIT})?\s*", text)
    if match is None:
        return None
    body, unit = match.group(1), (match.group(2) or "").strip()
    body = body.replace("−", "-")
    if body.startswith("≈"):
        value, half = 0.0, 0.0
    elif body == "NaN":
        value, half = math.nan, 0.0
    elif body.lstrip("-") == "∞":
        value, half = (-math.inf if body.startswith("-") else math.inf), 0.0
    else:
        mantissa, _, exponent = body.partition("e")
        mark = _decimal_mark(mantissa, lang)
        whole, frac = mantissa.rpartition(mark)[::2] if mark else (mantissa, "")
        whole = whole.replace(",", "").replace(".", "")
        power = int(exponent) if exponent else 0
        value = float(f"{whole}.{frac}" if frac else whole) * 10.0**power
        half = 0.5 * 10.0 ** (power - len(frac))
    if unit == "%":
        value, half, unit = value / 100, half / 100, ""
    return Quoted(text.strip(), value, half, unit)


def parse_shown(text: str, lang: str) -> list[Quoted]:
    """A shown value: one number, or a range ``0.36–0.93×`` as its two ends (one unit)."""
    low, dash, high = text.partition("–")
    if not dash:
        single = parse_number(text, lang)
        return [] if single is None else [single]
    ends = [parse_number(low, lang), parse_number(high, lang)]
    if None in ends:
        return []
    return [Quoted(q.text, q.value, q.half, ends[1].unit) for q in ends]


def agree(a: Quoted, b: Quoted, noise: float) -> bool:
    """Whether ``a`` and ``b`` can be one value written at their two precisions.

    A zero (``0`` or ``≈ 0``) agrees with a number no larger than ``noise``: the page writes
    rounding noise as 0, and the quantity it is beside sets how large that noise can be.
    """
    if math.isnan(a.value) or math.isnan(b.value):
        return math.isnan(a.value) and math.isnan(b.value)
    if math.isinf(a.value) or math.isinf(b.value):
        return a.value == b.value
    if a.zero or b.zero:
        return abs(a.value - b.value) <= noise
    slack = 1e-9 * max(abs(a.value), abs(b.value))
    return abs(a.value - b.value) <= a.half + b.half + slack


# A zero agrees with numbers up to this fraction of the page's typical magnitude.
NOISE_SHARE = 1e-6


# ---------------------------------------------------------------------------------------------
# What a page shows


@dataclass(frozen=True)
class Shown:
    """Everything one run of a page shows: metrics, table cells and sentences."""

    link: str
    lang: str
    metrics: tuple[tuple[str, str], ...]
    cells: tuple[tuple[str, str, str], ...]
    texts: tuple[str, ...]

    def numbers(self) -> list[Quoted]:
        values = [v for _, v in self.metrics] + [v for _, _, v in self.cells]
        return [q for v in values for q in parse_shown(v, self.lang)]

    @cached_property
    def noise(self) -> float:
        """How large a number the page may write as 0: a share of its median magnitude."""
        sizes = [abs(q.value) for q in self.numbers() if q.value and math.isfinite(q.value)]
        return NOISE_SHARE * statistics.median(sizes) if sizes else 0.0


def _markdown_tables(body: str) -> tuple[str, list[tuple[str, str, str]]]:
    """``body`` without its Markdown tables, and their cells as (row, column, value)."""
    kept, cells, head = [], [], None
    for line in body.splitlines():
        if not line.startswith("|"):
            kept.append(line)
            head = None
            continue
        row = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None:
            head = row
        elif not all(set(c) <= set("-: ") for c in row):
            cells += [(row[0], col, value) for col, value in zip(head[1:], row[1:], strict=False)]
    return "\n".join(kept), cells


def _frame_cells(frame) -> list[tuple[str, str, str]]:
    return [
        (str(index), str(column), str(value))
        for index, row in frame.iterrows()
        for column, value in row.items()
    ]


# LaTeX numbers as ui.fmt.tex writes them, back in ui.fmt.num's form; Greek letters as text.
_TEX = (
    (r"(?<=\d)\{,\}(?=\d)", ","),  # a decimal comma (or an English group mark) kept from TeX
    (r"(\d(?:[.,]\d+)?) \\times 10\^\{(-?\d+)\}", r"\1e\2"),
    (r"(?<![\d.])10\^\{(-?\d+)\}", r"1e\1"),
    (r"\\approx 0", "≈ 0"),
    (r"\\mu\b", "μ"),
    (r"\\sigma\b", "σ"),
    (r"\\infty\b", "∞"),
)


def tex_text(formula: str) -> str:
    for pattern, repl in _TEX:
        formula = re.sub(pattern, repl, formula)
    return formula


def read_page(at, link: str, lang: str) -> Shown:
    metrics = tuple((m.label, str(m.value)) for m in at.metric)
    cells: list[tuple[str, str, str]] = []
    for kind in ("table", "dataframe"):
        for element in at.get(kind):
            cells += _frame_cells(element.value)
    texts = []
    for kind in SHOWN_KINDS:
        for element in at.get(kind):
            body, table = _markdown_tables(element.value)
            texts.append(body)
            cells += table
    texts += [tex_text(e.value) for e in at.get("latex")]
    return Shown(link, lang, metrics, tuple(cells), tuple(texts))


# ---------------------------------------------------------------------------------------------
# What a sentence quotes


@dataclass(frozen=True)
class Metric:
    """The metrics labelled by any of the text ``keys`` (their placeholders match anything)."""

    keys: tuple[str, ...]

    def __init__(self, *keys: str) -> None:
        object.__setattr__(self, "keys", keys)


@dataclass(frozen=True)
class Cell:
    """Table cells by row and column: each a text key (placeholders match anything), the
    literal header the page writes, or ``{field}``: the text the sentence put in that field."""

    row: str
    column: str


def _template(key: str, lang: str) -> str:
    texts = catalogue()[key]
    return texts.get(lang) or texts["en"]


def _template_regex(template: str, numbered: str | None = None) -> str:
    """A regex for ``template`` rendered: placeholder ``numbered`` as a quoted number, the
    others as any text."""
    parts: list[str] = []
    named = {"num"}  # QUOTED's own group
    for literal, name, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if name is None:
            continue
        if name == numbered and QUOTED not in parts:
            parts.append(QUOTED)
        elif numbered is not None and name.isidentifier() and name not in named:
            # The other placeholders, by name: a Cell's row may be one of them.
            named.add(name)
            parts.append(rf"(?P<{name}>.+?)")
        else:
            parts.append(r".+?")
    return "".join(parts)


def _header_matches(spec: str, header: str, lang: str) -> bool:
    if spec in catalogue():
        return re.fullmatch(_template_regex(_template(spec, lang)), header) is not None
    return header == spec


def shown_values(
    shown: Shown, target: Metric | Cell, fields: dict[str, str] | None = None
) -> list[Quoted]:
    """The numbers ``shown`` writes for ``target`` (``fields``: what a sentence's other
    placeholders hold, for a ``Cell`` whose row or column is one of them)."""

    def header(spec: str, text: str) -> bool:
        if spec.startswith("{") and spec.endswith("}"):
            return text == (fields or {}).get(spec[1:-1], "").strip("`")
        return _header_matches(spec, text, shown.lang)

    if isinstance(target, Metric):
        found = [
            v
            for label, v in shown.metrics
            if any(_header_matches(key, label, shown.lang) for key in target.keys)
        ]
    else:
        found = [
            v
            for row, column, v in shown.cells
            if header(target.row, row) and header(target.column, column)
        ]
    return [q for v in found for q in parse_shown(v, shown.lang)]


@dataclass(frozen=True)
class Aliases:
    """One page's names for what it shows. ``phrases``: used like a metric's label, in every
    language (symbols such as ``μ``). ``fields``: ``"<template glob>:<placeholder>"`` of the
    page's texts (``"plane_*:r_rms"``)."""

    topic: str
    phrases: dict[str, Metric | Cell] | None = None
    fields: dict[str, Metric | Cell] | None = None
    # alias -> a text key: where the page shows that text, the alias names something else.
    unless: dict[str, str] | None = None

    def active(self, name: str, shown: Shown) -> bool:
        key = (self.unless or {}).get(name)
        if key is None:
            return True
        note = re.compile(_template_regex(_template(key, shown.lang)))
        return not any(note.search(text) for text in shown.texts)


@dataclass(frozen=True)
class Comparison:
    """One quoted number beside the shown values of the same quantity."""

    link: str
    lang: str
    name: str
    sentence: str
    quoted: Quoted
    shown: tuple[Quoted, ...]
    agrees: bool

    def __str__(self) -> str:
        values = ", ".join(q.text for q in self.shown)
        return (
            f"{self.link} [{self.lang}] {self.name}: the sentence quotes {self.quoted.text}, "
            f"the page shows {values}: ...{self.sentence}..."
        )


def _compare(shown: Shown, name: str, match: re.Match, values: list[Quoted]) -> Comparison | None:
    quoted = parse_number(match.group("num"), shown.lang)
    if quoted is None:
        return None
    # A number quoted without its unit ("15.07 ms" as "({rms_ms} ms against") compares too.
    comparable = tuple(v for v in values if v.unit == quoted.unit or not quoted.unit)
    if not comparable:
        return None
    at = match.start("num")
    sentence = match.string[max(0, at - 80) : match.end("num") + 20].replace("\n", " ")
    agrees = any(agree(quoted, v, shown.noise) for v in comparable)
    return Comparison(shown.link, shown.lang, name, sentence, quoted, comparable, agrees)


def _phrase_hits(shown: Shown, name: str, values: list[Quoted]) -> Iterable[Comparison]:
    pattern = re.compile(LABEL_START + re.escape(name) + CONNECTOR + QUOTED)
    for text in shown.texts:
        for match in pattern.finditer(text):
            found = _compare(shown, name, match, values)
            if found is not None:
                yield found


def comparisons(shown: Shown, aliases: Aliases | None = None) -> list[Comparison]:
    """Every number ``shown``'s sentences quote for a metric label or an alias."""
    found: list[Comparison] = []
    labels = dict.fromkeys(label for label, _ in shown.metrics)
    for label in labels:
        values = [q for lab, v in shown.metrics if lab == label for q in parse_shown(v, shown.lang)]
        if values:
            found += _phrase_hits(shown, label, values)
    if aliases is None:
        return found
    for phrase, target in (aliases.phrases or {}).items():
        if not aliases.active(phrase, shown):
            continue
        values = shown_values(shown, target)
        if values:
            found += _phrase_hits(shown, phrase, values)
    for spec, target in (aliases.fields or {}).items():
        if not aliases.active(spec, shown):
            continue
        pattern_keys, _, field = spec.partition(":")
        for key in templates_with(aliases.topic, pattern_keys, field):
            pattern = re.compile(_template_regex(_template(key, shown.lang), numbered=field))
            for text in shown.texts:
                for match in pattern.finditer(text):
                    values = shown_values(shown, target, match.groupdict())
                    hit = _compare(shown, spec, match, values)
                    if hit is not None:
                        found.append(hit)
    return found


@cache
def templates_with(topic: str, pattern: str, field: str) -> tuple[str, ...]:
    """The text keys ``topic.<pattern>`` (a glob) whose templates hold the placeholder
    ``field``."""
    keys = []
    for key, texts in catalogue().items():
        if not fnmatch.fnmatchcase(key, f"{topic}.{pattern}"):
            continue
        names = {n for t in texts.values() for _, n, _, _ in string.Formatter().parse(t) if n}
        if field in names:
            keys.append(key)
    return tuple(keys)


# ---------------------------------------------------------------------------------------------
# The pages: their aliases and the states sampled


ALIASES: dict[str, Aliases] = {
    "explorer": Aliases(
        "explorer",
        phrases={
            "μ": Metric("explorer.metric_mean"),
            "mean(x²)": Cell("explorer.stat_second_moment", "x"),
            "Var(x)": Cell("explorer.stat_variance", "x"),
        },
        fields={
            "coords_caption:m_rms": Cell("explorer.stat_mean", "RMSNorm"),
            "coords_caption:m_layer": Cell("explorer.stat_mean", "LayerNorm"),
            "coords_divisors:mean": Metric("explorer.metric_mean"),
            "plane_*:r_rms": Metric("explorer.metric_norm_rms"),
            "plane_*:r_layer": Metric("explorer.metric_norm_layer"),
            "why_moment:rms2": Cell("explorer.stat_second_moment", "x"),
            # μ/RMS(x) is x's cosine with the direction 1.
            "why_layer_*:ratio": Cell("explorer.stat_cos_ones", "x"),
            "centring_*:ratio": Cell("explorer.stat_cos_ones", "x"),
        },
        unless={
            # The plane shows the outputs without biases and, under a gain pattern, with g = 1.
            "plane_*:r_rms": "explorer.plane_gain_note",
            "plane_*:r_layer": "explorer.plane_gain_note",
            # In a torch dtype LayerNorm subtracts the mean computed in that dtype; the metric
            # is x's mean.
            "coords_divisors:mean": "explorer.precision_setup",
        },
    ),
    "invariance": Aliases(
        "invariance",
        fields={
            "collapse_*:spread": Metric("invariance.metric_spread"),
            "pair_*:dist": Metric("invariance.metric_dist_rms"),
            "pair_*:dist_layer": Metric("invariance.metric_dist_layer"),
        },
    ),
    "residual": Aliases(
        "residual",
        fields={
            "offset_reading:offset_rms": Metric("residual.metric_offset"),
            "offset_reading:offset_layer": Cell("residual.q_stream_mean", "residual.layer_trunk"),
            "explain_swap*:offset_rms": Cell("residual.q_stream_mean", "residual.rms_trunk"),
            "length_*:len_rms": Cell("residual.q_input_norm", "residual.rms_trunk"),
            "length_*:len_layer": Cell("residual.q_input_norm", "residual.layer_trunk"),
            "explain_rms*:cos_rms": Metric("residual.metric_cos"),
            "explain_rms*:share_rms": Cell("residual.q_input_share_ones", "residual.rms_trunk"),
            "explain_layer*:cos_layer": Cell("residual.q_input_cos_ones", "residual.layer_trunk"),
            "share_*:out_rms": Metric("residual.metric_out_share"),
            "share_*:out_layer": Cell("residual.q_output_share_offset", "residual.layer_trunk"),
            "tokens_*:tok_rms": Metric("residual.metric_tokens"),
            "tokens_*:tok_layer": Cell("residual.q_token_cosine", "residual.layer_trunk"),
            # The trained models' sentences and their table.
            **{
                f"{pattern}:{field.format(norm)}": Cell(
                    f"residual.q_{row}", f"residual.trained_{norm}"
                )
                for pattern, field, row in (
                    ("trained_text_loss", "loss_{}", "loss"),
                    ("trained_offset_*", "offset_{}", "stream_mean"),
                    ("trained_share_*", "share_{}_pct", "stream_share_ones"),
                    ("trained_outliers_*", "ratio_{}", "outlier_ratio"),
                )
                for norm in ("rms", "layer", "none")
            },
        },
    ),
    "contracts": Aliases(
        "contracts",
        fields={
            "explain_*:relative": Metric("contracts.metric_rel"),
            "explain_*:max_abs": Metric("contracts.metric_max"),
        },
    ),
    "speed": Aliases(
        "speed",
        fields={
            "paper_text:lo": Metric("speed.paper_metric"),
            "paper_text:hi": Metric("speed.paper_metric"),
        },
    ),
    "backward": Aliases(
        "backward",
        fields={
            "components_upstream:g_ones": Cell("backward.upstream_short", "backward.along_ones"),
            "components_upstream:g_x": Cell("backward.upstream_short", "backward.along_x"),
            "components_rms_*:rms_ones": Cell("backward.grad_rms", "backward.along_ones"),
            "components_rms_*:rms_x": Cell("backward.grad_rms", "backward.along_x"),
            "components_layer_*:layer_ones": Cell("backward.grad_layer", "backward.along_ones"),
            "components_layer_*:layer_x": Cell("backward.grad_layer", "backward.along_x"),
        },
    ),
    "inspector": Aliases(
        "inspector",
        fields={
            "share_large:share_pct": Cell("{name}", "μ²/RMS²"),
            "outlier_*:ratio": Cell("{name}", "|xᵢ|/RMS"),
            # The readings charts' words: a model alone, and the shipped pair (A, then B).
            "share_side*:lo_pct": Cell("{lo_at}", "μ²/RMS²"),
            "share_side*:hi_pct": Cell("{hi_at}", "μ²/RMS²"),
            "share_pair*:rms_lo_pct": Cell("{rms_lo_at}", "μ²/RMS²"),
            "share_pair*:layer_hi_pct": Cell("{layer_hi_at}", "μ²/RMS²"),
            "rms_side*:lo": Cell("{lo_at}", "RMS"),
            "rms_side*:hi": Cell("{hi_at}", "RMS"),
            "rms_pair*:rms_lo": Cell("{rms_lo_at}", "RMS"),
            "rms_pair*:layer_hi": Cell("{layer_hi_at}", "RMS"),
            "top_side*:lo": Cell("{lo_at}", "|xᵢ|/RMS"),
            "top_side*:hi": Cell("{hi_at}", "|xᵢ|/RMS"),
            "top_pair*:rms_lo": Cell("{rms_lo_at}", "|xᵢ|/RMS"),
            "top_pair*:layer_hi": Cell("{layer_hi_at}", "|xᵢ|/RMS"),
        },
    ),
    "training": Aliases(
        "training",
        fields={
            "steps_gap:w_loss": Metric("training.variant_rms", "training.variant_layer"),
            "steps_gap:l_loss": Metric("training.variant_rms", "training.variant_layer"),
            "none_*:none_loss": Metric("training.variant_none"),
            "none_*:best_loss": Metric("training.variant_rms", "training.variant_layer"),
            "step_time_*:rms_ms": Metric("training.variant_rms"),
            "step_time_*:layer_ms": Metric("training.variant_layer"),
        },
    ),
}

# Link states per page: the default, then extremes of what its controls reach.
STATES: tuple[tuple[str, dict[str, str]], ...] = (
    ("explorer", {}),
    ("explorer", {"d": "3", "scale": "10000", "dtype": "float16", "backend": "torch"}),
    ("explorer", {"d": "64", "dist": "ramp", "partial": "0.0625", "scale": "0.0001"}),
    ("explorer", {"d": "2", "eps": "10", "offset": "3"}),
    ("explorer", {"x": "1, 2, 3, 10", "eps": "0"}),
    ("explorer", {"d": "3", "scale": "0.0001", "eps": "1e-12", "offset": "0.5"}),
    ("explorer", {"d": "4096", "dist": "laplace", "dtype": "bfloat16", "backend": "torch"}),
    ("explorer", {"d": "3", "scale": "100", "dtype": "float16", "backend": "torch"}),
    (
        "explorer",
        {
            "d": "64",
            "scale": "5",
            "eps": "0.1",
            "offset": "20",
            "dist": "spike",
            "seed": "51",
            "backend": "torch",
            "dtype": "bfloat16",
        },
    ),
    ("explorer", {"gain": "-2", "offset": "5"}),
    ("explorer", {"gain": "1.5", "gain_pattern": "ramp", "bias": "0.5", "rms_bias": "-1"}),
    ("explorer", {"dist": "constant", "d": "8", "scale": "1000", "dtype": "float32"}),
    ("explorer", {"scale": "0"}),
    ("lesson", {}),
    ("lesson", {"step": "14"}),
    ("invariance", {}),
    ("invariance", {"transform": "shift_ones", "size": "0.01", "c_max": "1000"}),
    ("residual", {}),
    ("residual", {"d": "2", "layers": "1", "eps": "1", "drift": "-2"}),
    ("residual", {"d": "1024", "layers": "48", "drift": "2", "eps": "0"}),
    ("residual", {"mode": "trained", "prompt": "code", "trained_seed": "2"}),
    ("precision", {}),
    ("precision", {"d": "2", "scale": "0.0001", "eps": "1e-3"}),
    ("precision", {"d": "4096", "scale": "10000", "placement": "outside", "eps": "0"}),
    ("contracts", {}),
    ("contracts", {"a": "llama", "b": "t5", "eps_b": "1e-3", "dtype": "bfloat16", "scale": "0.01"}),
    ("contracts", {"a": "llama", "b": "llama", "eps_b": "1e-3", "scale": "0.01"}),
    ("contracts", {"a": "llama", "b": "llama", "red_b": "bfloat16", "dtype": "bfloat16"}),
    ("contracts", {"a": "torch", "b": "paper", "red_b": "float16", "d": "2", "scale": "10000"}),
    ("contracts", {"a": "gemma", "b": "llama", "checkpoint": "b", "d": "4096", "dtype": "float16"}),
    ("backward", {}),
    ("backward", {"d": "2", "eps": "1", "offset": "0"}),
    ("backward", {"d": "64", "offset": "-20", "grad": "ones"}),
    ("attention", {}),
    ("attention", {"d": "2", "n": "3", "offset": "10", "spread": "0.1"}),
    ("speed", {}),
    ("training", {}),
    ("inspector", {}),
    ("inspector", {"compare": "none"}),
)


def link(page: str, query: dict[str, str], lang: str) -> str:
    return f"/{page}?" + urlencode({**query, "lang": lang})


@cache
def rendered(page: str, items: tuple[tuple[str, str], ...], lang: str) -> Shown:
    """One run of ``page`` opened by the link ``items`` in ``lang`` (each opened once)."""
    query = dict(items)
    at = open_app(page, **query, lang=lang)
    assert not at.exception, [e.value for e in at.exception]
    return read_page(at, link(page, query, lang), lang)


def state_id(page: str, query: dict[str, str]) -> str:
    return page + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def cases() -> list:
    out = []
    for page, query in STATES:
        for lang in LANGS:
            ident = state_id(page, query)
            out.append(pytest.param(page, query, lang, id=f"{ident}-{lang}"))
    return out


@pytest.mark.parametrize(("page", "query", "lang"), cases())
def test_numbers_agree(page: str, query: dict[str, str], lang: str) -> None:
    shown = rendered(page, tuple(query.items()), lang)
    found = comparisons(shown, ALIASES.get(page))
    wrong = [str(c) for c in found if not c.agrees]
    assert not wrong, "\n".join(wrong)


# A number only English writes: a point that cannot group thousands (``0.5``, ``1.25``,
# ``1.2345``, ``1.5e-8``). ``1.016`` is left out: in Indonesian it is one thousand and sixteen.
_POINT_DECIMAL = re.compile(r"(?<![\w.,])-?(?:0\.\d+|\d+\.(?:\d{1,2}|\d{4,})(?![\d.])|\d+\.\d+e)")
# Code, links, version numbers, TeX lengths (``\\[0.6em]``) and arXiv identifiers are the same in
# every language.
_VERBATIM = re.compile(
    r"`[^`]*`|https?://\S+|[?&]\w+=[^\s&]*|\b(?:torch|Python|v)\s?\d[\d.]*|\d[\d.]*(?:em|ex|pt)\b"
    r"|\barXiv\s\d{4}\.\d{4,5}"  # an arXiv identifier, not a decimal
)


@pytest.mark.parametrize(("page", "query"), [(p, q) for p, q in STATES])
def test_indonesian_pages_write_no_english_decimals(page: str, query: dict[str, str]) -> None:
    shown = rendered(page, tuple(query.items()), "id")
    written = [v for _, v in shown.metrics] + [c[2] for c in shown.cells] + list(shown.texts)
    found = [
        m.group(0) + " in " + repr(text[max(0, m.start() - 30) : m.end() + 10])
        for text in written
        for m in _POINT_DECIMAL.finditer(_VERBATIM.sub("", text))
    ]
    assert not found, found


def test_every_page_is_sampled() -> None:
    assert {page for page, _ in STATES} == {spec.name for spec in PAGES}


@pytest.mark.parametrize("page", sorted(ALIASES))
def test_every_alias_is_quoted(page: str) -> None:
    """Each alias matched a sentence with a shown value beside it, in both languages, in some
    sampled state: an alias that matches nothing checks nothing."""
    aliases = ALIASES[page]
    names = {*(aliases.phrases or {}), *(aliases.fields or {})}
    for lang in LANGS:
        seen = set()
        for p, query in STATES:
            if p == page:
                shown = rendered(page, tuple(query.items()), lang)
                seen |= {c.name for c in comparisons(shown, aliases)}
        assert names <= seen, f"[{lang}] never quoted: {sorted(names - seen)}"


# ---------------------------------------------------------------------------------------------
# The matcher can fail: fabricated pages


def fabricated(
    texts: tuple[str, ...],
    metrics: tuple[tuple[str, str], ...] = (),
    cells: tuple[tuple[str, str, str], ...] = (),
    lang: str = "en",
) -> Shown:
    return Shown("/fabricated", lang, metrics, cells, texts)


@pytest.mark.parametrize(
    ("lang", "sentence"),
    [("en", "Here ‖RMSNorm(x)‖ = 1.732 and more."), ("id", "Di sini ‖RMSNorm(x)‖ = 1,732 dan")],
)
def test_matcher_catches_a_sentence_that_disagrees_with_a_metric(lang: str, sentence: str) -> None:
    shown = fabricated((sentence,), (("‖RMSNorm(x)‖", "0"), ("RMS(x)", "3844")), lang=lang)
    (found,) = comparisons(shown)
    assert not found.agrees
    assert found.quoted.value == 1.732
    assert "1.732" in str(found) or "1,732" in str(found)


def test_matcher_catches_a_template_field_that_disagrees_with_a_cell() -> None:
    for lang in LANGS:
        template = _template("explorer.coords_caption", lang)
        sentence = template.format(d=16, m_rms="0.5", m_layer="≈ 0")
        header = ("explorer.stat_mean", "RMSNorm", "LayerNorm")
        mean = catalogue()[header[0]][lang]
        cells = ((mean, "RMSNorm", "0.25"), (mean, "LayerNorm", "1.2e-17"))
        found = {
            c.name: c
            for c in comparisons(fabricated((sentence,), (), cells, lang), ALIASES["explorer"])
        }
        assert not found["coords_caption:m_rms"].agrees, lang
        assert found["coords_caption:m_layer"].agrees, lang


@pytest.mark.parametrize(
    ("quoted", "agrees"),
    [("0.9185", True), ("0.919", True), ("0.92", True), ("0.9175", False), ("91.85 %", True)],
)
def test_matcher_compares_at_the_coarser_precision(quoted: str, agrees: bool) -> None:
    shown = fabricated((f"It is RMS(x) = {quoted}.",), (("RMS(x)", "0.9185"),))
    (found,) = comparisons(shown)
    assert found.agrees is agrees


def test_matcher_reads_zero_against_the_page_scale() -> None:
    metrics = (("mean(x)", "1.388e-17"), ("RMS(x)", "0.9185"), ("std(x)", "0.3"))
    (noise,) = comparisons(fabricated(("so mean(x) = ≈ 0 here",), metrics))
    assert noise.agrees
    (real,) = comparisons(fabricated(("so std(x) = 0 here",), metrics))
    assert not real.agrees


def test_matcher_needs_the_label_to_start_a_word() -> None:
    shown = fabricated(("the ratio μ/RMS(x) = 0.5 and RMS(x)² = 3",), (("RMS(x)", "0.9185"),))
    assert comparisons(shown) == []


@pytest.mark.parametrize(
    ("text", "lang", "value", "unit"),
    [
        ("1.732", "en", 1.732, ""),
        ("1,732", "id", 1.732, ""),
        ("110,928", "en", 110928.0, ""),
        ("1.234.567,5", "id", 1234567.5, ""),
        ("1,234,567", "en", 1234567.0, ""),
        ("−0.2897", "en", -0.2897, ""),
        ("1.235e-8", "en", 1.235e-8, ""),
        ("47,8%", "id", 0.478, ""),
        ("47.8%", "en", 0.478, ""),
        ("15.07 ms", "en", 15.07, "ms"),
        ("≈ 0", "id", 0.0, ""),
    ],
)
def test_numbers_are_read_in_both_locales(text: str, lang: str, value: float, unit: str) -> None:
    quoted = parse_number(text, lang)
    assert quoted is not None
    assert quoted.value == pytest.approx(value, rel=1e-12)
    assert quoted.unit == unit
