"""One account per fact: what the pages say of the install agrees with the install itself.

A fact told on several pages drifts one page at a time. Each check below reads the fact
where it is declared (the Deployment, the webhook configuration, pyproject.toml, the Go
modules the tests build, the model's oldest Kubernetes) and every page that restates it:
the TLS files' path, which requests the webhook is sent, the supported versions. Figures
(throughput, latency) have one home, bench/README.md, and other pages link to it.
"""

from __future__ import annotations

import itertools
import re
import tomllib
from pathlib import PurePosixPath

import pytest
import yaml

from tests.docs.pages import section
from tests.docs.repo_files import ROOT, repo_files
from webhook.manifests.cel_rules import MIN_KUBERNETES

DEPLOYMENT = ROOT / "manifests" / "webhook" / "deployment.yaml"
REGISTRATION = ROOT / "manifests" / "webhook" / "validatingwebhookconfiguration.yaml"
_TLS_FLAG = re.compile(r"--(tls-cert-file|tls-private-key-file)[ ,]+(/[^\s,\]`]+)")
_TLS_FILE = re.compile(r"(?<![\w.-])(/[\w./-]*)/tls\.(?:crt|key)\b")
_RATE = re.compile(
    r"\b\d[\d,.]*(?:-[\d,.]+)?\s+(?:[\w-]+\s+){0,3}(?:reviews|requests|calls|connections|writes)"
    r"\s+(?:a|per)\s+second",
    re.IGNORECASE,
)
_PERCENTILE = re.compile(r"\bp(?:50|9\d)\b\W{0,3}(?:of\s+)?~?\d[\d.]*\s*(?:ms|µs|s)\b")
_WITHIN = re.compile(r"\bwithin\s+(?:about\s+)?~?\d[\d.]*\s*(?:ms|µs)\b")
_FLOOR = re.compile(r"\b(Kubernetes|kubectl) (\d+)\.(\d+)\+")


def pages() -> list[PurePosixPath]:
    """Every Markdown page a reader follows: README.md, docs/, certs/README.md."""
    return [p for p in repo_files() if p.suffix == ".md" and p.parts[0] in ("README.md", "docs",
                                                                              "certs")]  # fmt: skip


def text(path: PurePosixPath) -> str:
    return (ROOT / path).read_text(encoding="utf-8")


def webhook_container() -> dict[str, object]:
    deployment = yaml.safe_load(DEPLOYMENT.read_text(encoding="utf-8"))
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return dict(container)


def tls_mount() -> str:
    container = webhook_container()
    deployment = yaml.safe_load(DEPLOYMENT.read_text(encoding="utf-8"))
    (volume,) = [v for v in deployment["spec"]["template"]["spec"]["volumes"] if "secret" in v]
    mounts = container["volumeMounts"]
    assert isinstance(mounts, list)
    (mount,) = [m for m in mounts if m["name"] == volume["name"]]
    return str(mount["mountPath"])


def test_every_page_names_the_tls_files_where_the_deployment_mounts_them() -> None:
    args = webhook_container()["args"]
    assert isinstance(args, list)
    flags = {flag: value for flag, value in itertools.pairwise(args) if flag[:2] == "--"}
    mount = tls_mount()
    wrong = []
    for path in pages():
        for number, line in enumerate(text(path).splitlines(), 1):
            for flag, value in _TLS_FLAG.findall(line):
                if not value.startswith(("/client-ca/", "/etc/kubernetes/")):
                    wrong += [f"{path}:{number}: --{flag} {value}"] * (value != flags[f"--{flag}"])
            wrong += [f"{path}:{number}: {directory}/tls.*" for directory in _TLS_FILE.findall(line)
                      if directory != mount]  # fmt: skip
    assert wrong == []


def registration_entries() -> list[dict[str, object]]:
    return list(yaml.safe_load(REGISTRATION.read_text(encoding="utf-8"))["webhooks"])


def test_the_page_on_judged_requests_names_every_entry_of_the_registration() -> None:
    judged = section("webhook.md", "## Which requests are judged")
    entries = registration_entries()
    assert len(entries) == 3
    assert [e["name"] for e in entries if f"`{e['name']}`" not in judged] == []


@pytest.mark.parametrize(
    "claim",
    [
        pytest.param(
            r"CREATE/UPDATE of `feedbackstores` only", id="that only creates and updates are sent"
        ),
        pytest.param(r"never sees\s+DELETE", id="that no DELETE is sent"),
        pytest.param(r"DELETE, CONNECT[^|]*\|[^|]*does not send", id="that DELETE is not sent"),
    ],
)
def test_no_page_narrows_the_webhook_s_scope_below_its_three_entries(claim: str) -> None:
    found = [str(p) for p in pages() if re.search(claim, text(p))]
    assert found == []


def upgrade_table() -> dict[str, str]:
    rows = section("upgrade.md", "## Supported versions").splitlines()
    cells = [
        [c.strip() for c in row.strip().strip("|").split("|")]
        for row in rows
        if row.startswith("| ")
    ]
    return {row[0]: row[1] + " | " + row[2] for row in cells[1:]}


def go_module_version(path: str, module: str) -> str:
    found = re.search(rf"^\s*{re.escape(module)} (v[\d.]+)", (ROOT / path).read_text(), re.M)
    assert found, f"{path} requires no {module}"
    return found.group(1)


def test_the_supported_versions_are_those_the_code_and_the_tests_declare() -> None:
    table = upgrade_table()
    major, minor = MIN_KUBERNETES
    assert table["Kubernetes"].startswith(f"{major}.{minor} and later")
    assert (
        f"kube-apiserver {go_module_version('tests/controlplane/go.mod', 'k8s.io/kubernetes')}"
        in (table["Kubernetes"])
    )
    # kubectl's skew policy: one minor either side of kube-apiserver
    assert f"so {major}.{minor - 1} and later" in table["kubectl"]
    assert f"helm {go_module_version('tests/helm/go.mod', 'helm.sh/helm/v4')}" in table["Helm"]
    with (ROOT / "pyproject.toml").open("rb") as handle:
        floor = tomllib.load(handle)["project"]["requires-python"].removeprefix(">=")
    assert table["Python (the CLI)"].startswith(f"{floor} and later")


def test_no_page_states_another_floor_of_kubernetes_or_kubectl() -> None:
    major, minor = MIN_KUBERNETES
    allowed = {"Kubernetes": (major, minor), "kubectl": (major, minor - 1)}
    found = [
        f"{path}: {m.group(0)}"
        for path in pages()
        for m in _FLOOR.finditer(text(path))
        if (int(m.group(2)), int(m.group(3))) != allowed[m.group(1)]
    ]
    assert found == []


@pytest.mark.parametrize(
    ("figure", "as_it_was_restated"),
    [
        pytest.param(
            _RATE,
            "One pod on one core answers about 8,600 small admission reviews a second",
            id="a rate of reviews, requests or connections",
        ),
        pytest.param(_PERCENTILE, "with a p99 of ~1.7 ms", id="a latency percentile"),
        pytest.param(
            _WITHIN, "a spec change is typically reflected within 10 ms", id="a latency bound"
        ),
    ],
)
def test_figures_live_in_the_benchmarks_page_alone(
    figure: re.Pattern[str], as_it_was_restated: str
) -> None:
    assert figure.search(as_it_was_restated)
    found = [f"{path}: {m.group(0)}" for path in pages() for m in figure.finditer(text(path))]
    assert found == []
