"""The launcher (``python -m serve``): HAProxy's configuration, the busy page, the CPU count, and
a live launcher with two workers: affinity, the seats, a killed worker replaced, a clean stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from benchmarks.target import process_tree
from serve.__main__ import main as serve_main
from serve.config import (
    BUSY_MARKER,
    COOKIE,
    RETRY_S,
    Plan,
    busy_page,
    busy_response,
    haproxy_config,
    usable_cpus,
    write_run_files,
)
from serve.launcher import HAPROXY, ROOT, is_healthy
from tests.serve_util import launched, need_haproxy, session, worker_cookie
from ui.i18n import LANGUAGES, t

PLAN = Plan(address="0.0.0.0", port=8501, worker_ports=(40001, 40002, 40003), seats=7)
# The launcher's replacement worker: a cold start on a busy two-core machine.
RESTART_TIMEOUT_S = 90.0


def backend(config: str, name: str) -> str:
    """The lines of one ``backend`` section."""
    return re.search(rf"^backend {name}\n(.*?)(?=^\S|\Z)", config, re.M | re.S).group(1)


def test_both_backends_name_every_worker_with_its_cookie(tmp_path: Path) -> None:
    config = haproxy_config(PLAN, tmp_path)
    sessions, pages = backend(config, "sessions"), backend(config, "pages")
    for i, port in enumerate(PLAN.worker_ports, start=1):
        assert f"server w{i} 127.0.0.1:{port} cookie w{i}" in sessions
        # The page backend follows the session backend's health instead of checking twice.
        assert f"server w{i} 127.0.0.1:{port} cookie w{i} track sessions/w{i}" in pages
    assert len(re.findall(r"^\s+server ", sessions, re.M)) == 3
    # The websocket's answer sets the cookie; the page backend only reads it.
    assert f"cookie {COOKIE} insert indirect nocache httponly" in sessions
    assert re.search(rf"cookie {COOKIE} indirect$", pages, re.M)
    assert "option httpchk GET /_stcore/health" in sessions
    assert "http-check expect string ok" in sessions


def test_config_fails_over_passes_websockets_and_counts_seats(tmp_path: Path) -> None:
    config = haproxy_config(PLAN, tmp_path)
    assert re.search(r"^\s+option redispatch", config, re.M)
    assert "use_backend sessions if stream" in config
    assert "acl stream path /_stcore/stream" in config
    assert re.search(r"^\s+timeout tunnel 1h", config, re.M)
    assert "bind 0.0.0.0:8501" in config
    assert "nbsrv(sessions),mul(7)" in config
    assert f"Retry-After {RETRY_S}" in config
    assert "$" not in config  # every field of the template filled in


def test_haproxy_accepts_the_written_config(tmp_path: Path) -> None:
    need_haproxy()
    config = write_run_files(PLAN, tmp_path)
    checked = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # No warning either: HAProxy prints them even when the file is valid.
    assert "WARNING" not in checked.stdout + checked.stderr
    for lang in LANGUAGES:
        assert (tmp_path / f"busy-{lang}.html").read_text() == busy_page(lang, PLAN.retry_s)


@pytest.mark.parametrize("lang", sorted(LANGUAGES))
def test_busy_page_says_so_in_the_language_and_reloads_the_same_link(lang: str) -> None:
    page = busy_page(lang, retry_s=4)
    assert f'<html lang="{lang}">' in page
    assert t("serve.busy_title", lang) in page
    assert t("serve.busy_body", lang, retry_s=4) in page
    assert BUSY_MARKER in page
    # A refresh without a URL reloads the address as it is: the link and its settings stay.
    assert '<meta http-equiv="refresh" content="4">' in page
    # Nothing fetched from anywhere: the page is whole by itself.
    assert not re.search(r"""(src|href)=|https?://""", page)


def test_busy_response_is_a_whole_503_with_retry_after() -> None:
    response = busy_response("en", retry_s=3)
    head, body = response.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    assert lines[0] == "HTTP/1.0 503 Service Unavailable"
    assert "Retry-After: 3" in lines
    assert f"Content-Length: {len(body)}" in lines
    assert body.decode() == busy_page("en", retry_s=3)


