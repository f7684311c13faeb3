"""`feedbackstore-webhook doctor` on the real kube-apiserver: every check passing, then each
broken in turn.

The module builds an install the way a cluster holds one, within the tests' network rule
(kube-apiserver calls 127.0.0.1 only): an install namespace (not matched by any webhook)
with the serving Secret, the Service and a hand-made EndpointSlice (no controller makes
one here) pointing at a real `serve` on 127.0.0.1, a `url:` registration, a real
`status-writer` holding the Lease and writing `Validated` on a store.

Each breakage gets its own registration that matches only its own probe namespace (by a
label no other registration selects), so a broken webhook never stands in the way of the
next test, and the doctor's dry-run goes through the broken one alone.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import io
import json
import pathlib
import re
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.cluster import (
    API_VERSION,
    GROUP,
    PLURAL,
    VERSION,
    WebhookServer,
    api_client,
    delete_feedbackstore_crd,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    registered,
    registration,
    shipped_crd,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane, free_port
from tests.kube.inuse_support import AGENT_GROUP, AGENT_PLURAL, agent_crd_installed
from tests.support.doctor_checks import EVERY_CHECK
from tests.support.servers import ConsoleServer, console_script
from tests.support.stores import VALID
from webhook.certs.issue import Bundle, issue_bundle
from webhook.cli.main import main
from webhook.rules.api import CRD_NAME
from webhook.rules.inuse import FINALIZER
from webhook.status.kubeapi import FeedbackStoreApi
from webhook.status.usage import finalizer_configuration

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

SCENARIO_LABEL = "feedbackstore-test/doctor"
ENDPOINT = "192.0.2.10"


@pytest.fixture(scope="module", autouse=True)
def _shipped_crd(control_plane: ControlPlane) -> Iterator[None]:
    install_crd(control_plane, shipped_crd())
    with agent_crd_installed(control_plane):
        yield


@dataclass
class Install:
    plane: ControlPlane
    namespace: str
    probe_namespace: str
    configuration: str
    server: WebhookServer
    workdir: pathlib.Path

    def args(self, **overrides: str) -> list[str]:
        """The doctor's flags for this install; `overrides` replace or add (`--name value`)."""
        flags = {
            "kubeconfig": str(self.plane.kubeconfig),
            "namespace": self.namespace,
            "webhook-configuration": self.configuration,
            "probe-namespace": self.probe_namespace,
            "store-namespace": self.probe_namespace,
        }
        flags.update({key.replace("_", "-"): value for key, value in overrides.items()})
        return [item for key, value in flags.items() for item in (f"--{key}", value)]


