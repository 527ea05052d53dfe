"""The Dockerfile: its required parts, and its exact start command answering the health check.

No Docker engine runs on the development machines, so the test runs the image's CMD (the
launcher, with the port swapped for a free one) in this environment, which has the same pinned
requirements and Debian's haproxy.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.live import free_port, start_server, wait_for_health
from tests.serve_util import need_haproxy

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
PORT = "8501"
# The launcher answers once its workers do: cold starts on a busy two-core machine take a while.
HEALTH_TIMEOUT = 120.0


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


def test_base_image_is_slim_python_of_the_shipped_runs() -> None:
    (base,) = the("FROM")
    assert re.fullmatch(r"python:3\.11\.7-slim(-\w+)?", base), base
    # The shipped training runs name the Python whose pydoc text was their corpus.
    curves = json.loads((ROOT / "assets" / "train" / "curves.json").read_text())
    assert base.startswith(f"python:{curves['data']['python']}-"), curves["data"]["python"]


def test_installs_pinned_requirements_with_the_cpu_torch_wheel() -> None:
    runs = " ".join(the("RUN"))
    assert "pip install --no-cache-dir -r requirements.txt" in runs
    assert "requirements-base.txt" in " ".join(the("COPY"))
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    assert "-r requirements-base.txt" in lines
    assert re.search(r"^torch==[\d.]+$", (ROOT / "requirements-base.txt").read_text(), re.M)


def test_every_requirement_is_pinned_and_tests_skip_the_cpu_index() -> None:
    """The run command takes the CPU index; the test command must not (CI installs torch from
    a local wheel, and an unreachable index costs seconds per package)."""
    for name in ("requirements-base.txt", "requirements-dev.txt"):
        for line in (ROOT / name).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if line and not line.startswith("-r "):
                assert re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[\w.+]+", line), (name, line)
    dev = (ROOT / "requirements-dev.txt").read_text()
    assert "-r requirements-base.txt" in dev.splitlines()
    assert "download.pytorch.org" not in dev


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
    # Slim images ship neither curl nor the launcher's proxy.
    assert re.search(r"apt-get install .*\bcurl\b.*\bhaproxy\b", " ".join(the("RUN")))


def test_command_is_the_launcher_on_all_interfaces_on_the_exposed_port() -> None:
    command = cmd()
    assert command[:3] == ["python", "-m", "serve"]
    assert f"--port={PORT}" in command
    assert "--address=0.0.0.0" in command
    # One worker per CPU the container may use: no fixed count in the image.
    assert not any(a.startswith("--workers") for a in command)


def test_dockerignore_keeps_the_repository_history_and_tests_out() -> None:
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {".git", "tests"} <= set(ignored)


@pytest.mark.slow
def test_the_containers_command_answers_the_health_check() -> None:
    if shutil.which("python") is None:
        pytest.skip("the python command is not on PATH")
    need_haproxy()
    port = free_port()
    command = [a.replace(f"={PORT}", f"={port}") if a.startswith("--port") else a for a in cmd()]
    assert command != cmd() and f"--port={port}" in command
    # Exactly the image's command; .streamlit/config.toml (copied into the image) makes the
    # workers headless, so they do not stop to ask for an e-mail address. SIGTERM (terminate,
    # below) stops the launcher's workers and HAProxy with it.
    proc = start_server(command, port)
    try:
        # 0.0.0.0 listens on every interface, loopback included.
        wait_for_health(f"http://127.0.0.1:{port}", timeout=HEALTH_TIMEOUT)
        assert proc.poll() is None
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
