"""Helpers for AppTest-based page tests: open a page with a link, read figures back."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

from core.claims import Claim
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
    """The number shown by the one ``st.metric`` called ``label``."""
    values = [m.value for m in at.metric if m.label == label]
    assert len(values) == 1, [m.label for m in at.metric]
    return float(values[0])


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
    """The ``axis`` data of the trace called ``name``."""
    for tr in spec["data"]:
        if tr.get("name") == name:
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