def doctor(install: Install, **overrides: str) -> tuple[int, dict[str, dict[str, str]]]:
    """Run the command in-process with `-o json`; (exit code, checks by name)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["doctor", *install.args(**overrides), "-o", "json"])
    report = json.loads(out.getvalue())
    checks = {check["name"]: check for check in report["checks"]}
    assert list(checks) == EVERY_CHECK
    assert report["healthy"] is (code == 0)
    return code, checks


def levels(checks: dict[str, dict[str, str]]) -> dict[str, str]:
    return {name: check["status"] for name, check in checks.items()}


def all_ok_but(checks: dict[str, dict[str, str]], **expected: str) -> None:
    """Every check ok except those named (with `_` for `-`), which have the level given."""
    wanted = {name: "ok" for name in EVERY_CHECK}
    wanted.update({name.replace("_", "-"): level for name, level in expected.items()})
    assert levels(checks) == wanted, json.dumps(checks, indent=1)


# -- the install -------------------------------------------------------------------------


def _plain_namespace(plane: ControlPlane, prefix: str, labels: dict[str, str]) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    body = {"metadata": {"name": name, "labels": labels}}
    k8s.CoreV1Api(api_client(plane)).create_namespace(body)
    return name


def _tls_secret(
    plane: ControlPlane, namespace: str, name: str, cert: bytes, key: bytes, ca: bytes
) -> None:
    data = {"tls.crt": cert, "tls.key": key, "ca.crt": ca}
    body = {
        "metadata": {"name": name},
        "type": "kubernetes.io/tls",
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }
    k8s.CoreV1Api(api_client(plane)).create_namespaced_secret(namespace, body)


def _service(
    plane: ControlPlane, namespace: str, name: str, port: int, *, ready: bool | None
) -> None:
    """A Service and, unless `ready` is None, an EndpointSlice for it at ENDPOINT:`port`.

    kube-apiserver refuses loopback addresses in an EndpointSlice, so the endpoint is
    a documentation address (RFC 5737): data for the doctor to read, never dialled
    (the registrations call 127.0.0.1 by `url:`; nothing here uses the Service).
    """
    api = api_client(plane)
    k8s.CoreV1Api(api).create_namespaced_service(
        namespace,
        {
            "metadata": {"name": name},
            "spec": {
                "selector": {"app.kubernetes.io/name": name},
                "ports": [{"name": "https", "port": 443, "targetPort": "https"}],
            },
        },
    )
    if ready is None:
        return
    k8s.DiscoveryV1Api(api).create_namespaced_endpoint_slice(
        namespace,
        {
            "metadata": {"name": f"{name}-1", "labels": {"kubernetes.io/service-name": name}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [ENDPOINT], "conditions": {"ready": ready}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
        },
    )


def _lease(
    plane: ControlPlane, namespace: str, name: str, holder: str, renewed: dt.datetime
) -> None:
    stamp = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    k8s.CustomObjectsApi(api_client(plane)).create_namespaced_custom_object(
        "coordination.k8s.io",
        "v1",
        namespace,
        "leases",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": name},
            "spec": {
                "holderIdentity": holder,
                "leaseDurationSeconds": 15,
                "acquireTime": stamp,
                "renewTime": stamp,
            },
        },
    )


@contextlib.contextmanager
def status_writer(
    plane: ControlPlane, workdir: pathlib.Path, store_namespace: str, lease_namespace: str
) -> Iterator[subprocess.Popen[bytes]]:
    log = (workdir / f"status-writer-{uuid.uuid4().hex[:6]}.log").open("wb")
    process = subprocess.Popen(
        [
            console_script(),
            "status-writer",
            "--kubeconfig",
            str(plane.kubeconfig),
            "--namespace",
            store_namespace,
            "--lease-namespace",
            lease_namespace,
            "--metrics-host",
            "127.0.0.1",
            "--metrics-port",
            "0",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def _validated(plane: ControlPlane, namespace: str, name: str) -> bool:
    store = k8s.CustomObjectsApi(api_client(plane)).get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name
    )
    conditions = (store.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Validated" for c in conditions)


@pytest.fixture(scope="module")
def install(
    control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory, _shipped_crd: None
) -> Iterator[Install]:
    plane = control_plane
    workdir = tmp_path_factory.mktemp("doctor")
    namespace = _plain_namespace(plane, "fbsys", {})
    probe_namespace = new_namespace(plane, "doctor")
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(webhook_server(workdir / "webhook"))
        _tls_secret(
            plane,
            namespace,
            "feedbackstore-webhook-tls",
            server.cert_file.read_bytes(),
            server.key_file.read_bytes(),
            server.ca_pem,
        )
        _service(plane, namespace, "feedbackstore-webhook", server.port, ready=True)
        name = f"doctor-{uuid.uuid4().hex[:8]}"
        stack.enter_context(
            registered(plane, registration(name, server.url, server.ca_pem), probe_namespace)
        )
        stack.enter_context(status_writer(plane, workdir, probe_namespace, namespace))
        k8s.CustomObjectsApi(api_client(plane)).create_namespaced_custom_object(
            GROUP, VERSION, probe_namespace, PLURAL, feedbackstore("kept", VALID)
        )
        eventually(lambda: _validated(plane, probe_namespace, "kept"), what="store Validated")
        yield Install(plane, namespace, probe_namespace, name, server, workdir)


@dataclass
class Scenario:
    """A registration of its own, matching only its own (labelled) probe namespace."""

    name: str
    namespace: str


@contextlib.contextmanager
def scenario(
    install: Install, url: str, ca_pem: bytes, *, live: bool = True, **overrides: Any
) -> Iterator[Scenario]:
    tag = uuid.uuid4().hex[:8]
    namespace = _plain_namespace(install.plane, "probe", {SCENARIO_LABEL: tag})
    fields = {"namespaceSelector": {"matchLabels": {SCENARIO_LABEL: tag}}, **overrides}
    document = registration(f"doctor-{tag}", url, ca_pem, **fields)
    with registered(install.plane, document, namespace, wait=live):
        yield Scenario(document["metadata"]["name"], namespace)


def wait_refused(plane: ControlPlane, namespace: str) -> None:
    """Until kube-apiserver uses a broken registration: a dry-run there is refused."""
    probe = yaml.safe_dump(feedbackstore("refused-probe", VALID))

    def refused() -> bool:
        result = plane.kubectl(
            "create", "--dry-run=server", "-n", namespace, "-f", "-", stdin=probe
        )
        return result.returncode != 0 and "failed calling webhook" in result.stderr

    eventually(refused, timeout=30, what="broken registration in use")


@contextlib.contextmanager
def serving(install: Install, bundle: Bundle) -> Iterator[int]:
    """`serve` on 127.0.0.1 with `bundle`'s pair; its port."""
    directory = install.workdir / f"serve-{uuid.uuid4().hex[:6]}"
    directory.mkdir()
    cert, key = directory / "tls.crt", directory / "tls.key"
    cert.write_bytes(bundle.cert)
    key.write_bytes(bundle.key)
    key.chmod(0o600)
    port = free_port()
    args = ["--host", "127.0.0.1", "--port", str(port)]
    args += ["--tls-cert-file", str(cert), "--tls-private-key-file", str(key)]
    process = ConsoleServer(args, cwd=directory)
    try:
        process.wait_log(lambda e: e.get("msg") == "serving", timeout=30)
        yield port
    finally:
        process.kill()


