"""Texts in English and Bahasa Indonesia, read from ``assets/text/*.toml``.

Each TOML file holds one topic (usually one page). A key is a table with one entry per
language, so a sentence and its translation sit next to each other::

    [title]
    en = "Explorer"
    id = "Penjelajah"

A page binds ``tr = translator(lang)`` and asks ``tr("explorer.title")``; numbers are passed as
numbers and written by :func:`ui.fmt.num`. A ``claim = true`` text is shown only through
``tr.claim`` (:mod:`labkit.claims`); core messages are texts of the topic ``core`` (``tr.message``).
"""

from __future__ import annotations

import numbers
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from core.messages import Message
from labkit.claims import Claim
from ui import fmt

LANGUAGES: dict[str, str] = {"en": "English", "id": "Bahasa Indonesia"}
DEFAULT_LANGUAGE = "en"
TEXT_DIR = Path(__file__).resolve().parent.parent / "assets" / "text"
# Entries of a key's table that are not languages.
META_FIELDS = ("claim", "source")
# Integer fields that name something rather than count it.
NAMES = ("seed", "id")


@cache
def _load() -> tuple[dict[str, dict[str, str]], dict[str, dict[str, Any]]]:
    texts: dict[str, dict[str, str]] = {}
    meta: dict[str, dict[str, Any]] = {}
    for path in sorted(TEXT_DIR.glob("*.toml")):
        with path.open("rb") as fh:
            table = tomllib.load(fh)
        for name, entry in table.items():
            key = f"{path.stem}.{name}"
            texts[key] = {k: v for k, v in entry.items() if k not in META_FIELDS}
            meta[key] = {k: v for k, v in entry.items() if k in META_FIELDS}
    return texts, meta


def catalogue() -> dict[str, dict[str, str]]:
    """Every key (``topic.name``) mapped to its texts by language code."""
    return _load()[0]


def metadata(key: str) -> dict[str, Any]:
    """The non-language entries of ``key`` (``claim``)."""
    return _load()[1][key]


def is_claim(key: str) -> bool:
    """Whether ``key`` states a fact about the numbers (``claim = true`` in its table)."""
    return bool(_load()[1].get(key, {}).get("claim", False))


def _format_value(name: str, value: Any, noise: float, lang: str) -> Any:
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        # A count or a width is grouped as the language groups (11,712 and 11.712); a seed or an
        # id names something, and is written as typed.
        return str(int(value)) if name in NAMES else fmt.num(int(value), lang=lang)
    if isinstance(value, numbers.Real):
        if name.endswith("_pct"):
            return fmt.pct(float(value), noise=noise, lang=lang)
        return fmt.num(float(value), noise=noise, lang=lang)
    return value


def t(key: str, lang: str, /, **values: object) -> str:
    """The text for ``key`` in ``lang``, with ``values`` substituted (numbers via ``fmt.num``)."""
    return _render(key, lang, values, 0.0)


def _render(key: str, lang: str, values: Mapping[str, Any], noise: Any) -> str:
    """``noise``: one rounding level for every field, or a mapping by field name."""
    texts = catalogue()[key]
    text = texts.get(lang) or texts[DEFAULT_LANGUAGE]
    if not values:
        return text
    levels = noise if isinstance(noise, Mapping) else dict.fromkeys(values, noise)
    lang = lang if lang in LANGUAGES else DEFAULT_LANGUAGE
    shown = {k: _format_value(k, v, levels.get(k, 0.0), lang) for k, v in values.items()}
    return text.format(**shown)


class Translator:
    """Texts in one language: ``tr(key, **values)``, ``tr.claim(c)``, ``tr.chart_words(claims,
    chart)``, ``tr.runs_words(claims, chart)``, ``tr.message(m)``."""

    def __init__(self, lang: str) -> None:
        self.lang = lang if lang in LANGUAGES else DEFAULT_LANGUAGE

    def __call__(self, key: str, /, **values: object) -> str:
        if is_claim(key):
            raise ValueError(f"{key} states a fact about the numbers: show it with tr.claim()")
        return _render(key, self.lang, values, 0.0)

    def claim(self, claim: Claim) -> str:
        """The sentence the core chose, with its numbers."""
        if not is_claim(claim.key):
            raise ValueError(f"{claim.key} is not marked claim = true in its text file")
        return _render(claim.key, self.lang, claim.fields, claim.noise)

    def chart_words(self, claims: Mapping[str, Claim], *charts: str) -> str:
        """Charts' summaries from the claims a view chose: each chart's words (``<chart>_words``)
        and the count of the values it cannot draw (``<chart>_not_finite``), where there are."""
        slots = [f"{chart}_{part}" for chart in charts for part in ("words", "not_finite")]
        return " ".join(self.claim(claims[s]) for s in slots if s in claims)

    def runs_words(self, claims: Mapping[str, Claim], chart: str) -> str:
        """A chart of runs' summary (``labkit.chart_words.runs_words``, in slots
        ``chart_<chart>_<group>``): one sentence per group, then the count it cannot draw."""
        prefix = f"chart_{chart}_"
        return " ".join(self.claim(c) for slot, c in claims.items() if slot.startswith(prefix))

    def message(self, message: Message) -> str:
        """A core note or warning, by its code."""
        return _render(f"core.{message.code}", self.lang, message.fields, 0.0)


@cache
def translator(lang: str) -> Translator:
    """The translator for ``lang`` (an unknown code gives English)."""
    return Translator(lang)


def language_from_locale(locale: str | None) -> str:
    """Map a browser locale such as ``id-ID`` or ``en-GB`` to a language we offer."""
    if locale:
        code = locale.replace("_", "-").split("-")[0].lower()
        if code in LANGUAGES:
            return code
        # "in" is the pre-1989 ISO code for Indonesian that some systems still send.
        if code == "in":
            return "id"
    return DEFAULT_LANGUAGE
