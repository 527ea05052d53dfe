"""The Kubernetes manifest (``deploy/kubernetes/normlab.yaml``), checked offline: YAML lint, the
Kubernetes 1.37 schemas (strict: no unknown fields), and the parts that must agree with each
other and with the image: labels, ports, probes, cookie affinity, the launcher's command, the
class store's claim and password. Then Debian's redis-server started with the manifest's own
arguments: the app's store URL, its probes, and its append-only file across a restart."""

from __future__ import annotations

import copy
import os
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import kubernetes_validate
import pytest
import yaml
from yamllint import linter
from yamllint.config import YamlLintConfig

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "deploy" / "kubernetes" / "normlab.yaml"
KUBERNETES = "1.37.0"
LINT = YamlLintConfig("extends: default\nrules:\n  line-length: {max: 100}\n")
PORT = 8501
REDIS = "normlab-redis"
REDIS_CLI = "/usr/bin/redis-cli"


def all_documents() -> list[dict]:
    return list(yaml.safe_load_all(MANIFEST.read_text()))


def documents(name: str = "normlab") -> dict[str, dict]:
    """The objects called ``name`` (the app's, or ``normlab-redis``: the class store's)."""
    return {doc["kind"]: doc for doc in all_documents() if doc["metadata"]["name"] == name}


def container(name: str = "normlab") -> dict:
    (only,) = documents(name)["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


def after(args: list[str], flag: str) -> str:
    """The argument that follows ``flag`` (which appears once)."""
    assert args.count(flag) == 1, f"{flag} in {args}"
    return args[args.index(flag) + 1]


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of ``$(VAR)`` in args and env values: a variable defined so far
    gives its value, an unknown one stays as written, ``$$`` is one ``$``."""

    def one(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        return env.get(match[1], match[0])

    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)", one, text)


def resolve_env(spec: dict, secret: dict[tuple[str, str], str]) -> dict[str, str]:
    """A container's environment as the kubelet builds it, in order, from ``secret``
    ((name, key) -> value; a reference to anything else fails)."""
    env: dict[str, str] = {}
    for entry in spec.get("env", []):
        if "value" in entry:
            env[entry["name"]] = expand(entry["value"], env)
        else:
            ref = entry["valueFrom"]["secretKeyRef"]
            env[entry["name"]] = secret[(ref["name"], ref["key"])]
    return env


def secret_refs(spec: dict) -> dict[str, dict]:
    """A container's variables that come from a Secret, with their references."""
    return {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in spec.get("env", [])
        if "secretKeyRef" in e.get("valueFrom", {})
    }


def password_ref() -> dict:
    """The Secret key Redis takes its ``--requirepass`` from (the env var the flag expands)."""
    store = container(REDIS)
    password = after(store["args"], "--requirepass")
    match = re.fullmatch(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", password)
    assert match, f"--requirepass {password!r}: not a variable, a password written in the file"
    refs = secret_refs(store)
    assert match[1] in refs, f"{match[1]} does not come from a Secret"
    return refs[match[1]]


def test_yaml_lint_is_clean() -> None:
    problems = list(linter.run(MANIFEST.read_text(), LINT, str(MANIFEST)))
    assert problems == []


def test_every_document_is_a_valid_kubernetes_object() -> None:
    assert set(documents()) == {"Deployment", "Service", "Ingress", "PodDisruptionBudget"}
    assert set(documents(REDIS)) == {"Deployment", "Service"}
    assert set(documents(f"{REDIS}-data")) == {"PersistentVolumeClaim"}
    assert len(all_documents()) == 7
    # The operator creates the password (kubectl create secret): no Secret here, so the file
    # holds no password and applying it again never replaces theirs.
    assert "Secret" not in {doc["kind"] for doc in all_documents()}
    for doc in all_documents():
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)


def test_the_schema_check_can_fail() -> None:
    broken = copy.deepcopy(documents()["Service"])
    broken["spec"]["ports"][0]["targetPrt"] = PORT  # a typo strict validation rejects
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, KUBERNETES, strict=True)


