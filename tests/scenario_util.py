"""The browser scenarios' server and visits, shared by the scenario files (each file a
unit of its own for the two test processes, so that the scenarios run side by side)."""

from __future__ import annotations

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


def visit(server, browser, name: str, query: str = "", **kwargs) -> Visit:
    """``name``'s page opened in English at ``query``; its steps' logs start here."""
    url, log = server
    log.new_problems()
    params = tuple(p.key for p in page_params(name))
    path = "" if name == "explorer" else name
    link = f"{path}?lang=en" + (f"&{query}" if query else "")
    return Visit(browser, url, log, params, **kwargs).open(link)


def en(key: str) -> str:
    return t(key, "en")
