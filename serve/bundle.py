"""Streamlit's own files (``/static/``: its scripts, styles and fonts), served by the launcher.

HAProxy's gzip is libslz, built for speed: Streamlit's 4.7 MB Plotly bundle leaves it at 2.2 MB.
Here each text file is gzipped once, at the highest level (1.42 MB), on its first request, and
kept in memory. Meanwhile ``pack`` (a thread at the lowest CPU priority, started with the server)
packs every text file again with Zopfli, whose gzip streams any browser reads and are 3-7 %
smaller (1.36 MB): about 20 s of one core, once per launch, after which those bytes are served.
A browser that takes no gzip gets the file as it is. Fonts and images go as they are, and every
file with the long-lived caching Streamlit gives it (the names carry a hash)."""

from __future__ import annotations

import functools
import gzip
import importlib.util
import mimetypes
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import zopfli.gzip

# Streamlit's package folder, found without importing it (the launcher imports nothing of the app).
ROOT = Path(importlib.util.find_spec("streamlit").origin).resolve().parent / "static"
TEXT = {".js", ".css", ".svg"}  # what Streamlit's static/ holds besides fonts and images
CACHING = "public, immutable, max-age=31536000"
ZOPFLI_ITERATIONS = 5  # more buys well under 1 % at several times the time
PACKED: dict[Path, bytes] = {}  # Zopfli's gzip of each text file packed so far


@functools.cache
def _body(path: Path) -> bytes:
    return path.read_bytes()


@functools.cache
def _level9(path: Path) -> bytes:
    return gzip.compress(_body(path), 9, mtime=0)


def load(path: Path) -> tuple[bytes, bytes | None]:
    """The file's bytes, and a gzip stream of a text file (None for any other): Zopfli's once
    ``pack`` has reached it, gzip's at level 9 until then (made only for a file not packed)."""
    if path.suffix not in TEXT:
        return _body(path), None
    return _body(path), PACKED.get(path) or _level9(path)


def pack(done: Callable[[int, float], None] | None = None) -> None:
    """Pack every text file with Zopfli, the largest first, at the lowest CPU priority (this
    thread alone), then call ``done(files, seconds)``. Zopfli releases the GIL while it works."""
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    start = time.monotonic()
    files = sorted(
        (p for p in (ROOT / "static").rglob("*") if p.suffix in TEXT and p.is_file()),
        key=lambda p: -p.stat().st_size,
    )
    for path in files:
        body = path.read_bytes()
        PACKED[path] = zopfli.gzip.compress(body, numiterations=ZOPFLI_ITERATIONS)
    if done is not None:
        done(len(files), time.monotonic() - start)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as HAProxy reuses its connections

    def handle(self) -> None:
        try:
            super().handle()
        except ConnectionError:
            pass  # a kept-alive connection HAProxy (or a browser) closed: nothing went wrong

    def do_GET(self) -> None:
        self.answer(send_body=True)

    def do_HEAD(self) -> None:
        self.answer(send_body=False)

    def answer(self, send_body: bool) -> None:
        path = (ROOT / unquote(urlsplit(self.path).path).lstrip("/")).resolve()
        if not path.is_relative_to(ROOT / "static") or not path.is_file():
            self.send_error(404)
            return
        body, packed = load(path)
        self.send_response(200)
        kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self.send_header("Content-Type", kind)
        self.send_header("Cache-Control", CACHING)
        if packed is not None:
            self.send_header("Vary", "Accept-Encoding")
            if "gzip" in self.headers.get("Accept-Encoding", ""):
                body = packed
                self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet: HAProxy and the workers say what a class did."""


def start(port: int, packed: Callable[[int, float], None] | None = None) -> ThreadingHTTPServer:
    """Serve ``/static/`` on ``127.0.0.1:port`` from a daemon thread, and ``pack`` in another
    (``packed`` is called when it is done); ``shutdown()`` stops the server."""
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="bundle", daemon=True).start()
    threading.Thread(target=pack, args=(packed,), name="bundle-pack", daemon=True).start()
    return server