def with_secret(install: Install, bundle: Bundle) -> str:
    name = f"tls-{uuid.uuid4().hex[:8]}"
    _tls_secret(install.plane, install.namespace, name, bundle.cert, bundle.key, bundle.ca_cert)
    return name


def doctor_on_refused_serving(
    install: Install, bundle: Bundle
) -> tuple[int, dict[str, dict[str, str]]]:
    """The doctor's answer (code, checks) for `bundle` as the Secret and a `serve`'s pair,
    registered by a scenario of its own, once kube-apiserver refuses to call it."""
    secret = with_secret(install, bundle)
    with (
        serving(install, bundle) as port,
        scenario(
            install, f"https://127.0.0.1:{port}/validate", bundle.ca_cert, live=False
        ) as broken,
    ):
        wait_refused(install.plane, broken.namespace)
        return doctor(
            install,
            webhook_configuration=broken.name,
            secret=secret,
            probe_namespace=broken.namespace,
        )


# -- all is well -------------------------------------------------------------------------


def test_a_healthy_install_passes_every_check(install: Install) -> None:
    code, checks = doctor(install)
    assert code == 0
    all_ok_but(checks)
    assert "127.0.0.1" in checks["certificate-names"]["detail"]
    assert f"1 ready ({ENDPOINT})" in checks["service-endpoints"]["detail"]
    assert "1 FeedbackStore in" in checks["store-conditions"]["detail"]
    assert "cross-field rules in CEL" in checks["crd"]["detail"]


