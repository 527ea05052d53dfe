"""A live NormLab server on loopback, and the headless Chromium that visits it.

Shared by the browser tests (``tests/conftest.py``), the explorer benchmark
(``benchmarks/app.py``) and the load script (``benchmarks/load.py``): a free port,
``streamlit run app.py`` (or any server command) started and stopped, the health check, Debian's
Chromium with its flags, and the selector of a page whose script has finished. The port, the
health check and the worker's command are the launcher's (``serve.launcher``).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

# The launcher's own: a free port, the health check, the worker's command.
from serve.launcher import free_port, wait_for_health, worker_command

__all__ = [
    "CHROMIUM",
    "CHROMIUM_ARGS",
    "READY",
    "ROOT",
    "free_port",
    "start_server",
    "stop_server",
    "streamlit_command",
    "wait_for_health",
]

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

# How long a server gets to exit on SIGTERM before SIGKILL.
SHUTDOWN_GRACE_S = 10.0


def streamlit_command(port: int) -> list[str]:
    """``streamlit run app.py`` headless on ``127.0.0.1:port``, with this interpreter."""
    return worker_command(port)


def start_server(
    command: list[str], port: int, *, own_session: bool = False, log: Path | None = None
) -> subprocess.Popen:
    """Start ``command`` in the repository root, its output discarded (or appended to ``log``).

    ``port`` also goes to the environment (``STREAMLIT_SERVER_PORT``), so a command that names no
    port, such as the container's, still listens there. With ``own_session`` the server leads a
    process group of its own, which ``stop_server`` then signals whole.
    """
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "STREAMLIT_SERVER_PORT": str(port)}
    output = subprocess.DEVNULL if log is None else log.open("ab")
    try:
        return subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
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
