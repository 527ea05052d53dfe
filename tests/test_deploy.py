"""The Kubernetes manifest (``deploy/kubernetes/normlab.yaml``), checked offline: YAML lint, the
Kubernetes 1.37 schemas (strict: no unknown fields), and the parts that must agree with each
other and with the image: labels, ports, probes, cookie affinity, the launcher's command."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from urllib.parse import urlsplit

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


def all_documents() -> list[dict]:
    return list(yaml.safe_load_all(MANIFEST.read_text()))


def documents(name: str = "normlab") -> dict[str, dict]:
    """The objects called ``name`` (the app's, or ``normlab-redis``: the class store's)."""
    return {doc["kind"]: doc for doc in all_documents() if doc["metadata"]["name"] == name}


def container() -> dict:
    (only,) = documents()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


def test_yaml_lint_is_clean() -> None:
    problems = list(linter.run(MANIFEST.read_text(), LINT, str(MANIFEST)))
    assert problems == []


def test_every_document_is_a_valid_kubernetes_object() -> None:
    assert set(documents()) == {"Deployment", "Service", "Ingress", "PodDisruptionBudget"}
    assert set(documents(REDIS)) == {"Deployment", "Service"}
    assert len(all_documents()) == 6
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