def test_text_output_is_one_line_per_check_and_exit_code_from_the_console_script(
    install: Install,
) -> None:
    result = subprocess.run(
        [console_script(), "doctor", *install.args()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines[:-1]] == [["ok", name] for name in EVERY_CHECK]
    every = len(EVERY_CHECK)
    assert lines[-1].startswith(f"{every} checks: {every} ok, 0 warnings, 0 failed, 0 skipped")
    (install.workdir / "transcript-healthy.txt").write_text(result.stdout)


# -- each thing broken in turn -----------------------------------------------------------


def test_a_missing_webhook_configuration_fails_and_its_fields_are_skipped(
    install: Install,
) -> None:
    code, checks = doctor(install, webhook_configuration="nowhere")
    assert code == 1
    assert checks["webhook-configuration"]["status"] == "fail"
    assert (
        "ValidatingWebhookConfiguration nowhere not found"
        in (checks["webhook-configuration"]["detail"])
    )
    for name in EVERY_CHECK[2:10]:
        assert checks[name]["status"] == "skip", name


def test_failure_policy_ignore_fails_and_a_dead_webhook_behind_it_goes_unnoticed(
    install: Install,
) -> None:
    dead = f"https://127.0.0.1:{free_port()}/validate"
    with scenario(
        install, dead, install.server.ca_pem, live=False, failurePolicy="Ignore"
    ) as broken:
        code, checks = doctor(
            install, webhook_configuration=broken.name, probe_namespace=broken.namespace
        )
    assert code == 1
    all_ok_but(checks, failurePolicy="fail", webhook_answers="fail")
    assert checks["failurePolicy"]["detail"].startswith("Ignore:")
    assert '"value":"Fail"' in checks["failurePolicy"]["fix"]
    assert "without the webhook's warning" in checks["webhook-answers"]["detail"]
    assert "failurePolicy Ignore" in checks["webhook-answers"]["fix"]


def test_a_namespace_selector_that_matches_the_install_namespace_fails(
    install: Install,
) -> None:
    with scenario(
        install, install.server.url, install.server.ca_pem, namespaceSelector={}
    ) as broken:
        code, checks = doctor(
            install, webhook_configuration=broken.name, probe_namespace=broken.namespace
        )
    assert code == 1
    all_ok_but(checks, namespaceSelector="fail")
    assert f"matches kube-system and {install.namespace}" in checks["namespaceSelector"]["detail"]


def test_a_wrong_ca_bundle_fails_and_kube_apiserver_says_unknown_authority(
    install: Install,
) -> None:
    other_ca = issue_bundle(("127.0.0.1",)).ca_cert
    with scenario(install, install.server.url, other_ca, live=False) as broken:
        wait_refused(install.plane, broken.namespace)
        code, checks = doctor(
            install, webhook_configuration=broken.name, probe_namespace=broken.namespace
        )
    assert code == 1
    all_ok_but(checks, ca_bundle="fail", webhook_answers="fail")
    assert "does not verify the serving certificate" in checks["ca-bundle"]["detail"]
    assert "the Secret's ca.crt signed it" in checks["ca-bundle"]["fix"]
    assert "x509: certificate signed by unknown authority" in checks["webhook-answers"]["detail"]


def test_a_certificate_for_another_name_fails_as_kube_apiserver_does(install: Install) -> None:
    bundle = issue_bundle(("localhost",))
    code, checks = doctor_on_refused_serving(install, bundle)
    assert code == 1
    all_ok_but(checks, certificate_names="fail", webhook_answers="fail")
    # The doctor predicts kube-apiserver's words (Go's VerifyHostname), and the dry-run shows them.
    go_says = (
        "x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs"
    )
    assert go_says in checks["certificate-names"]["detail"]
    assert go_says in checks["webhook-answers"]["detail"]


def test_a_certificate_expiring_within_30_days_warns_and_still_exits_0(install: Install) -> None:
    bundle = issue_bundle(("127.0.0.1",), days=10)
    secret = with_secret(install, bundle)
    with (
        serving(install, bundle) as port,
        scenario(install, f"https://127.0.0.1:{port}/validate", bundle.ca_cert) as soon,
    ):
        code, checks = doctor(
            install, webhook_configuration=soon.name, secret=secret, probe_namespace=soon.namespace
        )
    assert code == 0
    all_ok_but(checks, certificate_expiry="warn")
    assert "serving certificate expires on" in checks["certificate-expiry"]["detail"]
    assert "in 9 days" in checks["certificate-expiry"]["detail"]


def test_an_expired_certificate_fails_and_kube_apiserver_refuses_it(install: Install) -> None:
    issued = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
    bundle = issue_bundle(("127.0.0.1",), days=30, now=issued)
    code, checks = doctor_on_refused_serving(install, bundle)
    assert code == 1
    all_ok_but(checks, certificate_expiry="fail", webhook_answers="fail")
    assert "serving certificate expired on" in checks["certificate-expiry"]["detail"]
    assert "x509: certificate has expired" in checks["webhook-answers"]["detail"]


def test_a_service_without_ready_endpoints_fails(install: Install) -> None:
    _service(install.plane, install.namespace, "not-ready", install.server.port, ready=False)
    _service(install.plane, install.namespace, "no-slice", install.server.port, ready=None)
    code, checks = doctor(install, service="not-ready")
    assert code == 1
    all_ok_but(checks, service_endpoints="fail")
    assert (
        "has no ready endpoints (1 not ready: pods not Ready)"
        in (checks["service-endpoints"]["detail"])
    )
    code, checks = doctor(install, service="no-slice")
    assert "(0 not ready: no pods selected)" in checks["service-endpoints"]["detail"]
    code, checks = doctor(install, service="absent")
    assert code == 1
    assert f"Service {install.namespace}/absent not found" in checks["service-endpoints"]["detail"]


def test_a_webhook_server_that_is_down_fails_the_dry_run(install: Install) -> None:
    dead = f"https://127.0.0.1:{free_port()}/validate"
    with scenario(install, dead, install.server.ca_pem, live=False) as broken:
        wait_refused(install.plane, broken.namespace)
        code, checks = doctor(
            install, webhook_configuration=broken.name, probe_namespace=broken.namespace
        )
        transcript = _text(install, broken)
    assert code == 1
    all_ok_but(checks, webhook_answers="fail")
    detail = checks["webhook-answers"]["detail"]
    assert "failed calling webhook" in detail
    assert "connection refused" in detail
    assert "FAIL  webhook-answers" in transcript
    (install.workdir / "transcript-down.txt").write_text(transcript)


def _text(install: Install, broken: Scenario) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(
            [
                "doctor",
                *install.args(webhook_configuration=broken.name, probe_namespace=broken.namespace),
            ]
        )
    return out.getvalue()


def test_a_missing_lease_fails(install: Install) -> None:
    code, checks = doctor(install, lease="nobody-leads")
    assert code == 1
    all_ok_but(checks, status_writer_lease="fail")
    assert "not found: no status writer has ever led" in checks["status-writer-lease"]["detail"]


def test_a_lease_not_renewed_recently_fails(install: Install) -> None:
    ten_minutes_ago = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10)
    _lease(install.plane, install.namespace, "gone-quiet", "writer-0_abc", ten_minutes_ago)
    code, checks = doctor(install, lease="gone-quiet")
    assert code == 1
    all_ok_but(checks, status_writer_lease="fail")
    assert checks["status-writer-lease"]["detail"] == (
        f"Lease {install.namespace}/gone-quiet held by writer-0_abc, last renewed 10 min ago, "
        "lapsed 10 min ago: the leader stopped renewing"
    )


