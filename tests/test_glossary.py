"""Bahasa Indonesia follows the glossary, and no Indonesian page shows English.

``assets/glossary.toml`` names one Indonesian term per concept and the variants, calques and
English words to avoid. Every ``id`` text is checked against it; then every page is opened in
Indonesian with AppTest and everything it shows is searched for English sentences from the
``en`` texts and for untranslated core notes (``core.messages.Message``).
"""

from __future__ import annotations

import re
import string
import tomllib
from pathlib import Path

import pytest

from tests.apptest_util import open_app, open_page_alone, open_share
from ui.i18n import catalogue
from ui.nav import PAGES

ROOT = Path(__file__).resolve().parent.parent
GLOSSARY_FILE = ROOT / "assets" / "glossary.toml"
TEXTS = catalogue()
ID_KEYS = sorted(key for key, texts in TEXTS.items() if "id" in texts)

# Ignored when looking for words: code spans, $math$, {placeholders} and the name of a function
# written as one (`mean(x)`, `norm(hₗ)`), which is notation, and Streamlit's `:green[...]` and
# `:material/icon:` markup.
NOT_PROSE = re.compile(r"`[^`]*`|\$[^$]*\$|\{[^{}]*\}|\w+(?=\()|:?[a-z]+\[|:?material/[a-z_]+:?")
WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
# An English sentence worth flagging has this many words.
MIN_WORDS = 4


def load_glossary() -> dict:
    with GLOSSARY_FILE.open("rb") as fh:
        return tomllib.load(fh)


GLOSSARY = load_glossary()
EXEMPT = {(e["key"], e["term"].lower()) for e in GLOSSARY.get("exemption", [])}


def prose(text: str) -> str:
    return NOT_PROSE.sub(" ", text)


def contains_term(text: str, term: str) -> bool:
    """``term`` as whole words (case-insensitive) in ``text``."""
    pattern = r"(?<![\w-])" + re.escape(term) + r"(?![\w-])"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def words(text: str) -> list[str]:
    return WORD.findall(text)


def english_sentences(text: str) -> list[str]:
    """The sentences (and clauses between ; or :) of an English text with placeholders
    removed, that have at least MIN_WORDS words of letters."""
    bare = re.sub(r"\{[^{}]*\}", " ", text)
    pieces = re.split(r"(?<=[.!?;:])\s+|\*\*|\n", bare)
    out = []
    for piece in pieces:
        piece = piece.strip(" .!?;:,*()“”\"'")
        if len(words(piece)) >= MIN_WORDS:
            out.append(" ".join(piece.split()))
    return out


def normalised(text: str) -> str:
    return " ".join(text.replace("**", "").split())


# ---------------------------------------------------------------------------------------------
# (a) the glossary itself


def test_glossary_is_well_formed() -> None:
    concepts = GLOSSARY["concept"]
    assert len(concepts) >= 60
    seen_en: dict[str, str] = {}
    for concept in concepts:
        assert set(concept) <= {"en", "id", "forms", "avoid", "note"}, concept
        assert isinstance(concept["en"], list) and concept["en"], concept
        assert all(isinstance(term, str) and term.strip() for term in concept["en"]), concept
        assert isinstance(concept["id"], str) and concept["id"].strip(), concept
        assert isinstance(concept["avoid"], list), concept
        assert all(isinstance(term, str) and term.strip() for term in concept["avoid"]), concept
        for term in concept["avoid"]:
            # The chosen term and its forms are never on their own avoid list.
            for chosen in (concept["id"], *concept.get("forms", [])):
                assert not contains_term(chosen, term), (term, chosen)
        for term in concept["en"]:
            assert term.lower() not in seen_en, f"{term!r} in two concepts"
            seen_en[term.lower()] = concept["id"]


def test_glossary_names_the_terms_the_issue_requires() -> None:
    chosen = {c["id"] for c in GLOSSARY["concept"]}
    assert chosen >= {"normalisasi", "norma", "propagasi balik", "berhingga", "ms"}
    assert "sampel acak normal" in chosen
    avoided = {term.lower() for c in GLOSSARY["concept"] for term in c["avoid"]}
    required = {
        "crash", "output head", "run", "drift", "overflow", "slider", "md", "tarikan gauss",
        "satu-titik", "batang rmsnorm", "sapuan", "putusan", "akar kuadrat kebalikan",
        "satuan digit terakhir", "omong kosong", "lintasan mundur",
    }  # fmt: skip
    assert required <= avoided, required - avoided


def test_every_exemption_is_needed_and_explained() -> None:
    all_avoided = {term.lower() for c in GLOSSARY["concept"] for term in c["avoid"]}
    for exemption in GLOSSARY.get("exemption", []):
        assert set(exemption) == {"key", "term", "reason"}, exemption
        assert exemption["reason"].strip()
        assert exemption["key"] in TEXTS, exemption["key"]
        assert exemption["term"].lower() in all_avoided, exemption
        text = prose(TEXTS[exemption["key"]]["id"])
        assert contains_term(text, exemption["term"]), f"{exemption} is no longer needed"


# ---------------------------------------------------------------------------------------------
# (b) and (c): every Indonesian text


@pytest.mark.parametrize("key", ID_KEYS)
def test_indonesian_text_uses_the_glossary(key: str) -> None:
    text = prose(TEXTS[key]["id"])
    found = [
        (term, concept["id"])
        for concept in GLOSSARY["concept"]
        for term in concept["avoid"]
        if contains_term(text, term) and (key, term.lower()) not in EXEMPT
    ]
    assert not found, f"{key}: avoided term -> glossary term: {found}"


