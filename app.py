"""NormLab entry point: page config, language, navigation. Run with ``streamlit run app.py``."""

from pathlib import Path

import streamlit as st

from ui.frame import ROUTED_KEY, apply_view_mode, read_view_mode
from ui.i18n import LANGUAGES, language_from_locale
from ui.nav import navigation, preload
from ui.params import ChoiceParam, apply_link_params

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
with st.sidebar:
    # The option labels are the link's values (a bound widget writes its label to the URL).
    lang = st.segmented_control(
        "Language · Bahasa",
        options=list(LANGUAGES),
        default=browser_lang,
        key="lang",
        bind="query-params",
        required=True,
    )

page = navigation(lang, position="hidden" if view.hide_controls else "sidebar")
st.session_state[ROUTED_KEY] = True
page.run()