def test_the_running_writer_s_lease_is_held_and_fresh(install: Install) -> None:
    _, checks = doctor(install)
    detail = checks["status-writer-lease"]["detail"]
    assert re.fullmatch(r"held by \S+, renewed \d+ s ago, lapses in \d+ s unless renewed", detail)


def test_stores_with_missing_or_stale_conditions_fail(install: Install) -> None:
    plane = install.plane
    namespace = new_namespace(plane, "stale")  # the writer watches only the install's
    custom = k8s.CustomObjectsApi(api_client(plane))
    for name in ("never-seen", "seen-before"):
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, feedbackstore(name, VALID)
        )
    # The status writer's own verdict (Stalled) and the platform's (Validated), both for
    # generation 1; the doctor reads only the first.
    stalled = {
        "type": "Stalled",
        "status": "False",
        "reason": "SpecCoherent",
        "message": "feedback store spec is coherent",
        "observedGeneration": 1,
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }
    validated = {**stalled, "type": "Validated", "status": "True"}
    custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "seen-before",
        {
            "apiVersion": API_VERSION,
            "kind": "FeedbackStore",
            "metadata": {"name": "seen-before"},
            "status": {"conditions": [validated, stalled]},
        },
        field_manager="doctor-test",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "seen-before",
        {"spec": {"human": {"scores": [{"name": "stars"}]}}},
        _content_type="application/merge-patch+json",
    )
    code, checks = doctor(install, store_namespace=namespace)
    assert code == 1
    # Its Validated applied as `doctor-test`, which the doctor names as a second writer too.
    all_ok_but(checks, store_conditions="fail", validated_writers="warn")
    assert checks["store-conditions"]["detail"] == (
        f"2 FeedbackStores in {namespace}: 1 without Stalled ({namespace}/never-seen); "
        f"1 stale: observedGeneration < generation ({namespace}/seen-before)"
    )
    assert checks["validated-writers"]["detail"].startswith(
        f"Validated is also written by doctor-test on 1 FeedbackStore ({namespace}/seen-before)"
    )


