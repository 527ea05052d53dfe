"""Bytes on the wire for a phone's first visit of each page: plain Streamlit against the launcher.

Run ``python -m benchmarks.wire [--pages explorer,lesson]``; docs/speed.md, "Bytes on the wire",
says what it serves, how each page is visited and what is counted."""

import argparse
import base64
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from benchmarks.app import load_line
from benchmarks.live import SCRIPT_DONE, SKELETONS, chromium, free_port, stop_server
from benchmarks.target import start_target, wait_until_ready
from serve.config import DEFAULT_SEATS
from ui.nav import PAGES

PHONE = {"width": 390, "height": 844}
TIMEOUT_MS = 180_000
QUIET_S = 1.0  # no new bytes for this long after the charts are drawn: the visit is over
TARGET_EXPLORER_MB = 3.0  # the explorer's first visit via the launcher
TARGET_SHARE = 0.40  # every page via the launcher, of its plain bytes
VERDICT = {True: "PASS", False: "FAIL"}
EVENTS = ("requestWillBeSent", "loadingFinished", "loadingFailed", "webSocketFrameReceived")
# The script has drawn something, no element's code is still loading, every chart is drawn.
DRAWN = f"""() => ({SCRIPT_DONE})() && !document.querySelector('{SKELETONS}')
  && [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(
    box => box.querySelector('.js-plotly-plot')?._fullData?.length > 0)"""


@dataclass
class Wire:
    """One visit's files, their bytes (and the largest's), websocket bytes, requests in flight."""

    files: int = 0
    http_bytes: int = 0
    ws_bytes: int = 0
    largest: tuple[int, str] = (0, "")  # the largest file's bytes and name
    pending: dict = field(default_factory=dict)  # requests in flight: their URLs, by id

    @property
    def total(self) -> int:
        return self.http_bytes + self.ws_bytes

    def requestWillBeSent(self, event: dict) -> None:
        self.pending[event["requestId"]] = event["request"]["url"]

    def loadingFinished(self, event: dict) -> None:
        size, url = int(event["encodedDataLength"]), self.pending.pop(event["requestId"], "")
        self.files, self.http_bytes = self.files + 1, self.http_bytes + size
        self.largest = max(self.largest, (size, url.split("?")[0].rsplit("/", 1)[-1]))

    def loadingFailed(self, event: dict) -> None:
        self.pending.pop(event["requestId"], None)

    def webSocketFrameReceived(self, event: dict) -> None:
        data, opcode = event["response"].get("payloadData", ""), event["response"].get("opcode")
        self.ws_bytes += len(base64.b64decode(data)) if opcode == 2 else len(data.encode())


def visit(browser, base: str, name: str) -> Wire:
    """The first visit of page ``name`` (the first page at the root), in a fresh phone context."""
    context = browser.new_context(viewport=PHONE, locale="id-ID", is_mobile=True, has_touch=True)
    page = context.new_page()
    cdp, wire = context.new_cdp_session(page), Wire()
    for event in EVENTS:
        cdp.on(f"Network.{event}", getattr(wire, event))
    cdp.send("Network.enable")
    page.goto(f"{base}/{'' if name == PAGES[0].name else name}?lang=id", timeout=TIMEOUT_MS)
    page.wait_for_function(DRAWN, timeout=TIMEOUT_MS, polling="raf")
    # Over once nothing is in flight, no byte has come for QUIET_S, and the page is still drawn.
    state, since = None, time.monotonic()
    while wire.pending or time.monotonic() - since < QUIET_S or not page.evaluate(DRAWN):
        page.wait_for_timeout(100)  # lets Playwright deliver the CDP events
        if (wire.total, len(wire.pending)) != state:
            state, since = (wire.total, len(wire.pending)), time.monotonic()
    context.close()
    return wire


def _visit_all(base: str, pages: list[str]) -> dict[str, Wire]:
    """Each page's first visit on the server at ``base``."""
    with chromium() as browser:  # one per thread: the two servers are visited side by side
        return {name: visit(browser, base, name) for name in pages}


def measure(pages: list[str], packed: bool = True) -> dict[str, dict[str, Wire]]:
    """Both servers, started and visited side by side (the bytes do not depend on the timing);
    ``packed``: the launcher's visits wait until its Zopfli pass is done."""
    ports = {"plain": free_port(), "launcher": free_port()}
    plain, _ = start_target(0, 0, ports["plain"])
    proxy, run_dir = start_target(1, DEFAULT_SEATS, ports["launcher"])
    urls = {server: f"http://127.0.0.1:{port}" for server, port in ports.items()}
    try:
        deadline = time.monotonic() + TIMEOUT_MS / 1e3
        for server, folder in (("plain", None), ("launcher", run_dir)):
            wait_until_ready(urls[server], folder, deadline, packed)
        with ThreadPoolExecutor(2) as pool:
            visits = dict(zip(urls, pool.map(_visit_all, urls.values(), [pages] * 2), strict=True))
    finally:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(stop_server, (plain, proxy)))
        shutil.rmtree(run_dir, ignore_errors=True)
    return {name: {server: visits[server][name] for server in urls} for name in pages}


def report(results: dict[str, dict[str, Wire]]) -> str:
    """The table (page, files, MB plain, MB via the launcher, ratio) and the targets' verdicts."""
    lines = [
        f"First visit, fresh context, {PHONE['width']} x {PHONE['height']}, lang=id: bytes "
        "transferred (CDP encodedDataLength + websocket payloads), measured in one run",
        "| page | files | MB plain | MB via launcher | ratio | websocket KB | largest (launcher) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    verdicts = []
    for name, by_server in results.items():
        plain, proxy = by_server["plain"], by_server["launcher"]
        ratio, mb, (big, big_name) = proxy.total / plain.total, proxy.total / 1e6, proxy.largest
        files = f"{plain.files}" if plain.files == proxy.files else f"{plain.files}/{proxy.files}"
        lines.append(
            f"| {name} | {files} | {plain.total / 1e6:.2f} | {mb:.2f} | {ratio:.2f} | "
            f"{proxy.ws_bytes / 1e3:.0f} | {big_name} {big / 1e6:.2f} MB |"
        )
        share = f"{ratio:.0%} of its plain bytes (target <= {TARGET_SHARE:.0%})"
        verdicts.append(f"{VERDICT[ratio <= TARGET_SHARE]}: {name} via the launcher {share}")
        if name == PAGES[0].name:
            size = f"via the launcher {mb:.2f} MB (target <= {TARGET_EXPLORER_MB} MB)"
            verdicts.insert(0, f"{VERDICT[mb <= TARGET_EXPLORER_MB]}: {name} {size}")
    return "\n".join(lines + verdicts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=",".join(p.name for p in PAGES), help="comma-separated")
    parser.add_argument(
        "--unpacked", action="store_true", help="do not wait for the launcher's Zopfli pass"
    )
    args = parser.parse_args(argv)
    pages = [name for name in args.pages.split(",") if name]
    print(f"Start: {load_line()}", flush=True)
    print(report(measure(pages, packed=not args.unpacked)))
    print(f"End: {load_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
