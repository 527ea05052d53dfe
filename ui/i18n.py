"""Texts in English and Bahasa Indonesia, read from ``assets/text/*.toml``.

Each TOML file holds one topic (usually one page). A key is a table with one entry per
language, so a sentence and its translation sit next to each other::

    [title]
    en = "Explorer"
    id = "Penjelajah"

``t("explorer.title", "id")`` looks it up. Placeholders use ``str.format`` fields.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

LANGUAGES: dict[str, str] = {"en": "English", "id": "Bahasa Indonesia"}
DEFAULT_LANGUAGE = "en"
TEXT_DIR = Path(__file__).resolve().parent.parent / "assets" / "text"


@cache
def catalogue() -> dict[str, dict[str, str]]:
    """Every key (``topic.name``) mapped to its texts by language code."""
    entries: dict[str, dict[str, str]] = {}
    for path in sorted(TEXT_DIR.glob("*.toml")):
        with path.open("rb") as fh:
            table = tomllib.load(fh)
        for name, texts in table.items():
            entries[f"{path.stem}.{name}"] = texts
    return entries


def t(key: str, lang: str, /, **values: object) -> str:
    """The text for ``key`` in ``lang``, with ``values`` substituted."""
    texts = catalogue()[key]
    text = texts.get(lang) or texts[DEFAULT_LANGUAGE]
    return text.format(**values) if values else text


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
