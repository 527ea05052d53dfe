"""ui.nav: a session builds its pages once per language and keeps them for its later runs."""

from __future__ import annotations

from tests.apptest_util import open_app
from ui.i18n import t
from ui.nav import PAGES, PAGES_KEY


def test_a_session_keeps_its_pages_per_language() -> None:
    at = open_app(None, lang="en", d="8")
    assert not at.exception
    kept = at.session_state[PAGES_KEY]
    english = kept["en", True]
    assert [p.title for p in english[: len(PAGES)]] == [t(s.title_key, "en") for s in PAGES]
    at.select_slider(key="offset").set_value(0.5).run()
    assert not at.exception
    assert at.session_state[PAGES_KEY]["en", True] is english  # not built again
    at.button_group(key="lang").set_value("id").run()
    assert not at.exception
    indonesian = at.session_state[PAGES_KEY]["id", True]
    assert [p.title for p in indonesian[: len(PAGES)]] == [t(s.title_key, "id") for s in PAGES]
    assert at.session_state[PAGES_KEY]["en", True] is english
