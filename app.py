"""NormLab entry point: page config, language, navigation. Run with ``streamlit run app.py``."""

from pathlib import Path

import streamlit as st

from ui.frame import ROUTED_KEY, apply_view_mode, read_view_mode
from ui.i18n import LANGUAGES, language_from_locale, t
from ui.params import ChoiceParam, apply_link_params

HERE = Path(__file__).resolve().parent

# The browser's locale picks the first language; ``?lang=`` overrides it and the link keeps it.
browser_lang = language_from_locale(st.context.locale)
view = read_view_mode(browser_lang)
st.set_page_config(
    page_title="NormLab",
    page_icon=str(HERE / "assets" / "icon.png"),
    layout="wide",
    initial_sidebar_state="collapsed" if view.hide_controls else "expanded",
)
apply_view_mode(view)

LANG = ChoiceParam("lang", browser_lang, tuple(LANGUAGES))
# Kept like the view mode's notices, so the page shows why the language changed.
st.session_state.setdefault("_notices_app", []).extend(apply_link_params([LANG], browser_lang))
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

# (file, url path, title key, icon, section); the first page is the landing page.
PAGES = [
    ("explorer.py", "explorer", "explorer.nav", ":material/tune:", "section_explore"),
    ("lesson.py", "lesson", "lesson.nav", ":material/school:", "section_explore"),
    # The lessons in the order of the argument: what each norm cancels, what that does to the
    # residual stream, then the contract details, then the backward pass.
    ("invariance.py", "invariance", "invariance.nav", ":material/balance:", "section_lessons"),
    ("residual.py", "residual", "residual.nav", ":material/stacked_line_chart:", "section_lessons"),
    ("precision.py", "precision", "precision.nav", ":material/straighten:", "section_lessons"),
    ("contracts.py", "contracts", "contracts.nav", ":material/handshake:", "section_lessons"),
    ("backward.py", "backward", "backward.nav", ":material/undo:", "section_lessons"),
    ("speed.py", "speed", "speed.nav", ":material/speed:", "section_lab"),
]

sections: dict[str, list[st.Page]] = {}
for index, (file, url_path, title_key, icon, section) in enumerate(PAGES):
    page = st.Page(
        HERE / "pages" / file,
        title=t(title_key, lang),
        icon=icon,
        url_path=url_path,
        default=index == 0,
    )
    sections.setdefault(t(f"common.{section}", lang), []).append(page)

page = st.navigation(sections, position="hidden" if view.hide_controls else "sidebar")
st.session_state[ROUTED_KEY] = True
page.run()
