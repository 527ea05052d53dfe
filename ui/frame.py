"""The frame every page shares: language, link notices, title and intro, the share box."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from ui.i18n import DEFAULT_LANGUAGE, LANGUAGES, t
from ui.params import Param, apply_link_params, share_query


def current_lang() -> str:
    """The language chosen in the sidebar by ``app.py`` (a bound widget keyed ``lang``)."""
    lang = st.session_state.get("lang", DEFAULT_LANGUAGE)
    return lang if lang in LANGUAGES else DEFAULT_LANGUAGE


def begin_page(topic: str, params: Sequence[Param]) -> str:
    """Check the link's parameters, then draw the page's title and intro. Returns the language.

    ``topic`` names the page's text file in ``assets/text``; it must define ``title`` and
    ``intro``.
    """
    lang = current_lang()
    notices = apply_link_params(params, lang)
    if notices:
        # Kept for the session on this page: the visitor may need to reread which value changed.
        st.session_state[f"_notices_{topic}"] = notices
    st.title(t(f"{topic}.title", lang))
    st.markdown(t(f"{topic}.intro", lang))
    kept = st.session_state.get(f"_notices_{topic}", [])
    if kept:
        st.warning("**" + t("common.notices_heading", lang) + "**\n\n" + "\n".join(
            f"- {notice}" for notice in kept))
    return lang


def share_box(params: Sequence[Param], lang: str, extra: dict[str, str] | None = None) -> str:
    """Show a copyable link that reproduces the current view; return it."""
    query = share_query(params, lang, extra)
    base = st.context.url or ""
    link = f"{base}?{query}"
    st.subheader(t("common.share_heading", lang))
    st.caption(t("common.share_help", lang))
    st.code(link, language=None, wrap_lines=True)
    return link
