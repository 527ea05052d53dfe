"""A live NormLab server on loopback, and the headless Chromium that visits it.

Shared by the browser tests (``tests/conftest.py``), the explorer benchmark
(``benchmarks/app.py``) and the load script (``benchmarks/load.py``): a free port,
``streamlit run app.py`` started and stopped, the health check, Debian's Chromium with its flags,
and the selector of a page whose script has finished.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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

# A cold start imports streamlit, numpy, torch and plotly; a busy two-core machine needs a while.
HEALTH_TIMEOUT_S = 90.0
HEALTH_POLL_S = 0.3
# How long a server gets to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_health(base_url: str, timeout: float = HEALTH_TIMEOUT_S) -> None:
    """Return once ``base_url`` answers ``/_stcore/health``; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{base_url}/_stcore/health", timeout=2) as resp:
                if resp.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(HEALTH_POLL_S)
    raise TimeoutError(f"{base_url} did not answer /_stcore/health within {timeout:.0f} s")


def streamlit_command(port: int) -> list[str]:
    """``streamlit run app.py`` headless on ``127.0.0.1:port``, with this interpreter."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
    ]


def start_server(command: list[str], port: int, *, own_session: bool = False) -> subprocess.Popen:
    """Start ``command`` in the repository root, its output discarded.

    ``port`` also goes to the environment (``STREAMLIT_SERVER_PORT``), so a command that names no
    port, such as the container's, still listens there. With ``own_session`` the server leads a
    process group of its own, which ``stop_server`` then signals whole.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "STREAMLIT_SERVER_PORT": str(port)}
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=own_session,
    )


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