def test_service_and_ingress_reach_the_pods_port() -> None:
    docs = documents()
    labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert docs["Deployment"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert docs["Service"]["spec"]["selector"].items() <= labels.items()
    assert docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (port,) = container()["ports"]
    assert port["containerPort"] == PORT
    # The image exposes the same port the pod declares.
    assert re.search(rf"^EXPOSE {PORT}$", (ROOT / "Dockerfile").read_text(), re.M)
    (service_port,) = docs["Service"]["spec"]["ports"]
    assert service_port["targetPort"] == port["name"]
    backend = docs["Ingress"]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": docs["Service"]["metadata"]["name"], "port": {"name": "http"}}


def test_ingress_keeps_a_visitor_on_one_pod_with_a_cookie() -> None:
    notes = documents()["Ingress"]["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert notes["nginx.ingress.kubernetes.io/session-cookie-name"] == "NORMLAB_POD"
    # Websockets stay open for a lesson: the proxy must not cut them at its 60 s default.
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600


def test_pods_run_the_launcher_with_one_worker_per_cpu_and_probe_its_health() -> None:
    spec = container()
    assert spec["args"][:3] == ["python", "-m", "serve"]
    assert f"--port={PORT}" in spec["args"]
    (workers,) = [a for a in spec["args"] if a.startswith("--workers=")]
    assert int(workers.split("=")[1]) == int(spec["resources"]["limits"]["cpu"])
    for probe in ("readinessProbe", "livenessProbe"):
        assert spec[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}


def test_the_pods_share_the_class_store_in_the_redis_service() -> None:
    (env,) = [e for e in container()["env"] if e["name"] == "NORMLAB_CLASS_STORE"]
    url = urlsplit(env["value"])
    redis = documents(REDIS)
    (service_port,) = redis["Service"]["spec"]["ports"]
    assert (url.scheme, url.hostname) == ("redis", redis["Service"]["metadata"]["name"])
    assert url.port == service_port["port"] and url.path == "/0"
    pod = redis["Deployment"]["spec"]["template"]
    (store,) = pod["spec"]["containers"]
    assert [p["name"] for p in store["ports"]] == [service_port["targetPort"]]
    assert redis["Service"]["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    # The app's Service and disruption budget never pick the store's pod.
    app = documents()["Service"]["spec"]["selector"]
    assert not app.items() <= pod["metadata"]["labels"].items()


def test_redis_keeps_its_append_only_file_on_a_claim() -> None:
    deployment = documents(REDIS)["Deployment"]
    # One pod at a time: the old one lets go of the ReadWriteOnce volume before the new mounts it.
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    store = container(REDIS)
    assert after(store["args"], "--appendonly") == "yes"
    (mount,) = [m for m in store["volumeMounts"] if m["mountPath"] == after(store["args"], "--dir")]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert not [v for v in volumes.values() if "emptyDir" in v], "a volume the pod takes with it"
    assert set(volumes[mount["name"]]) == {"name", "persistentVolumeClaim"}
    claim_name = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
    claim = documents(claim_name)["PersistentVolumeClaim"]["spec"]
    assert claim["accessModes"] == ["ReadWriteOnce"]
    assert claim["resources"]["requests"]["storage"] == "1Gi"
    assert "storageClassName" not in claim  # the cluster's default
    # The pod's user can write the volume.
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsUser"]


def test_redis_requires_the_password_from_a_secret() -> None:
    ref = password_ref()
    assert ref == {"name": REDIS, "key": "password"}  # as docs/serving.md says to create it
    env = resolve_env(container(REDIS), {(REDIS, "password"): "p4ss"})
    args = [expand(a, env) for a in container(REDIS)["args"]]
    assert after(args, "--requirepass") == "p4ss"


def test_the_app_carries_the_password_from_the_same_secret() -> None:
    ref = password_ref()
    names = [e["name"] for e in container()["env"]]
    (variable,) = [n for n, r in secret_refs(container()).items() if r == ref]
    # Kubernetes expands $(VAR) only from entries above it in the list.
    assert names.index(variable) < names.index("NORMLAB_CLASS_STORE")
    secret = {(ref["name"], ref["key"]): secrets.token_hex(24)}
    url = urlsplit(resolve_env(container(), secret)["NORMLAB_CLASS_STORE"])
    assert (url.username or "", url.password) == ("", secret[(ref["name"], ref["key"])])
    assert url.hostname == REDIS


def test_the_probes_authenticate() -> None:
    store = container(REDIS)
    for probe in ("readinessProbe", "livenessProbe"):
        command = store[probe]["exec"]["command"]
        assert command[:2] == ["sh", "-c"] and "$REDIS_PASSWORD" in command[2]
        assert store[probe]["timeoutSeconds"] >= 5


@contextmanager
def manifest_redis(data: Path, password: str) -> Iterator[int]:
    """Debian's redis-server with the manifest's arguments (the Secret's value ``password``, the
    append-only file in ``data``) on a free loopback port; yields the port."""
    import redis

    from serve.launcher import free_port
    from tests.classroom_util import REDIS_SERVER, need_redis, wait_for_redis

    need_redis()
    store = container(REDIS)
    env = resolve_env(store, {(REDIS, "password"): password})
    args = [expand(a, env) for a in store["args"]]
    assert args[0] == "redis-server"
    data.mkdir(exist_ok=True)  # the volume's mount point
    args[args.index("--dir") + 1] = str(data)
    port = free_port()
    proc = subprocess.Popen(
        [REDIS_SERVER, *args[1:], "--port", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = redis.Redis("127.0.0.1", port, password=password)
    try:
        wait_for_redis(client, proc)
        yield port
    finally:
        client.close()
        proc.send_signal(signal.SIGTERM)  # as the kubelet stops the pod
        proc.wait(timeout=10)


@pytest.fixture()
def workdir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="normlab-deploy-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def run_probe(probe: dict, port: int, password: str, workdir: Path) -> int:
    """The probe's command, its ``redis-cli`` pointed at ``port`` (in the pod, 6379)."""
    bin_dir = workdir / "bin"
    bin_dir.mkdir(exist_ok=True)
    cli = bin_dir / "redis-cli"
    cli.write_text(f'#!/bin/sh\nexec {REDIS_CLI} -p {port} "$@"\n')
    cli.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.defpath}", "REDIS_PASSWORD": password}
    command = probe["exec"]["command"]
    return subprocess.run(command, env=env, timeout=probe["timeoutSeconds"]).returncode


def test_the_store_url_and_the_probes_work_against_redis_with_its_password(workdir) -> None:
    import redis

    password = secrets.token_hex(24)
    with manifest_redis(workdir / "data", password) as port:
        app = resolve_env(container(), {(REDIS, "password"): password})
        url = urlsplit(app["NORMLAB_CLASS_STORE"])
        local = url._replace(netloc=f":{url.password}@127.0.0.1:{port}")
        # The form the app's pods open (redis.Redis.from_url, as serve/classroom/redis_store.py).
        with redis.Redis.from_url(urlunsplit(local)) as client:
            assert client.ping() is True
        with redis.Redis.from_url(f"redis://127.0.0.1:{port}/0") as anonymous:
            with pytest.raises(redis.exceptions.AuthenticationError):
                anonymous.ping()
        if not Path(REDIS_CLI).exists():
            pytest.skip("Debian's redis-tools (redis-cli) is not installed")
        for name in ("readinessProbe", "livenessProbe"):
            probe = container(REDIS)[name]
            assert run_probe(probe, port, password, workdir) == 0, name
            assert run_probe(probe, port, "wrong", workdir) != 0, name


def test_stopping_redis_keeps_what_it_acknowledged(workdir) -> None:
    """A deleted pod: SIGTERM, then a new redis-server on the same volume reads its file."""
    import redis

    password = secrets.token_hex(24)
    with manifest_redis(workdir / "data", password) as port:
        with redis.Redis("127.0.0.1", port, password=password) as client:
            client.hset("normlab:v1:class:TEST", mapping={"step": "3"})
    with manifest_redis(workdir / "data", password) as port:
        with redis.Redis("127.0.0.1", port, password=password, decode_responses=True) as client:
            assert client.hgetall("normlab:v1:class:TEST") == {"step": "3"}
