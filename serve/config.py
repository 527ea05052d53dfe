"""What the launcher writes before HAProxy starts: its configuration and the busy pages.

``haproxy.cfg`` beside this module is the template; ``Plan`` holds what varies (where the proxy
listens, the workers' loopback ports, the seats per worker), and ``write_run_files`` renders it
into a run folder with the busy page in each language. The page's texts are read here from
``assets/text/serve.toml``, not through ``ui.i18n``: the launcher imports nothing of the app."""

from __future__ import annotations

import html
import math
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from string import Template

TEMPLATE = Path(__file__).with_name("haproxy.cfg")
# The busy page's texts: a table per text, with a string per language (English first).
TEXTS = Path(__file__).resolve().parent.parent / "assets" / "text" / "serve.toml"
# The cookie that binds a visitor to a worker; Streamlit sets none of this name.
COOKIE = "NORMLAB_WORKER"
# Visitors one worker takes before new ones see the busy page: the target of 40 readers on two
# workers at p95 <= 1 s (docs/serving.md has what `benchmarks.load` measured).
DEFAULT_SEATS = 20
# How often the busy page tries again, seconds (its refresh and the Retry-After header).
RETRY_S = 5
# A new visitor counts against the seats from the page load on; a browser opens its websocket
# within a few seconds of it, and from then on the open session counts instead.
WINDOW_S = 5
# A container's CPU quota under cgroup v2: "<quota> <period>" in microseconds, or "max ...".
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
# In every busy page, so that a client can tell it from the app's own page.
BUSY_MARKER = 'name="normlab-busy"'

PAGE = """<!doctype html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta {marker} content="{retry_s}">
<meta http-equiv="refresh" content="{retry_s}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; font-size: 1.15rem; line-height: 1.5; color: #222;
       max-width: 36rem; margin: 4rem auto; padding: 0 1rem; }}
h1 {{ color: #0072B2; }}
</style>
</head>
<body>
<h1>{title}</h1>
<p>{body}</p>
<p role="status">{retrying}</p>
</body>
</html>
"""


@dataclass(frozen=True)
class Plan:
    """Where the proxy listens, the workers' loopback ports, and how many visitors each takes."""

    address: str
    port: int
    worker_ports: tuple[int, ...]
    seats: int = DEFAULT_SEATS
    retry_s: int = RETRY_S
    # Where the launcher serves Streamlit's /static/ files gzipped at the highest level
    # (``serve.bundle``); None leaves them to the workers.
    bundle_port: int | None = None


def worker_name(index: int) -> str:
    """``w1``, ``w2``, …: the HAProxy server name and the cookie value of worker ``index``."""
    return f"w{index + 1}"


def haproxy_config(plan: Plan, run_dir: Path) -> str:
    """The template filled in for ``plan``, with the busy pages and socket in ``run_dir``."""
    names = [worker_name(i) for i in range(len(plan.worker_ports))]
    sessions = [
        f"    server {name} 127.0.0.1:{port} cookie {name}"
        for name, port in zip(names, plan.worker_ports, strict=True)
    ]
    # The page backend follows the session backend's health checks instead of running its own.
    pages = [f"{line} track sessions/{line.split()[1]}" for line in sessions]
    return Template(TEMPLATE.read_text()).substitute(
        run_dir=run_dir,
        address=plan.address,
        port=plan.port,
        seats=plan.seats,
        retry_s=plan.retry_s,
        window_s=WINDOW_S,
        cookie=COOKIE,
        session_servers="\n".join(sessions),
        page_servers="\n".join(pages),
        bundle=f"server bundle 127.0.0.1:{plan.bundle_port}" if plan.bundle_port else "",
        to_bundle="" if plan.bundle_port else "#",
    )


def busy_page(lang: str, retry_s: int = RETRY_S) -> str:
    """The page a new visitor sees while every seat is taken; it reloads the same link."""

    texts = tomllib.loads(TEXTS.read_text())

    def text(name: str) -> str:
        return html.escape((texts[name].get(lang) or texts[name]["en"]).format(retry_s=retry_s))

    return PAGE.format(
        lang=lang,
        marker=BUSY_MARKER,
        retry_s=retry_s,
        title=text("busy_title"),
        body=text("busy_body"),
        retrying=text("busy_retrying"),
    )


def busy_response(lang: str, retry_s: int = RETRY_S) -> bytes:
    """The busy page as a whole HTTP response, as HAProxy's ``errorfile`` wants it."""
    body = busy_page(lang, retry_s).encode()
    head = (
        "HTTP/1.0 503 Service Unavailable\r\n"
        "Content-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Retry-After: {retry_s}\r\n"
        "Cache-Control: no-store\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def write_run_files(plan: Plan, run_dir: Path) -> Path:
    """Write the busy pages and HAProxy's configuration into ``run_dir``; the config's path."""
    for lang in tomllib.loads(TEXTS.read_text())["busy_title"]:
        (run_dir / f"busy-{lang}.html").write_text(busy_page(lang, plan.retry_s))
        (run_dir / f"busy-{lang}.http").write_bytes(busy_response(lang, plan.retry_s))
    config = run_dir / "haproxy.cfg"
    config.write_text(haproxy_config(plan, run_dir))
    return config


def usable_cpus(cpu_max: Path = CGROUP_CPU_MAX) -> int:
    """CPUs this process may run on: its affinity, capped by a cgroup v2 CPU quota.

    A container limited with ``--cpus 2`` (a 2-vCPU Space, a Kubernetes CPU limit) still sees
    every CPU of the host in its affinity; the quota in ``cpu.max`` says what it may use."""
    count = len(os.sched_getaffinity(0))
    try:
        quota, period = cpu_max.read_text().split()
        if quota != "max":
            count = min(count, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError):
        pass
    return max(1, count)
