"""A live NormLab server on loopback, and the headless Chromium that visits it.

Shared by the browser tests (``tests/conftest.py``) and the benchmarks. The port, the health
check and the worker's command are the launcher's (``serve.launcher``)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# The launcher's own: a free port, the health check, the worker's command.
from serve.launcher import free_port, wait_for_health, worker_command  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent

CHROMIUM = "/usr/bin/chromium"
# No sandbox: the tests run as root in containers, where Chromium's sandbox cannot start. The rest
# keep a headless browser from asking anything of the network on its own.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Streamlit marks the app root with the script's state; "notRunning" means the run has finished.
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
# The script has finished (as the page shows it) and has drawn at least one element.
SCRIPT_DONE = f"""() => !!document.querySelector("{READY} [data-testid='stElementContainer']")"""
# Streamlit's placeholders for elements whose code is still loading.
SKELETONS = '[data-testid^="stSkeleton"], [data-testid="stAppSkeleton"]'
# Every chart the script sent has been drawn, and there are at least ``least`` of them (1 when the
# caller passes no argument).
CHARTS_DRAWN = """(least) => {
  const boxes = document.querySelectorAll('[data-testid="stPlotlyChart"]');
  const plots = document.querySelectorAll('.js-plotly-plot');
  return boxes.length >= (least ?? 1) && plots.length === boxes.length
    && Array.from(plots).every(p => p._fullData && p._fullData.length > 0);
}"""
# The smallest text Plotly drew in any chart (its resolved layout, after Streamlit's theme): base
# font, legend, axis ticks and titles (2D and 3D), annotations (subplot titles) and colour bars;
# null when no chart has any.
SMALLEST_FIGURE_FONT = r"""() => {
  const sizes = [];
  const axis = a => {
    if (a && a.tickfont) sizes.push(a.tickfont.size);
    if (a && a.title && a.title.text && a.title.font) sizes.push(a.title.font.size);
  };
  document.querySelectorAll('.js-plotly-plot').forEach(p => {
    const L = p._fullLayout;
    sizes.push(L.font.size);
    if (L.showlegend !== false && L.legend) sizes.push(L.legend.font.size);
    Object.keys(L).filter(k => /^[xy]axis\d*$/.test(k) && L[k].visible !== false)
      .forEach(k => axis(L[k]));
    if (L.scene) ['xaxis', 'yaxis', 'zaxis'].forEach(k => axis(L.scene[k]));
    (L.annotations || []).filter(a => a.text).forEach(a => sizes.push(a.font.size));
    p._fullData.filter(t => t.colorbar && t.showscale).forEach(t => {
      sizes.push(t.colorbar.tickfont.size);
    });
  });
  return sizes.length ? Math.min(...sizes) : null;
}"""

# How long a server gets to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 10.0


# ``streamlit run app.py`` headless on ``127.0.0.1:port``, with this interpreter.
streamlit_command = worker_command


@contextmanager
def chromium() -> Iterator[Any]:
    """Headless Chromium (Debian's, with ``CHROMIUM_ARGS``), closed on leaving."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def start_server(
    command: list[str],
    port: int,
    *,
    own_session: bool = False,
    log: Path | None = None,
    env: Mapping[str, str | None] | None = None,
    cwd: Path = ROOT,
) -> subprocess.Popen:
    """Start ``command`` in ``cwd``, its output discarded (or appended to ``log``).

    ``port`` also goes to the environment (``STREAMLIT_SERVER_PORT``), so a command that names no
    port, such as the container's, still listens there. ``env`` changes this process's
    environment for the server: a string sets a variable, None removes it. With ``own_session``
    the server leads a process group of its own, which ``stop_server`` then signals whole."""
    changes = {**(env or {}), "PYTHONUNBUFFERED": "1", "STREAMLIT_SERVER_PORT": str(port)}
    server_env = {k: v for k, v in {**os.environ, **changes}.items() if v is not None}
    output = subprocess.DEVNULL if log is None else log.open("ab")
    try:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=server_env,
            stdout=output,
            stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
            start_new_session=own_session,
        )
    finally:
        if log is not None:
            output.close()  # the child holds its own copy


def stop_server(proc: subprocess.Popen, *, grace_s: float = SHUTDOWN_GRACE_S) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; to the whole group if the server leads one."""
    if proc.poll() is not None:
        return
    leads_group = os.getpgid(proc.pid) == proc.pid

    def send(sig: signal.Signals) -> None:
        if leads_group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)

    send(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        send(signal.SIGKILL)
        proc.wait()