def test_stores_held_with_no_writer_fail_and_the_printed_ways_out_work(install: Install) -> None:
    """The writer gone for good: the doctor names the held stores and `cleanup`, which frees the
    store whose finalizer the writer alone applied; for the store whose finalizer another manager
    also lists (which `cleanup` leaves), the patch that removes ours alone."""
    plane = install.plane
    namespace = new_namespace(plane, "held")  # the install's writer does not watch it
    custom = k8s.CustomObjectsApi(api_client(plane))
    listed = feedbackstore("listed", VALID)
    listed["metadata"]["finalizers"] = ["example.com/keep", FINALIZER]
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, listed)
    applied = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, feedbackstore("applied", VALID)
    )
    FeedbackStoreApi(api_client(plane)).apply_finalizer(
        namespace, "applied", finalizer_configuration(applied, hold=True)
    )
    for name in ("applied", "listed"):
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    ten_minutes_ago = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=10)
    _lease(plane, install.namespace, "writer-gone", "writer-0_abc", ten_minutes_ago)

    code, checks = doctor(install, store_namespace=namespace, lease="writer-gone")
    assert code == 1
    held = checks["held-deletions"]
    assert (held["status"], held["detail"]) == (
        "fail",
        f"2 FeedbackStores Terminating with {FINALIZER} and no status writer leading to release "
        f"them: {namespace}/applied, {namespace}/listed",
    )
    cleanup = (
        f"feedbackstore-webhook cleanup --lease-namespace {install.namespace} "
        "--lease-name writer-gone"
    )
    assert f"if it is gone for good: run {cleanup}, which takes " in held["fix"]
    assert f"which cleanup leaves ({namespace}/listed)" in held["fix"]

    # Confined to the test's namespace: the plane is shared.
    words = [console_script(), *cleanup.split()[1:], "--kubeconfig", str(plane.kubeconfig),
             "--namespace", namespace]  # fmt: skip
    done = subprocess.run(words, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done
    assert f"{namespace}/applied: removed finalizer {FINALIZER}" in done.stdout
    eventually(lambda: _gone(custom, namespace, "applied"), what="applied store deleted")

    command = held["fix"].rpartition("remove ours alone, e.g. ")[2]
    assert command.startswith(f"kubectl -n {namespace} patch fs listed --type=json -p '")
    patch = command.split("-p '", 1)[1].rstrip("'")
    done = plane.kubectl("-n", namespace, "patch", "fs", "listed", "--type=json", "-p", patch)
    assert (done.returncode, done.stdout) == (0, "feedbackstore.agents.ctxmesh.ai/listed patched\n")
    left = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "listed")
    assert left["metadata"]["finalizers"] == ["example.com/keep"], "only ours was removed"

    _, checks = doctor(install, store_namespace=namespace)
    assert checks["held-deletions"]["status"] == "ok"
    # Let it go: a store left Terminating would block the CRD's deletion later on.
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "listed", {"metadata": {"finalizers": None}}
    )


def _gone(custom: k8s.CustomObjectsApi, namespace: str, name: str) -> bool:
    try:
        custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, name)
    except k8s.ApiException as error:
        return error.status == 404
    return False


def test_an_invalid_inline_declaration_is_listed_with_its_first_problem(install: Install) -> None:
    # In a namespace no webhook registration selects: the agent gets in, as one created
    # before the webhook did (the install's own registration would refuse it).
    namespace = _plain_namespace(install.plane, "inline", {})
    api = k8s.CustomObjectsApi(api_client(install.plane))
    twice = {"human": {"scores": [{"name": "a"}, {"name": "a"}]}}
    body = {
        "apiVersion": f"{AGENT_GROUP}/v1beta1",
        "kind": "AgentDeployment",
        "metadata": {"name": "inline-bot"},
        "spec": {"feedback": twice},
    }
    api.create_namespaced_custom_object(AGENT_GROUP, "v1beta1", namespace, AGENT_PLURAL, body)
    code, checks = doctor(install, store_namespace=namespace)
    assert code == 0, "a warning: the agent serves, the platform's gateway decides with it"
    all_ok_but(checks, inline_declarations="warn")
    assert checks["inline-declarations"]["detail"] == (
        f"1 AgentDeployment with spec.feedback in {namespace}; 1 invalid: "
        f"{namespace}/inline-bot (spec.feedback.human.scores[1].name: Duplicate "
        'value: "a": human score names must be unique (first declared at '
        "spec.feedback.human.scores[0].name))"
    )


