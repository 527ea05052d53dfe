"""NormLab entry point: page config, language, navigation. Run with ``streamlit run app.py``."""

from pathlib import Path

import streamlit as st

from ui.frame import (
    ROUTED_KEY,
    apply_view_mode,
    keep_a_language,
    read_view_mode,
    set_document_language,
)
from ui.i18n import LANGUAGES, language_from_locale
from ui.nav import navigation, preload
from ui.params import ChoiceParam, apply_link_params
from ui.st_private import finish_runs_before_fragments, set_query_param

HERE = Path(__file__).resolve().parent


def import_pages() -> None:
    """Every page of the registry, ``ui.nav.PAGES`` (tests/test_architecture.py holds the two
    lists equal): imported once, before any visitor's run, so no two threads import them."""
    from pages import (  # noqa: F401
        attention,
        backward,
        contracts,
        explorer,
        inspector,
        invariance,
        lesson,
        precision,
        residual,
        speed,
        training,
    )


preload(import_pages)
finish_runs_before_fragments()

# The browser's locale picks the first language; ``?lang=`` overrides it and the link keeps it.
browser_lang = language_from_locale(st.context.locale)
view = read_view_mode()
st.set_page_config(
    page_title="NormLab",
    page_icon=str(HERE / "assets" / "icon.png"),
    layout="wide",
    # "auto": open on a laptop, closed on a phone (where it would cover the page).
    initial_sidebar_state="collapsed" if view.hide_controls else "auto",
)
apply_view_mode(view)

LANG = ChoiceParam("lang", browser_lang, tuple(LANGUAGES))
# Kept like the view mode's notices, so the page shows why the language changed; ``begin_page``
# writes them all in the page's language (the browser's only where ``lang`` itself was bad).
st.session_state.setdefault("_notices_app", []).extend(apply_link_params([LANG]))
# A bound widget leaves its default out of the URL: with no default, the chosen language is
# always in the address, so a link copied from it opens in that language on any browser.
st.session_state.setdefault("lang", browser_lang)
with st.sidebar:
    # The option labels are the link's values (a bound widget writes its label to the URL).
    lang = st.segmented_control(
        "Language · Bahasa",
        options=list(LANGUAGES),
        default=None,
        key="lang",
        bind="query-params",
        on_change=keep_a_language,
        args=(browser_lang,),
    )
    lang = lang or browser_lang
if st.query_params.get("lang") != lang:
    set_query_param("lang", lang)  # Streamlit writes a value set before its widget only later
set_document_language(lang)

page = navigation(lang, position="hidden" if view.hide_controls else "sidebar")
st.session_state[ROUTED_KEY] = True
page.run()
