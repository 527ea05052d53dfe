"""Through the launcher in real headless Chromium: a visitor on a non-default link loses its
worker, the page reconnects to a live one (the other, or the killed one restarted), keeps its
numbers, and goes on from the same view; the link alone brings the same numbers back there."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from benchmarks.live import READY
from serve.config import COOKIE, DEFAULT_SEATS
from tests.serve_util import launched

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path(os.environ.get("NORMLAB_SHOTS", Path(__file__).resolve().parent.parent / "artifacts"))
LINK = "/?d=12&offset=1.5&seed=7&lang=en"
# The explorer's metrics, left to right: RMS(x), std(x), mean(x), ||RMSNorm(x)||, ||LayerNorm(x)||.
METRICS = """() => Array.from(
  document.querySelectorAll("[data-testid='stMetricValue']")).map(e => e.innerText)"""
MEAN = 2
TIMEOUT_MS = 90_000


def worker_of(context) -> str | None:
    return {c["name"]: c["value"] for c in context.cookies()}.get(COOKIE)


def test_a_visitor_keeps_the_view_when_its_worker_dies(browser) -> None:
    with launched(workers=2, seats=DEFAULT_SEATS) as served:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        # Each websocket the page opens, and the frames the server sent on it.
        sockets: list[tuple[object, list[bytes | str]]] = []

        def record(ws) -> None:
            frames: list[bytes | str] = []
            sockets.append((ws, frames))
            ws.on("framereceived", lambda payload: frames.append(payload))

        page.on("websocket", record)
        page.goto(served.url + LINK)
        page.wait_for_selector(READY, timeout=TIMEOUT_MS)
        page.wait_for_function(f"({METRICS})().length === 5", timeout=TIMEOUT_MS)
        before = page.evaluate(METRICS)
        first = worker_of(context)
        assert first in ("w1", "w2") and len(sockets) == 1

        killed = served.worker_pid(first)
        os.kill(killed, signal.SIGKILL)
        # The page reconnects by itself, through the proxy, to a live worker: the other one, or
        # the killed one if the launcher has restarted it first (the proxy then keeps its
        # cookie). Either is a new process, which asks for a run at the next interaction; the
        # page keeps what it shows meanwhile. A new websocket still open after a second is a
        # live worker's answer (one the proxy could not place closes at once).
        deadline, held = time.monotonic() + TIMEOUT_MS / 1e3, (None, 0.0)
        while held[0] is None or time.monotonic() - held[1] < 1.0:
            assert time.monotonic() < deadline, f"no reconnection: {len(sockets)} websockets"
            page.wait_for_timeout(200)
            live = len(sockets) > 1 and not sockets[-1][0].is_closed() and worker_of(context)
            held = held if held[0] is sockets[-1][0] else (sockets[-1][0], time.monotonic())
            held = held if live else (None, 0.0)
        second = worker_of(context)
        assert second != first or served.worker_pid(first) != killed, "the dead worker answered"
        assert page.evaluate(METRICS) == before

        # The next interaction runs on the new worker with the whole view: one step of the
        # offset slider moves mean(x) by exactly 0.1 from the link's value (a worker that had
        # lost the link's d, seed or offset would show another mean altogether).
        slider = page.locator(".st-key-offset").get_by_role("slider")
        slider.focus()
        slider.press("ArrowRight")
        page.wait_for_function(
            f"() => ({METRICS})()[{MEAN}] !== {before[MEAN]!r}", timeout=TIMEOUT_MS
        )
        page.wait_for_selector(READY, timeout=TIMEOUT_MS)
        after = page.evaluate(METRICS)
        assert abs(float(after[MEAN]) - (float(before[MEAN]) + 0.1)) < 2e-3
        assert after[0] != before[0] and after[1] == before[1]  # RMS moves, std does not
        assert any(has(f, after[MEAN]) for f in sockets[-1][1]), "not drawn by the new process"
        for param in ("d=12", "offset=1.6", "seed=7"):
            assert param in page.url

        # The link alone is the view: reloading it on the new worker shows the same numbers.
        page.reload()
        page.wait_for_selector(READY, timeout=TIMEOUT_MS)
        page.wait_for_function(f"({METRICS})().length === 5", timeout=TIMEOUT_MS)
        assert page.evaluate(METRICS) == after
        assert worker_of(context) == second
        assert page.locator("[data-testid='stException']").count() == 0
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "failover.png"), full_page=False)
        context.close()


def has(frame: bytes | str, text: str) -> bool:
    """Whether a websocket frame (binary protobuf or text) contains ``text``."""
    return text.encode() in frame if isinstance(frame, bytes) else text in frame
