"""Helpers for AppTest-based page tests: open a page with a link, read figures back."""

from __future__ import annotations

import base64
import importlib
import json
from pathlib import Path

import numpy as np
from babel.numbers import parse_decimal
from streamlit.testing.v1 import AppTest

from labkit.claims import Claim
from ui.i18n import translator

TIMEOUT = 120
APP = str(Path(__file__).resolve().parent.parent / "app.py")


def open_app(page: str | None = None, **query: str) -> AppTest:
    """Open a link: ``app.py`` routed to ``pages/<page>.py`` (the landing page when None), with
    ``query`` as the link's parameters, as a visitor's first request would.

    The page is chosen before the first run, as the URL path does; running the landing page
    first would let its own link checks rewrite shared keys (``d``, ``scale``) to its ranges.
    """
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for key, value in query.items():
        at.query_params[key] = value
    if page is not None:
        at.switch_page(f"pages/{page}.py")
    at.run()
    return at


def metric(at: AppTest, label: str) -> float:
    """The number shown by the one ``st.metric`` called ``label``, read in the page's language."""
    values = [m.value for m in at.metric if m.label == label]
    assert len(values) == 1, [m.label for m in at.metric]
    return shown_number(values[0], page_lang(at))


def page_lang(at: AppTest) -> str:
    """The language the page was drawn in (the sidebar's choice)."""
    return at.session_state["lang"] if "lang" in at.session_state else "en"


def shown_number(text: str, lang: str) -> float:
    """A number as a page writes it in ``lang`` (``1,5`` and ``1.234,5`` in Indonesian, ``1,234.5``
    in English, ``1.5e-8`` or ``1,5e-8`` in both), read with Babel's locale data."""
    mantissa, _, exponent = text.strip().replace("−", "-").partition("e")
    value = parse_decimal(mantissa, locale=lang, strict=True)
    return float(value.scaleb(int(exponent)) if exponent else value)


def figures(at: AppTest) -> dict[str, dict]:
    """Every Plotly chart on the page, by its widget key, as the JSON the browser receives."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        out[chart.proto.id.rsplit("-", 1)[-1] if not chart.key else chart.key] = spec
    return out


def decode(values: object) -> np.ndarray:
    """Plotly's JSON arrays: a list, or ``{"dtype": ..., "bdata": base64}`` typed arrays."""
    if isinstance(values, dict) and "bdata" in values:
        raw = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]))
        return raw.reshape(values["shape"]) if "shape" in values else raw
    return np.asarray(values, dtype=float)


def trace(spec: dict, name: str, axis: str = "y") -> np.ndarray:
    """The ``axis`` data of the trace called ``name`` (a long name drawn over lines, ``<br>``)."""
    for tr in spec["data"]:
        if (tr.get("name") or "").replace("<br>", " ") == name:
            return decode(tr[axis])
    raise KeyError(f"no trace named {name!r}: {[tr.get('name') for tr in spec['data']]}")


SHOWN_KINDS = (
    "markdown",
    "caption",
    "warning",
    "error",
    "info",
    "success",
    "title",
    "header",
    "subheader",
)


def shown_text(at: AppTest) -> list[str]:
    """Every string the page renders as Markdown, with metric labels and values."""
    bodies = [element.value for kind in SHOWN_KINDS for element in at.get(kind)]
    for m in at.get("metric"):
        bodies += [m.label, str(m.value)]
    return bodies


def assert_claims_shown(at: AppTest, claims: dict[str, Claim], lang: str) -> None:
    """Each claim the core chose for this state is on the page, in ``lang``, word for word."""
    tr = translator(lang)
    page = "\n".join(shown_text(at))
    for slot, claim in claims.items():
        assert tr.claim(claim) in page, f"{slot}: {tr.claim(claim)[:120]!r} is not on the page"


def open_page_alone(page: str, lang: str = "en", **query: str) -> AppTest:
    """``pages/<page>.py`` run as the main script, so that a button's click reaches it: through
    ``app.py`` every AppTest run is rerouted once, which drops the click (see
    ``ui.frame.ensure_router``)."""
    at = AppTest.from_file(str(Path(APP).parent / "pages" / f"{page}.py"), default_timeout=TIMEOUT)
    at.session_state["lang"] = lang
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_share(at: AppTest, **changes: bool) -> AppTest:
    """Click the share button and run (``at`` from :func:`open_page_alone`): the dialog's link,
    presenter builder and files are in the tree after this run. ``changes`` set the dialog's
    checkboxes (by key) in the same run: a run without the click closes the dialog, as a click
    outside it would."""
    from ui.frame import SHARE_OPEN_KEY

    for key, value in changes.items():
        at.checkbox(key=key).set_value(value)
    at.button(key=SHARE_OPEN_KEY).click()
    return at.run()


def page_params(name: str) -> tuple:
    """The ``PARAMS`` tuple of ``pages/<name>.py`` (importing a page module draws nothing)."""
    return tuple(importlib.import_module(f"pages.{name}").PARAMS)