def is_notation(sentence: str) -> bool:
    """Code, math and names only: no word of letters longer than a symbol outside them."""
    return all(len(w) <= 2 or w[0].isupper() for w in words(prose(sentence)))


@pytest.mark.parametrize("key", ID_KEYS)
def test_indonesian_text_is_not_its_english(key: str) -> None:
    english, indonesian = TEXTS[key]["en"], normalised(TEXTS[key]["id"])
    copied = [
        s
        for s in english_sentences(english)
        if not is_notation(s) and s.lower() in indonesian.lower()
    ]
    assert not copied, f"{key} keeps English: {copied}"


def test_placeholders_are_unchanged() -> None:
    """The Indonesian texts keep exactly the English fields (also checked in test_texts)."""
    for key in ID_KEYS:
        fields = [
            {n for _, n, _, _ in string.Formatter().parse(TEXTS[key][lang]) if n}
            for lang in ("en", "id")
        ]
        assert fields[0] == fields[1], key


# ---------------------------------------------------------------------------------------------
# (d) what the Indonesian pages show


def english_sentence_index() -> set[str]:
    return {
        s.lower()
        for texts in TEXTS.values()
        for s in english_sentences(texts["en"])
        if not is_notation(s)
    }


def english_labels() -> set[str]:
    """Short English texts (one to three words) whose Indonesian differs: a page that shows one
    of them whole (a table value, a button) shows an untranslated label."""
    return {
        texts["en"].strip()
        for texts in TEXTS.values()
        if texts["en"].strip() != texts["id"].strip()
        and 1 <= len(words(texts["en"])) < MIN_WORDS
        and len(texts["en"].strip()) >= 3
        and "{" not in texts["en"]
    }


def core_note_patterns() -> dict[str, re.Pattern]:
    """Each core message's English text as a pattern, its fields matching anything."""
    patterns = {}
    for key, texts in TEXTS.items():
        if key.startswith("core."):
            pieces = re.split(r"\{[^{}]*\}", texts["en"])
            patterns[key] = re.compile(".+?".join(re.escape(p) for p in pieces))
    return patterns


ENGLISH = english_sentence_index()
LABELS = english_labels()
CORE_NOTES = core_note_patterns()


def shown_text(at) -> list[str]:
    """Everything the page shows as text: Markdown of every kind, metric labels, table headers,
    index and cells, widget labels, help and button labels (segmented controls' options)."""
    bodies: list[str] = []
    for kind in (
        "markdown", "caption", "warning", "error", "info", "success", "title", "header",
        "subheader", "latex",
    ):  # fmt: skip
        bodies += [element.value for element in at.get(kind)]
    for metric in at.get("metric"):
        bodies += [metric.label, str(metric.value)]
    for table in [*at.get("table"), *at.get("dataframe")]:
        frame = table.value
        bodies += [str(c) for c in frame.columns] + [str(i) for i in frame.index]
        bodies += [str(frame.index.name)] if frame.index.name else []
        bodies += [str(v) for v in frame.to_numpy().ravel()]
    for kind in ("expander", "tabs"):
        bodies += [element.label for element in at.get(kind)]
    widgets = (
        "button", "checkbox", "toggle", "radio", "selectbox", "multiselect", "slider",
        "select_slider", "number_input", "text_input", "text_area", "button_group",
        "download_button", "file_uploader",
    )  # fmt: skip
    for kind in widgets:
        for widget in at.get(kind):
            bodies += [getattr(widget, "label", "") or "", getattr(widget, "help", "") or ""]
            if kind in ("button_group", "radio"):
                # Buttons and radio choices are labels a reader sees (selectboxes show the
                # link's own values, which are identifiers).
                bodies += [str(option) for option in widget.options]
    return [body for body in bodies if body]


def english_on_page(at) -> list[str]:
    found = []
    for body in shown_text(at):
        flat = normalised(body).lower()
        found += [f"sentence: {s!r}" for s in ENGLISH if s in flat]
        found += [f"label: {body!r}" for label in LABELS if body.strip() == label]
        found += [f"{key}: {body[:80]!r}" for key, p in CORE_NOTES.items() if p.search(body)]
    return found


# Pages that show English through code today (issue 9, item 10). Strict: the moment a page is
# fixed the test passes, fails as XPASS, and its marker must go.
KNOWN_ENGLISH: dict[str, str] = {}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(
            spec.name,
            marks=[pytest.mark.xfail(strict=True, reason=KNOWN_ENGLISH[spec.name])]
            if spec.name in KNOWN_ENGLISH
            else [],
        )
        for spec in PAGES
    ],
)
def test_indonesian_page_shows_no_english(page: str) -> None:
    at = open_app(page, lang="id")
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["lang"] == "id"
    found = english_on_page(at)
    assert not found, f"{page} shows English in Indonesian: {found}"


def test_the_page_check_sees_english() -> None:
    """The check itself: the English page is full of the sentences it looks for."""
    at = open_app("explorer", lang="en")
    assert len(english_on_page(at)) >= 5


@pytest.mark.parametrize("page", ["explorer", "lesson"])
def test_indonesian_share_dialog_shows_no_english(page: str) -> None:
    # The explorer's dialog also holds the downloads and the restore upload; the lesson's does not.
    at = open_share(open_page_alone(page, lang="id"))
    assert not at.exception, [e.value for e in at.exception]
    assert at.get("code"), "the dialog did not open"
    assert bool(at.get("download_button")) == (page == "explorer")
    found = english_on_page(at)
    assert not found, f"{page}'s share dialog shows English in Indonesian: {found}"
