"""The page registry: every page of the app, in the order of the navigation.

``app.py`` builds ``st.navigation`` from it and imports the pages (by name, in the function it
hands :func:`preload`), and the tests read it instead of the router's source; no ``ui`` module
imports a page. A new page is one entry here, its name in ``app.py``'s ``import_pages``, one file
in ``pages/`` (which ends with ``if __name__ == "__main__": main()``, so that importing it for its
``PARAMS`` draws nothing) and one text file in ``assets/text/``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from core.device import passive_openmp_threads
from ui.i18n import t

ROOT = Path(__file__).resolve().parent.parent
PAGES_DIR = ROOT / "pages"


@dataclass(frozen=True)
class PageSpec:
    """One page: ``name`` is its file ``pages/<name>.py``, its URL path and its text topic."""

    name: str
    icon: str

    @property
    def file(self) -> Path:
        return PAGES_DIR / f"{self.name}.py"

    @property
    def title_key(self) -> str:
        return f"{self.name}.nav"


# The first page is the landing page, then the guided lesson. The lessons follow the argument:
# what each norm cancels, what that does to the residual stream, then the contract details, then
# the backward pass, then what LayerNorm's projection and scaling do for the attention that reads
# the keys. The labs come last: speed, training, and the checkpoint inspector.
PAGES: tuple[PageSpec, ...] = (
    PageSpec("explorer", ":material/tune:"),
    PageSpec("lesson", ":material/school:"),
    PageSpec("invariance", ":material/balance:"),
    PageSpec("residual", ":material/stacked_line_chart:"),
    PageSpec("precision", ":material/straighten:"),
    PageSpec("contracts", ":material/handshake:"),
    PageSpec("backward", ":material/undo:"),
    PageSpec("attention", ":material/center_focus_strong:"),
    PageSpec("speed", ":material/speed:"),
    PageSpec("training", ":material/model_training:"),
    PageSpec("inspector", ":material/manage_search:"),
)


# The landing page's internal name: it is served at the root URL, and its own name is an alias.
LANDING_KEY = "start"

_preload_lock = threading.Lock()
_preloaded = False


def preload(import_pages: Callable[[], None]) -> None:
    """Import numpy, pandas and Plotly, then the pages (``import_pages``), once per process, in one
    thread, before any page runs.

    Streamlit runs each visitor's script in a thread of its own. Two first runs on a fresh
    worker (a class arriving together, or the visitors of a lost worker moved at once) would
    import pandas and torch from two threads; they import themselves in cycles, and Python's
    import-deadlock rule then hands one thread a half-built module ("partially initialized
    module 'pandas' has no attribute 'Series'"). Later runs find everything imported.
    First torch's threads are set to sleep between operations (``passive_openmp_threads``): the
    pages import torch; nothing ``app.py`` imports before this call does."""
    global _preloaded
    if _preloaded:
        return
    with _preload_lock:
        if not _preloaded:
            passive_openmp_threads()
            # pandas is imported lazily by Streamlit and Plotly too.
            import numpy  # noqa: F401
            import pandas  # noqa: F401
            import plotly.graph_objects  # noqa: F401

            import_pages()
            _preloaded = True


def navigation(lang: str, *, position: str = "sidebar", icons: bool = True) -> st.navigation:
    """``st.navigation`` over :data:`PAGES`, titled in ``lang``, in one flat list.

    Flat, without section headers: Streamlit draws each section as a ``<div>`` with a header
    inside the ``<ul>`` of pages, which a screen reader cannot read as one list (axe-core's
    ``list`` and ``listitem`` rules); the order of :data:`PAGES` carries the grouping.

    Without ``icons`` no page has an icon: Streamlit makes the current page's icon the favicon
    unless ``st.set_page_config`` named one, and a Material icon is fetched from Google's font
    servers, which an offline app must never ask."""
    kept = st.session_state.setdefault(PAGES_KEY, {})
    if (lang, icons) not in kept:
        kept[lang, icons] = _pages(lang, icons)
    return st.navigation(kept[lang, icons], position=position, expanded=True)


# Where a session keeps its pages, by language and icons: ``st.Page`` resolves its file, title
# and icon anew on every call, twelve times a run (about 4 % of an explorer interaction at
# d = 4096). ``st.navigation`` marks on a page whether it may run, so no two sessions share them.
PAGES_KEY = "_nav_pages"


def _pages(lang: str, icons: bool) -> list[st.Page]:
    pages = [
        st.Page(
            spec.file,
            title=t(spec.title_key, lang),
            icon=spec.icon if icons else None,
            url_path=LANDING_KEY if index == 0 else spec.name,
            default=index == 0,
        )
        for index, spec in enumerate(PAGES)
    ]
    # The landing page is served at the root; a link to it by name (``/explorer?d=8``) opens
    # the same script under that name, instead of Streamlit's "page not found" dialog.
    landing = PAGES[0]
    alias = st.Page(
        landing.file, title=t(landing.title_key, lang), url_path=landing.name, visibility="hidden"
    )
    return [*pages, alias]
