"""The browser scenarios' server and visits, shared by the scenario files (each file a
unit of its own for the two test processes, so that the scenarios run side by side).

The suite walks them in English on a laptop. ``NORMLAB_SCENARIOS_AS=id-phone`` walks the same
steps in Bahasa Indonesia on a 390 x 844 phone (its sidebar opened to reach a control, the
presenter's view on the phone itself)::

    NORMLAB_SCENARIOS_AS=id-phone python -m pytest tests/test_browser_scenarios*.py
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from tests.apptest_util import page_params
from tests.browser_util import ServerLog, Tab, Visit, logged_app
from ui.i18n import t


def serve(tmp_path_factory, browser) -> Iterator[tuple[str, ServerLog]]:
    """A logged server for one scenario file (the ``scenario_server`` fixture yields from it)."""
    log = tmp_path_factory.mktemp("server") / "streamlit.log"
    with logged_app(log) as url:
        # The landing page first: a fresh server's very first request, if it is a deep link,
        # runs that page once outside the router.
        tab = Tab(browser, []).load(f"{url}/")
        tab.settle()
        tab.context.close()
        yield url, ServerLog(log)


# How the scenarios are walked: the page's language and the window.
AS = {"en-laptop": ("en", 1366, 900), "id-phone": ("id", 390, 844)}
LANG, WIDTH, HEIGHT = AS[os.environ.get("NORMLAB_SCENARIOS_AS", "en-laptop")]
# A vector typed the way the page's language writes numbers.
TYPED_VECTOR = {"en": "1, 2, 3, -4", "id": "1,5; 2; 3; -4"}[LANG]


def visit(server, browser, name: str, query: str = "", **kwargs) -> Visit:
    """``name``'s page opened in the walk's language at ``query``, in its window; its steps'
    logs start here."""
    url, log = server
    log.new_problems()
    params = tuple(p.key for p in page_params(name))
    path = "" if name == "explorer" else name
    link = f"{path}?lang={LANG}" + (f"&{query}" if query else "")
    visit = Visit(browser, url, log, params, width=WIDTH, height=HEIGHT, **kwargs)
    return visit.open(link)


def said(key: str, **values: object) -> str:
    """The text ``key`` in the walk's language."""
    return t(key, LANG, **values)
