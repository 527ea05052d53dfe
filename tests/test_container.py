"""The Dockerfile: its required parts, and its exact start command answering the health check.

No Docker engine runs on the development machines, so the test runs the image's CMD (with the
port swapped for a free one) in this environment, which has the same pinned requirements.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import free_port, start_server, wait_for_health

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
PORT = "8501"
# A cold start imports streamlit, numpy and plotly; on a busy two-core machine that takes a while.
HEALTH_TIMEOUT = 60.0


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    pairs = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            pairs.append((word.upper(), rest.strip()))
    return pairs


def the(name: str) -> list[str]:
    return [rest for word, rest in instructions() if word == name]


def cmd() -> list[str]:
    (last,) = the("CMD")[-1:]
    command = json.loads(last)  # exec form: a JSON array
    assert isinstance(command, list) and all(isinstance(a, str) for a in command)
    return command


def test_base_image_is_slim_python() -> None:
    (base,) = the("FROM")
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", base), base


def test_installs_pinned_requirements_with_the_cpu_torch_wheel() -> None:
    runs = " ".join(the("RUN"))
    assert "pip install --no-cache-dir -r requirements.txt" in runs
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in runs
    assert re.search(r"^torch==[\d.]+$", (ROOT / "requirements.txt").read_text(), re.M)


def test_runs_as_a_non_root_user() -> None:
    users = the("USER")
    assert users, "no USER instruction"
    assert users[-1] not in {"root", "0", "0:0"}
    # The user switch comes before the command that starts the app.
    words = [word for word, _ in instructions()]
    assert max(i for i, w in enumerate(words) if w == "USER") < words.index("CMD")


def test_exposes_the_port_and_checks_health_with_curl() -> None:
    assert PORT in the("EXPOSE")
    (check,) = the("HEALTHCHECK")
    assert re.search(rf"CMD curl --fail http://localhost:{PORT}/_stcore/health", check)
    assert "curl" in " ".join(the("RUN"))  # slim images do not ship curl


def test_command_listens_on_all_interfaces_on_the_exposed_port() -> None:
    command = cmd()
    assert command[:3] == ["streamlit", "run", "app.py"]
    assert f"--server.port={PORT}" in command
    assert "--server.address=0.0.0.0" in command


def test_dockerignore_keeps_the_repository_history_and_tests_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", "tests"} <= set(ignored)


def test_the_containers_command_answers_the_health_check() -> None:
    if shutil.which("streamlit") is None:
        pytest.skip("the streamlit command is not on PATH")
    port = free_port()
    command = [
        a.replace(f"={PORT}", f"={port}") if a.startswith("--server.port") else a for a in cmd()
    ]
    assert command != cmd() and f"--server.port={port}" in command
    # Exactly the image's command; .streamlit/config.toml (copied into the image) makes it
    # headless, so it does not stop to ask for an e-mail address.
    proc = start_server(command, port)
    try:
        # 0.0.0.0 listens on every interface, loopback included.
        wait_for_health(f"http://127.0.0.1:{port}", timeout=HEALTH_TIMEOUT)
        assert proc.poll() is None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