def test_an_unreadable_object_is_reported_not_guessed(install: Install) -> None:
    """A user who may read nothing: every check says what it could not read (exit 1, not 2)."""
    nobody = install.plane.write_kubeconfig("doctor-nobody", install.plane.pki.client("nobody"))
    code, checks = doctor(install, kubeconfig=str(nobody))
    assert code == 1
    assert checks["crd"]["status"] == "fail"
    assert (
        'User "nobody" cannot get resource "customresourcedefinitions"' in (checks["crd"]["detail"])
    )
    assert (
        'cannot get resource "validatingwebhookconfigurations"'
        in (checks["webhook-configuration"]["detail"])
    )
    assert 'cannot get resource "leases"' in checks["status-writer-lease"]["detail"]
    assert 'cannot list resource "feedbackstores"' in checks["store-conditions"]["detail"]
    assert 'cannot create resource "feedbackstores"' in checks["webhook-answers"]["detail"]


def test_a_cluster_that_does_not_answer_exits_2(install: Install, capsys: Any) -> None:
    config = install.plane.kubeconfig.read_text()
    closed = config.replace(f"127.0.0.1:{install.plane.apiserver_port}", f"127.0.0.1:{free_port()}")
    kubeconfig = install.workdir / "kubeconfig-closed.yaml"
    kubeconfig.write_text(closed)
    assert main(["doctor", *install.args(kubeconfig=str(kubeconfig))]) == 2
    assert "doctor: cannot examine the cluster: no answer from the API server" in (
        capsys.readouterr().err
    )


@pytest.mark.timeout(420)  # deleting every store left on the plane, then the CRD back
def test_a_missing_crd_fails_and_what_needs_it_is_skipped(install: Install) -> None:
    """Last: the CRD (and every store with it) is deleted, then put back for later modules."""
    plane = install.plane
    try:
        delete_feedbackstore_crd(plane)
        code, checks = doctor(install)
        assert code == 1
        assert checks["crd"]["status"] == "fail"
        assert checks["crd"]["detail"] == f"CRD {CRD_NAME} is not installed"
        assert checks["webhook-answers"]["status"] == "skip"
        assert checks["store-conditions"]["status"] == "skip"
        assert checks["validated-writers"]["status"] == "skip"
    finally:
        install_crd(plane, shipped_crd())


def _fail_open_count(plane: ControlPlane, entry: str) -> float:
    """kube-apiserver's own count of calls to `entry` that failed and let the request through."""
    metrics = plane.kubectl("get", "--raw", "/metrics").stdout
    prefix = f'apiserver_admission_webhook_fail_open_count{{name="{entry}"'
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines()
               if line.startswith(prefix))  # fmt: skip


def test_a_ca_bundle_in_the_first_entry_only_names_the_entries_that_fail_open(
    install: Install,
) -> None:
    """What a caBundle patched into /webhooks/0 alone leaves: the judging entry works, the
    delete warning and the inline form's entries (failurePolicy Ignore) check the certificate
    against the system roots, fail, and kube-apiserver lets their requests through unjudged.
    The doctor names both entries and their failurePolicy."""
    tag = uuid.uuid4().hex[:8]
    namespace = _plain_namespace(install.plane, "probe", {SCENARIO_LABEL: tag})
    document = registration(
        f"doctor-{tag}", install.server.url, install.server.ca_pem,
        namespaceSelector={"matchLabels": {SCENARIO_LABEL: tag}},
    )  # fmt: skip
    for entry in document["webhooks"][1:]:
        entry["clientConfig"].pop("caBundle")
        entry["namespaceSelector"] = {"matchLabels": {SCENARIO_LABEL: tag}}
    delete_entry = document["webhooks"][1]["name"]
    with registered(install.plane, document, namespace):
        custom = k8s.CustomObjectsApi(api_client(install.plane))
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, feedbackstore("gone", VALID)
        )
        before = _fail_open_count(install.plane, delete_entry)
        deleted = install.plane.kubectl("delete", "-n", namespace, "fs", "gone")
        assert deleted.returncode == 0, deleted.stderr  # let through, unjudged
        assert _fail_open_count(install.plane, delete_entry) > before
        code, checks = doctor(
            install, webhook_configuration=document["metadata"]["name"], probe_namespace=namespace
        )
    assert code == 1
    all_ok_but(checks, ca_bundle="fail")
    detail = checks["ca-bundle"]["detail"]
    for entry in document["webhooks"][1:]:
        assert f"{entry['name']} (failurePolicy Ignore, fails open): no caBundle" in detail
    assert f"{document['webhooks'][0]['name']}: caBundle CA" in detail
    assert "kubectl apply -k certs/ fills every entry's caBundle" in checks["ca-bundle"]["fix"]