def test_usable_cpus_follow_the_containers_quota(tmp_path: Path) -> None:
    affinity = len(os.sched_getaffinity(0))
    quota = tmp_path / "cpu.max"
    quota.write_text("max 100000\n")
    assert usable_cpus(quota) == affinity
    quota.write_text("50000 100000\n")  # half a CPU still runs one worker
    assert usable_cpus(quota) == 1
    quota.write_text(f"{100000 * (affinity + 3)} 100000\n")  # a quota above the CPUs present
    assert usable_cpus(quota) == affinity
    assert usable_cpus(tmp_path / "absent") == affinity


@pytest.mark.parametrize("args", [["--workers", "0"], ["--seats", "0"]])
def test_the_command_line_rejects_zero(args: list[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        serve_main(args)
    assert stop.value.code == 2


@pytest.fixture(scope="module")
def two_workers():
    """The launcher with two workers of one seat each: two visitors fill the house."""
    with launched(workers=2, seats=1) as served:
        yield served


def fetch(url: str, **headers: str) -> tuple[int, dict, str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status, resp.headers, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read().decode()


@pytest.mark.slow
def test_visitors_are_spread_and_kept_by_the_cookie(two_workers) -> None:
    status, _, body = fetch(f"{two_workers.url}/_stcore/health")
    assert (status, body.strip()) == (200, "ok")
    with session(two_workers.url) as first, session(two_workers.url) as second:
        names = {worker_cookie(first.response.headers), worker_cookie(second.response.headers)}
        # leastconn: the second visitor goes to the worker without a session.
        assert names == {"w1", "w2"}
    # A visitor who brings its cookie back stays where it was: no new cookie is set.
    with session(two_workers.url, worker="w2") as again:
        assert worker_cookie(again.response.headers) is None


@pytest.mark.slow
def test_a_full_house_answers_new_visitors_with_the_busy_page(two_workers) -> None:
    html = {"Accept": "text/html"}
    with session(two_workers.url), session(two_workers.url):
        # An answer, not a wait for a seat: the proxy itself says the house is full.
        status, headers, body = fetch(f"{two_workers.url}/?d=12&lang=id", **html)
        assert status == 503
        assert headers["Retry-After"] == str(RETRY_S)
        assert BUSY_MARKER in body and '<html lang="id">' in body
        # Seated visitors keep everything else: health, scripts, media.
        assert fetch(f"{two_workers.url}/_stcore/health")[0] == 200
    # Both left; after the admission window a new visitor is let in again.
    deadline = time.monotonic() + 30
    while fetch(f"{two_workers.url}/?d=12", **html)[0] != 200:
        assert time.monotonic() < deadline, "the house stayed full after everyone left"
        time.sleep(0.5)


@pytest.mark.slow
def test_a_killed_workers_visitor_moves_and_the_worker_comes_back(two_workers) -> None:
    before = two_workers.state()["workers"]["w1"]
    os.kill(before["pid"], signal.SIGKILL)
    # At once, before the launcher's replacement answers: the dead worker's cookie is redispatched
    # to the live one, and the answer moves the cookie there.
    with session(two_workers.url, worker="w1") as moved:
        assert worker_cookie(moved.response.headers) == "w2"
    deadline = time.monotonic() + RESTART_TIMEOUT_S
    while True:
        after = two_workers.state()["workers"]["w1"]
        if after["pid"] != before["pid"] and is_healthy(f"http://127.0.0.1:{after['port']}"):
            break
        assert time.monotonic() < deadline, "the launcher did not bring w1 back"
        time.sleep(0.3)
    assert after["restarts"] == before["restarts"] + 1 and after["port"] == before["port"]


@pytest.mark.slow
def test_sigterm_to_the_launcher_stops_every_process() -> None:
    with launched(workers=1, seats=1) as served:
        children = process_tree(served.proc.pid)[1:]
        assert len(children) >= 2  # the worker and HAProxy
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(timeout=30) == 0
        # The launcher waited for each child, so none is left, not even as a zombie.
        assert [pid for pid in children if Path(f"/proc/{pid}").exists()] == []


# A fresh worker's first runs side by side, each reaching pandas by its own road (a page, Plotly,
# Streamlit's dataframe code). Without the preload, three or four of the eight threads get a
# half-imported pandas ("partially initialized module 'pandas' has no attribute 'Series'").
PRELOAD_RACE = """
import importlib, sys, threading
from ui.nav import PAGES, preload
ROADS = ["pages.explorer", "pandas", "pages.inspector", "plotly.express",
         "streamlit.dataframe_util", "pages.training", "pyarrow", "pandas.core.frame"]
errors = []
def first_run(road):
    try:
        preload(lambda: [importlib.import_module(f'pages.{s.name}') for s in PAGES])
        importlib.import_module(road)
        import pandas
        pandas.Series([1.0])
    except Exception as exc:
        errors.append(repr(exc)[:200])
threads = [threading.Thread(target=first_run, args=(road,)) for road in ROADS]
for t in threads: t.start()
for t in threads: t.join()
missing = [s.name for s in PAGES if f"pages.{s.name}" not in sys.modules]
print(errors, missing)
sys.exit(1 if errors or missing else 0)
"""


def test_first_runs_in_many_threads_find_every_module_whole() -> None:
    """A fresh worker's first runs, side by side (the failover's moved visitors): each finds
    pandas and every page's modules fully imported (a half-imported pandas broke a page)."""
    done = subprocess.run(
        [sys.executable, "-c", PRELOAD_RACE], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


@pytest.mark.slow
def test_text_is_sent_gzipped_to_a_browser_that_takes_it(two_workers) -> None:
    """Streamlit serves its static bundle plain; through the launcher a phone's first visit
    (8.2 MB plain) gets every script and style gzipped, at gzip's highest level (HAProxy's libslz
    left the Plotly bundle at 46 % of its size, level 9 makes it 30 %), the same bytes once
    unpacked, with Streamlit's long-lived caching; a client that asks gets it plain, and fonts go
    as they are. The page itself is gzipped by HAProxy."""
    import gzip

    from serve.bundle import ROOT as STATIC

    def get(path: str, accept: str) -> tuple[dict, bytes]:
        request = urllib.request.Request(
            f"{two_workers.url}/{path}", headers={"Accept-Encoding": accept}
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.headers, resp.read()

    headers, page = get("", "gzip")
    assert headers.get("Content-Encoding") == "gzip"
    script = re.search(r'src="\.?/?(static/js/[^"]+\.js)"', gzip.decompress(page).decode()).group(1)
    font = next((STATIC / "static" / "media").glob("*.woff2")).relative_to(STATIC)
    for path, accept, encoded in (
        (script, "gzip, deflate, br", True),
        (script, "identity", False),
        (font, "gzip", False),
    ):
        headers, body = get(str(path), accept)
        assert (headers.get("Content-Encoding") == "gzip") == encoded, (path, accept, headers)
        assert headers.get("Cache-Control") == "public, immutable, max-age=31536000"
        own = (STATIC / path).read_bytes()
        assert (gzip.decompress(body) if encoded else body) == own
        if encoded:
            assert len(body) <= len(gzip.compress(own, 9)) + 64


def test_the_bundle_packs_its_text_smaller_than_gzip_s_highest_level(tmp_path, monkeypatch) -> None:
    """``serve.bundle.pack`` (a thread of the launcher) packs each script and style again with
    Zopfli: a gzip stream every browser reads, of the same bytes, smaller than level 9's, which
    ``load`` serves from then on; a font is left as it is."""
    import gzip
    import threading

    from serve import bundle

    folder = tmp_path / "static" / "js"
    folder.mkdir(parents=True)
    script = folder / "main.js"
    script.write_bytes(
        b"".join(b"function f%d(x) { return x * %d + 1; }\n" % (i, i) for i in range(3000))
    )
    (folder / "font.woff2").write_bytes(b"\x00" * 100)
    monkeypatch.setattr(bundle, "ROOT", tmp_path)
    monkeypatch.setattr(bundle, "PACKED", {})
    level9 = bundle.load(script)[1]
    assert gzip.decompress(level9) == script.read_bytes()
    told: list = []
    packer = threading.Thread(target=bundle.pack, args=(lambda *a: told.append(a),))
    packer.start()  # in a thread of its own: it lowers its own thread's priority
    packer.join(timeout=60)
    body, packed = bundle.load(script)
    assert told and told[0][0] == 1 and packed is bundle.PACKED[script]
    assert gzip.decompress(packed) == body and len(packed) < len(level9)
    assert bundle.load(folder / "font.woff2")[1] is None
