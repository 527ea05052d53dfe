"""The page registry: every page of the app, in the order of the navigation.

``app.py`` builds ``st.navigation`` from it, and the tests import it (and each page's ``PARAMS``
through :func:`page_params`) instead of reading the router's source. A new page is one entry
here, one file in ``pages/`` (which ends with ``if __name__ == "__main__": main()``, so that
importing it for its ``PARAMS`` draws nothing) and one text file in ``assets/text/``.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from ui.i18n import t

ROOT = Path(__file__).resolve().parent.parent
PAGES_DIR = ROOT / "pages"


@dataclass(frozen=True)
class PageSpec:
    """One page: ``name`` is its file ``pages/<name>.py``, its URL path and its text topic."""

    name: str
    icon: str
    section: str  # a key of common.toml: section_explore, section_lessons, section_lab

    @property
    def file(self) -> Path:
        return PAGES_DIR / f"{self.name}.py"

    @property
    def title_key(self) -> str:
        return f"{self.name}.nav"


# The first page is the landing page. The lessons follow the argument: what each norm cancels,
# what that does to the residual stream, then the contract details, then the backward pass, then
# what LayerNorm's projection and scaling do for the attention that reads the keys.
PAGES: tuple[PageSpec, ...] = (
    PageSpec("explorer", ":material/tune:", "section_explore"),
    PageSpec("lesson", ":material/school:", "section_explore"),
    PageSpec("invariance", ":material/balance:", "section_lessons"),
    PageSpec("residual", ":material/stacked_line_chart:", "section_lessons"),
    PageSpec("precision", ":material/straighten:", "section_lessons"),
    PageSpec("contracts", ":material/handshake:", "section_lessons"),
    PageSpec("backward", ":material/undo:", "section_lessons"),
    PageSpec("attention", ":material/center_focus_strong:", "section_lessons"),
    PageSpec("speed", ":material/speed:", "section_lab"),
    PageSpec("training", ":material/model_training:", "section_lab"),
    PageSpec("inspector", ":material/manage_search:", "section_lab"),
)


# Imported before any page runs: pandas is imported lazily by Streamlit and Plotly too.
PRELOAD = ("numpy", "pandas", "plotly.graph_objects")
_preload_lock = threading.Lock()
_preloaded = False


def preload_pages() -> None:
    """Import every page's modules once per process, in one thread, before any page runs.

    Streamlit runs each visitor's script in a thread of its own. Two first runs on a fresh
    worker (a class arriving together, or the visitors of a lost worker moved at once) would
    import pandas and torch from two threads; they import themselves in cycles, and Python's
    import-deadlock rule then hands one thread a half-built module ("partially initialized
    module 'pandas' has no attribute 'Series'"). Later runs find everything imported.
    """
    global _preloaded
    if _preloaded:
        return
    with _preload_lock:
        if not _preloaded:
            for name in PRELOAD + tuple(f"pages.{spec.name}" for spec in PAGES):
                importlib.import_module(name)
            _preloaded = True


def page_params(name: str) -> tuple:
    """The ``PARAMS`` tuple of ``pages/<name>.py`` (importing a page module draws nothing)."""
    return tuple(importlib.import_module(f"pages.{name}").PARAMS)


def navigation(lang: str, *, position: str = "sidebar", icons: bool = True) -> st.navigation:
    """``st.navigation`` over :data:`PAGES`, titled and sectioned in ``lang``.

    Without ``icons`` no page has an icon: Streamlit makes the current page's icon the favicon
    unless ``st.set_page_config`` named one, and a Material icon is fetched from Google's font
    servers, which an offline app must never ask.
    """
    sections: dict[str, list[st.Page]] = {}
    for index, spec in enumerate(PAGES):
        page = st.Page(
            spec.file,
            title=t(spec.title_key, lang),
            icon=spec.icon if icons else None,
            url_path=spec.name,
            default=index == 0,
        )
        sections.setdefault(t(f"common.{spec.section}", lang), []).append(page)
    return st.navigation(sections, position=position)
