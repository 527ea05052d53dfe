"""Streamlit's own files (``/static/``: its scripts, styles and fonts), served by the launcher.

HAProxy's gzip is libslz, built for speed: Streamlit's 4.7 MB Plotly bundle leaves it at 2.2 MB.
Here each text file is gzipped once, at the highest level (1.4 MB), on its first request, and
kept in memory; a browser that takes no gzip gets the file as it is. Fonts and images go as they
are, and every file with the long-lived caching Streamlit gives it (the names carry a hash)."""

from __future__ import annotations

import functools
import gzip
import importlib.util
import mimetypes
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Streamlit's package folder, found without importing it (the launcher imports nothing of the app).
ROOT = Path(importlib.util.find_spec("streamlit").origin).resolve().parent / "static"
TEXT = {".js", ".css", ".svg"}  # what Streamlit's static/ holds besides fonts and images
CACHING = "public, immutable, max-age=31536000"


@functools.cache
def load(path: Path) -> tuple[bytes, bytes | None]:
    """The file's bytes, and gzip's at level 9 for a text file (None for any other)."""
    body = path.read_bytes()
    return body, gzip.compress(body, 9, mtime=0) if path.suffix in TEXT else None


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


def start(port: int) -> ThreadingHTTPServer:
    """Serve ``/static/`` on ``127.0.0.1:port`` from a daemon thread; ``shutdown()`` stops it."""
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="bundle", daemon=True).start()
    return server
