"""The doctor's checks as pure functions: each input, the level and words an admin gets.

The real kube-apiserver (tests/kube/test_doctor_real.py) proves the objects fetched are the
objects these tests build; here every branch is pinned without a cluster.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import shlex
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.support.doctor_checks import EVERY_CHECK
from tests.support.manifest_render import MANIFESTS
from tests.support.stores import VALID
from webhook.certs.issue import Authority, Bundle, issue_authority, issue_bundle, issue_serving
from webhook.certs.own import load_certificates
from webhook.doctor import certificates, registration
from webhook.doctor.checks import (
    check_crd,
    check_endpoints,
    check_lease,
    check_probe,
    expected_warnings,
    probe_store,
    run_checks,
    service_ref,
)
from webhook.doctor.cluster import _warnings
from webhook.doctor.inline import check_inline
from webhook.doctor.registration import selects
from webhook.doctor.result import (
    CheckResult,
    Level,
    as_json,
    as_text,
    combine,
    fail,
    healthy,
    ok,
    skip,
    warn,
)
from webhook.doctor.snapshot import ProbeOutcome, Snapshot, Target, Unreadable
from webhook.doctor.stores import (
    check_held,
    check_stores,
    check_validated_writers,
    hand_back_command,
    remove_command,
)
from webhook.rules.api import CRD_NAME

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
TARGET = Target()
SHIPPED_LEASE = (TARGET.namespace, TARGET.lease)
SERVICE_HOST = "feedbackstore-webhook.feedbackstore-system.svc"
FORBIDDEN = Unreadable('secrets is forbidden: User "bob" cannot get resource "secrets"')


# -- label selectors ---------------------------------------------------------------------

NAME_LABEL = "kubernetes.io/metadata.name"


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        (None, {"a": "1"}, True),
        ({}, {}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {"a": "1"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
            {"a": "1"},
            False,
        ),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        (
            {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
            {"a": "2"},
            False,
        ),
    ],
    ids=[
        "no selector selects everything",
        "an empty selector selects everything",
        "matchLabels needs each pair",
        "matchLabels refuses another value",
        "In with the value",
        "In without the key",
        "NotIn without the key",
        "NotIn with a listed value",
        "Exists",
        "DoesNotExist with the key",
        "an unknown operator selects nothing",
    ],
)
def test_label_selectors_as_kube_apiserver_reads_them(
    selector: Any, labels: dict[str, str], selected: bool
) -> None:
    assert selects(selector, labels) is selected


# -- CRD ---------------------------------------------------------------------------------


def crd(established: str = "True", served: bool = True, cel: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"openAPIV3Schema": {"type": "object", "properties": {}}}
    if cel:
        schema["openAPIV3Schema"]["properties"]["spec"] = {
            "x-kubernetes-validations": [{"rule": "true"}]
        }
    return {
        "metadata": {"name": CRD_NAME},
        "spec": {
            "versions": [{"name": "v1beta1", "served": served, "storage": True, "schema": schema}]
        },
        "status": {
            "conditions": [
                {
                    "type": "NamesAccepted",
                    "status": "False" if established != "True" else "True",
                    "message": '"fs" is already in use',
                },
                {"type": "Established", "status": established},
            ]
        },
    }


@pytest.mark.parametrize(
    ("found", "level", "detail"),
    [
        (
            crd(),
            Level.OK,
            f"{CRD_NAME} Established; versions v1beta1 (served, storage); cross-field rules in CEL",
        ),
        (
            crd(cel=False),
            Level.OK,
            f"{CRD_NAME} Established; versions v1beta1 (served, storage); "
            "no CEL rules: the webhook alone enforces the cross-field rules",
        ),
        (None, Level.FAIL, f"CRD {CRD_NAME} is not installed"),
        (
            crd(established="False"),
            Level.FAIL,
            f'CRD {CRD_NAME} is not Established: "fs" is already in use',
        ),
        (
            crd(served=False),
            Level.FAIL,
            f"CRD {CRD_NAME} does not serve v1beta1 (versions: v1beta1)",
        ),
        (FORBIDDEN, Level.FAIL, f"cannot read CRD {CRD_NAME}: {FORBIDDEN.reason}"),
    ],
    ids=[
        "established with CEL",
        "the platform's CRD without CEL",
        "missing",
        "not Established, the names condition says why",
        "v1beta1 not served",
        "forbidden",
    ],
)
def test_the_crd_check(found: Any, level: Level, detail: str) -> None:
    result = check_crd(found)
    assert (result.level, result.detail) == (level, detail)
    assert bool(result.fix) is (level is Level.FAIL)


# -- the webhook registration ------------------------------------------------------------

ENTRY: dict[str, Any] = {
    "name": "validate.feedbackstores.agents.ctxmesh.ai",
    "admissionReviewVersions": ["v1"],
    "sideEffects": "None",
    "failurePolicy": "Fail",
    "timeoutSeconds": 5,
    "clientConfig": {
        "service": {
            "namespace": "feedbackstore-system",
            "name": "feedbackstore-webhook",
            "path": "/validate",
            "port": 443,
        }
    },
    "rules": [
        {
            "apiGroups": ["agents.ctxmesh.ai"],
            "apiVersions": ["v1beta1"],
            "operations": ["CREATE", "UPDATE"],
            "resources": ["feedbackstores"],
        }
    ],
    "namespaceSelector": {
        "matchExpressions": [
            {
                "key": NAME_LABEL,
                "operator": "NotIn",
                "values": ["kube-system", "feedbackstore-system"],
            }
        ]
    },
}
DELETE_ONLY: dict[str, Any] = {
    **ENTRY,
    "name": "in-use.feedbackstores.agents.ctxmesh.ai",
    "failurePolicy": "Ignore",
    "rules": [{**ENTRY["rules"][0], "operations": ["DELETE"]}],
}


def configuration(*entries: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """The shipped registration; `changes` apply to its (last) admission entry."""
    found = [copy.deepcopy(e) for e in entries] or [copy.deepcopy(ENTRY)]
    found[-1].update(changes)
    return {"metadata": {"name": "feedbackstore-webhook"}, "webhooks": found}


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {result.name: result for result in results}


def test_the_shipped_registration_passes_every_field_check() -> None:
    results = registration.check_registration(configuration(), TARGET, {})
    assert [(r.name, r.level) for r in results] == [
        ("webhook-configuration", Level.OK),
        ("failurePolicy", Level.OK),
        ("sideEffects", Level.OK),
        ("timeoutSeconds", Level.OK),
        ("admissionReviewVersions", Level.OK),
        ("namespaceSelector", Level.OK),
    ]
    assert results[0].detail == (
        "feedbackstore-webhook: validate.feedbackstores.agents.ctxmesh.ai -> "
        "Service feedbackstore-system/feedbackstore-webhook:443"
    )
    assert results[-1].detail == "leaves out kube-system and feedbackstore-system"


@pytest.mark.parametrize(
    ("found", "why"),
    [
        (None, "ValidatingWebhookConfiguration feedbackstore-webhook not found"),
        (FORBIDDEN, f"cannot read feedbackstore-webhook: {FORBIDDEN.reason}"),
        (
            configuration(DELETE_ONLY),
            "feedbackstore-webhook has no webhook for CREATE/UPDATE of "
            "feedbackstores.agents.ctxmesh.ai",
        ),
    ],
    ids=["missing", "forbidden", "only a DELETE entry"],
)
def test_without_an_admission_entry_the_field_checks_are_skipped(found: Any, why: str) -> None:
    head, *rest = registration.check_registration(found, TARGET, {})
    assert (head.level, head.detail) == (Level.FAIL, why)
    assert [r.level for r in rest] == [Level.SKIP] * 5


@pytest.mark.parametrize(
    ("changes", "check", "level", "detail"),
    [
        (
            {"failurePolicy": "Ignore"},
            "failurePolicy",
            Level.FAIL,
            "Ignore: while the webhook is down, FeedbackStores are admitted without it, silently",
        ),
        ({"sideEffects": "NoneOnDryRun"}, "sideEffects", Level.OK, "NoneOnDryRun"),
        (
            {"sideEffects": "Some"},
            "sideEffects",
            Level.FAIL,
            "Some: kube-apiserver refuses dry-run requests "
            "(kubectl --dry-run=server, kubectl diff) for the objects this webhook matches",
        ),
        (
            {"timeoutSeconds": 30},
            "timeoutSeconds",
            Level.WARN,
            "30 s: while the webhook hangs, every FeedbackStore write waits that long",
        ),
        (
            {"timeoutSeconds": 1},
            "timeoutSeconds",
            Level.WARN,
            "1 s: a TLS handshake to a busy pod may not fit; writes then fail",
        ),
        ({"timeoutSeconds": None}, "timeoutSeconds", Level.OK, "10 s"),
        (
            {"admissionReviewVersions": ["v1beta1"]},
            "admissionReviewVersions",
            Level.WARN,
            "v1beta1: v1beta1 only (deprecated); the webhook speaks v1",
        ),
        (
            {"admissionReviewVersions": ["v2"]},
            "admissionReviewVersions",
            Level.FAIL,
            "v2: the webhook speaks v1 and v1beta1 only",
        ),
        (
            {"namespaceSelector": {}},
            "namespaceSelector",
            Level.FAIL,
            "matches kube-system and feedbackstore-system: a broken webhook could block the "
            "repairs there",
        ),
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {"key": NAME_LABEL, "operator": "NotIn", "values": ["kube-system"]}
                    ]
                }
            },
            "namespaceSelector",
            Level.FAIL,
            "matches feedbackstore-system: a broken webhook could block the repairs there",
        ),
        (
            {"namespaceSelector": {"matchLabels": {"team": "a"}}},
            "namespaceSelector",
            Level.OK,
            "leaves out kube-system and feedbackstore-system",
        ),
        (
            {
                "rules": [
                    {**ENTRY["rules"][0], "resources": ["feedbackstores", "feedbackstores/status"]}
                ]
            },
            "webhook-configuration",
            Level.FAIL,
            "feedbackstore-webhook: validate.feedbackstores.agents.ctxmesh.ai also matches "
            "feedbackstores/status, so a webhook outage blocks the status writer",
        ),
    ],
    ids=[
        "failurePolicy Ignore fails",
        "NoneOnDryRun is fine",
        "sideEffects Some fails",
        "a long timeout warns",
        "a very short timeout warns",
        "no timeout means the 10 s default",
        "v1beta1 only warns",
        "no version the webhook speaks fails",
        "an empty selector matches the protected namespaces",
        "a selector leaving out only kube-system",
        "a label selector the system namespaces lack",
        "matching the status subresource blocks the writer",
    ],
)
def test_each_registration_field(
    changes: dict[str, Any], check: str, level: Level, detail: str
) -> None:
    result = by_name(registration.check_registration(configuration(**changes), TARGET, {}))[check]
    assert (result.level, result.detail) == (level, detail)


def test_a_namespace_labelled_into_the_selector_is_seen_by_its_real_labels() -> None:
    changes = {"namespaceSelector": {"matchLabels": {"team": "a"}}}
    namespaces: dict[str, Any] = {"kube-system": {"metadata": {"labels": {"team": "a"}}}}
    result = by_name(registration.check_registration(configuration(**changes), TARGET, namespaces))[
        "namespaceSelector"
    ]
    assert result.detail.startswith("matches kube-system:")


def test_a_delete_only_entry_may_fail_open_and_the_fix_patches_the_right_entry() -> None:
    found = configuration(DELETE_ONLY, ENTRY, failurePolicy="Ignore")
    result = by_name(registration.check_registration(found, TARGET, {}))["failurePolicy"]
    assert result.level is Level.FAIL
    assert result.fix == (
        "kubectl patch validatingwebhookconfiguration feedbackstore-webhook --type=json -p "
        """'[{"op":"replace","path":"/webhooks/1/failurePolicy","value":"Fail"}]'"""
    )
    healthy_too = configuration(DELETE_ONLY, ENTRY)
    assert (
        by_name(registration.check_registration(healthy_too, TARGET, {}))["failurePolicy"].level
        is Level.OK
    )


def test_two_admission_entries_are_each_named_and_the_worst_wins() -> None:
    second = {**ENTRY, "name": "second.example", "timeoutSeconds": 30}
    found = configuration(ENTRY, second)
    result = by_name(registration.check_registration(found, TARGET, {}))["timeoutSeconds"]
    assert result.level is Level.WARN
    assert result.detail == (
        "validate.feedbackstores.agents.ctxmesh.ai: 5 s; "
        "second.example (failurePolicy Fail): 30 s: while the webhook hangs, every FeedbackStore "
        "write waits that long"
    )
    assert "/webhooks/1/timeoutSeconds" in result.fix


@pytest.mark.parametrize(
    ("client", "host", "how"),
    [
        (
            {"service": {"namespace": "ns", "name": "svc", "port": 8443}},
            "svc.ns.svc",
            "Service ns/svc:8443",
        ),
        ({"service": {"namespace": "ns", "name": "svc"}}, "svc.ns.svc", "Service ns/svc:443"),
        (
            {"url": "https://127.0.0.1:9443/validate"},
            "127.0.0.1",
            "https://127.0.0.1:9443/validate",
        ),
        (
            {"url": "https://hooks.example.com/validate"},
            "hooks.example.com",
            "https://hooks.example.com/validate",
        ),
        ({}, "", "no clientConfig"),
    ],
    ids=["service with a port", "service on 443 by default", "url by IP", "url by name", "neither"],
)
def test_the_host_kube_apiserver_dials(client: dict[str, Any], host: str, how: str) -> None:
    assert registration.client_endpoint({"clientConfig": client}) == (host, how)


# -- every entry of the shipped configuration -------------------------------------------

SHIPPED = yaml.safe_load(
    (MANIFESTS / "webhook" / "validatingwebhookconfiguration.yaml").read_text("utf-8")
)


def shipped(ca_pem: bytes | None, *, only: int | None = None) -> dict[str, Any]:
    """The shipped configuration, `ca_pem` in every entry's caBundle (or in entry `only`)."""
    found = copy.deepcopy(SHIPPED)
    for index, entry in enumerate(found["webhooks"]):
        if ca_pem is not None and only in (None, index):
            entry["clientConfig"]["caBundle"] = base64.b64encode(ca_pem).decode()
    return dict(found)


def snapshot_of(configuration: dict[str, Any], secret: Any) -> Snapshot:
    return Snapshot(
        crd=None, configuration=configuration, secret=secret, service=None,
        endpoint_slices=None, lease=None, stores=None, probe=None,
    )  # fmt: skip


def test_every_entry_of_the_shipped_configuration_is_checked_and_agrees(
    service_bundle: Bundle,
) -> None:
    snapshot = snapshot_of(shipped(service_bundle.ca_cert), secret_of(service_bundle))
    found = by_name(run_checks(snapshot, TARGET, NOW))
    assert found["ca-bundle"].detail == (
        'caBundle CA "feedbackstore-webhook CA" verifies "feedbackstore-webhook" (all 3 entries)'
    )
    assert found["certificate-names"].level is Level.OK
    assert found["webhook-configuration"].detail == (
        "feedbackstore-webhook: validate.feedbackstores.agents.ctxmesh.ai -> Service "
        "feedbackstore-system/feedbackstore-webhook:443; and 2 other webhooks, the same way"
    )
    assert found["failurePolicy"].detail == "Fail", "the two Ignore entries may fail open"
    assert found["namespaceSelector"].detail == (
        "leaves out kube-system and feedbackstore-system (all 3 entries)"
    )


def test_a_ca_bundle_in_the_first_entry_only_names_the_two_that_fail_open(
    service_bundle: Bundle,
) -> None:
    """What the old hand patch of /webhooks/0 left: the delete warning and the inline form's
    entries call with the system roots, fail, and let every request through."""
    snapshot = snapshot_of(shipped(service_bundle.ca_cert, only=0), secret_of(service_bundle))
    result = by_name(run_checks(snapshot, TARGET, NOW))["ca-bundle"]
    assert result.level is Level.FAIL
    judge, delete, inline = result.detail.split("; ")
    assert judge.startswith("validate.feedbackstores.agents.ctxmesh.ai: caBundle CA ")
    for part, name in (
        (delete, "warn-delete.feedbackstores"),
        (inline, "validate.agentdeployments"),
    ):
        assert part.startswith(
            f"{name}.agents.ctxmesh.ai (failurePolicy Ignore, fails open): no caBundle"
        ), part
    assert "kubectl apply -k certs/ fills every entry's caBundle" in result.fix


def test_entries_failing_alike_print_once_with_the_fix(service_bundle: Bundle) -> None:
    other = issue_bundle(("x",), now=NOW).ca_cert
    snapshot = snapshot_of(shipped(other), secret_of(service_bundle))
    result = by_name(run_checks(snapshot, TARGET, NOW))["ca-bundle"]
    assert result.level is Level.FAIL
    assert result.detail.endswith("(all 3 entries)")
    assert result.fix.startswith("the Secret's ca.crt signed it")


def test_a_ca_bundle_of_another_ca_in_one_entry_names_it(service_bundle: Bundle) -> None:
    configuration_ = shipped(service_bundle.ca_cert)
    other = issue_bundle(("x",), now=NOW).ca_cert
    configuration_["webhooks"][2]["clientConfig"]["caBundle"] = base64.b64encode(other).decode()
    snapshot = snapshot_of(configuration_, secret_of(service_bundle))
    result = by_name(run_checks(snapshot, TARGET, NOW))["ca-bundle"]
    assert result.level is Level.FAIL
    assert (
        "validate.agentdeployments.agents.ctxmesh.ai (failurePolicy Ignore, fails open): "
        "caBundle" in result.detail
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            {"path": "/validate-agents"},
            "validate.agentdeployments.agents.ctxmesh.ai (failurePolicy Ignore, fails open) calls "
            "Service feedbackstore-system/feedbackstore-webhook:443/validate-agents: the webhook "
            "answers /validate only",
        ),
        (
            {"port": 8443},
            "validate.agentdeployments.agents.ctxmesh.ai (failurePolicy Ignore, fails open) calls "
            "Service feedbackstore-system/feedbackstore-webhook:8443/validate, not Service "
            "feedbackstore-system/feedbackstore-webhook:443/validate as "
            "validate.feedbackstores.agents.ctxmesh.ai does",
        ),
        (
            {"name": "old-webhook"},
            "calls Service feedbackstore-system/old-webhook:443/validate, not",
        ),
    ],
    ids=["another path", "another port", "another Service"],
)
def test_an_entry_calling_elsewhere_fails_naming_it(change: dict[str, Any], said: str) -> None:
    configuration_ = shipped(None)
    configuration_["webhooks"][2]["clientConfig"]["service"].update(change)
    result = registration.check_registration(configuration_, TARGET, {})[0]
    assert result.level is Level.FAIL
    assert said in result.detail


def test_the_selector_of_every_entry_is_checked() -> None:
    configuration_ = shipped(None)
    configuration_["webhooks"][1]["namespaceSelector"] = {}
    result = by_name(registration.check_registration(configuration_, TARGET, {}))[
        "namespaceSelector"
    ]
    assert result.level is Level.FAIL
    assert (
        "warn-delete.feedbackstores.agents.ctxmesh.ai (failurePolicy Ignore, fails open): "
        "matches kube-system and feedbackstore-system" in result.detail
    )


# -- certificates ------------------------------------------------------------------------


def secret_of(
    bundle: Bundle, *, ca: bytes | None = None, cert: bytes | None = None
) -> dict[str, Any]:
    data = {"tls.crt": cert or bundle.cert, "tls.key": bundle.key, "ca.crt": ca or bundle.ca_cert}
    return {"data": {k: base64.b64encode(v).decode() for k, v in data.items()}}


def entry_trusting(ca_pem: bytes | None) -> dict[str, Any]:
    client = copy.deepcopy(ENTRY["clientConfig"])
    if ca_pem is not None:
        client["caBundle"] = base64.b64encode(ca_pem).decode()
    return {**ENTRY, "clientConfig": client}


@pytest.fixture(scope="module")
def service_bundle() -> Bundle:
    return issue_bundle(("feedbackstore-webhook", SERVICE_HOST), now=NOW)


def serving_checks(
    secret: Any, bundle_pem: bytes | None, host: str = SERVICE_HOST, now: dt.datetime = NOW
) -> dict[str, CheckResult]:
    trusted = certificates.ca_bundle(entry_trusting(bundle_pem))
    return by_name(certificates.check_serving(secret, "ns/tls", trusted, host, now))


def test_a_matching_pair_passes_all_three(service_bundle: Bundle) -> None:
    found = serving_checks(secret_of(service_bundle), service_bundle.ca_cert)
    assert {name: r.level for name, r in found.items()} == {
        "ca-bundle": Level.OK,
        "certificate-names": Level.OK,
        "certificate-expiry": Level.OK,
    }
    assert found["ca-bundle"].detail == (
        'caBundle CA "feedbackstore-webhook CA" verifies "feedbackstore-webhook"'
    )
    assert found["certificate-names"].detail == (
        f"valid for {SERVICE_HOST} (feedbackstore-webhook, {SERVICE_HOST})"
    )
    assert found["certificate-expiry"].detail.startswith(
        "serving certificate expires on 2027-06-01"
    )


def test_another_ca_fails_and_points_at_the_secret_s_own_ca(service_bundle: Bundle) -> None:
    other = issue_bundle(("x",), now=NOW).ca_cert
    found = serving_checks(secret_of(service_bundle), other)["ca-bundle"]
    assert found.level is Level.FAIL
    assert "does not verify the serving certificate" in found.detail
    assert "x509: certificate signed by unknown authority" in found.detail
    assert found.fix.startswith("the Secret's ca.crt signed it")


def test_another_ca_everywhere_asks_for_a_reissue(service_bundle: Bundle) -> None:
    other = issue_bundle(("x",), now=NOW).ca_cert
    found = serving_checks(secret_of(service_bundle, ca=other), other)["ca-bundle"]
    assert found.fix.startswith("reissue both from one run")


def test_no_ca_bundle_fails_for_the_secret_s_own_ca_warns_otherwise_and_garbage_fails(
    service_bundle: Bundle,
) -> None:
    """A CA of the Secret's own that signed the pair is no system root: kube-apiserver refuses.
    Without one, the doctor cannot tell what the system roots hold."""
    own_ca = serving_checks(secret_of(service_bundle), None)["ca-bundle"]
    assert own_ca.level is Level.FAIL
    assert "x509: certificate signed by unknown authority" in own_ca.detail
    assert own_ca.fix.startswith("kubectl apply -k certs/ fills every entry's caBundle")
    without_ca = secret_of(service_bundle)
    del without_ca["data"]["ca.crt"]
    assert serving_checks(without_ca, None)["ca-bundle"].level is Level.WARN
    garbage = serving_checks(secret_of(service_bundle), b"not a certificate")["ca-bundle"]
    assert (garbage.level, garbage.detail) == (Level.FAIL, "caBundle holds no PEM certificate")


@pytest.mark.parametrize(
    ("secret", "why"),
    [
        (None, "Secret ns/tls not found"),
        (FORBIDDEN, f"cannot read Secret ns/tls: {FORBIDDEN.reason}"),
        (
            {"data": {"tls.crt": base64.b64encode(b"junk").decode()}},
            "Secret ns/tls has no PEM certificate under tls.crt",
        ),
    ],
    ids=["missing", "forbidden", "no certificate in it"],
)
def test_without_a_serving_certificate_only_the_trust_check_fails(
    service_bundle: Bundle, secret: Any, why: str
) -> None:
    found = serving_checks(secret, service_bundle.ca_cert)
    assert (found["ca-bundle"].level, found["ca-bundle"].detail) == (Level.FAIL, why)
    assert found["certificate-names"].level is Level.SKIP
    assert found["certificate-expiry"].level is Level.SKIP


def leaf_for(
    names: list[x509.GeneralName] | None, common_name: str = "webhook"
) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")]))
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(NOW)
        .not_valid_after(NOW + dt.timedelta(days=1))
    )
    if names is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(key, hashes.SHA256())


def ip(text: str) -> x509.GeneralName:
    import ipaddress

    return x509.IPAddress(ipaddress.ip_address(text))


# Go's crypto/x509 HostnameError for an IP host and a certificate without IP SANs.
NO_IP_SANS = (
    "x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs"
)


@pytest.mark.parametrize(
    ("names", "host", "go_error"),
    [
        ([x509.DNSName(SERVICE_HOST)], SERVICE_HOST, None),
        ([x509.DNSName("*.feedbackstore-system.svc")], SERVICE_HOST, None),
        (
            [x509.DNSName("*.svc")],
            SERVICE_HOST,
            f"x509: certificate is valid for *.svc, not {SERVICE_HOST}",
        ),
        (
            [x509.DNSName("feedbackstore-webhook.other.svc"), x509.DNSName("b")],
            SERVICE_HOST,
            "x509: certificate is valid for feedbackstore-webhook.other.svc, b, "
            f"not {SERVICE_HOST}",
        ),
        ([ip("127.0.0.1")], "127.0.0.1", None),
        (
            [x509.DNSName("localhost")],
            "127.0.0.1",
            NO_IP_SANS,
        ),
        (
            [x509.DNSName("127.0.0.1")],
            "127.0.0.1",
            NO_IP_SANS,
        ),
        (
            [ip("10.0.0.1"), ip("10.0.0.2")],
            "127.0.0.1",
            "x509: certificate is valid for 10.0.0.1, 10.0.0.2, not 127.0.0.1",
        ),
        (
            [ip("10.0.0.1")],
            SERVICE_HOST,
            f"x509: certificate is not valid for any names, but wanted to match {SERVICE_HOST}",
        ),
        (
            None,
            SERVICE_HOST,
            f"x509: certificate is not valid for any names, but wanted to match {SERVICE_HOST}",
        ),
    ],
    ids=[
        "exact DNS name",
        "wildcard for one label",
        "wildcard for two labels does not match",
        "other DNS names",
        "IP SAN",
        "DNS-only certificate for an IP host",
        "an IP written as a DNS name is not an IP SAN",
        "other IP SANs",
        "IP-only certificate for a DNS host",
        "no SANs at all",
    ],
)
def test_host_names_matched_as_go_matches_them(
    names: list[x509.GeneralName] | None, host: str, go_error: str | None
) -> None:
    leaf = leaf_for(names)
    assert certificates.hostname_error(leaf, host) == go_error
    result = certificates.check_names(leaf, host)
    if go_error is None:
        assert result.level is Level.OK
    else:
        assert (result.level, result.detail) == (
            Level.FAIL,
            f"not valid for {host}; kube-apiserver answers '{go_error}'",
        )


def test_a_common_name_alone_gets_go_s_legacy_message() -> None:
    leaf = leaf_for(None, common_name=SERVICE_HOST)
    assert certificates.hostname_error(leaf, SERVICE_HOST) == (
        "x509: certificate relies on legacy Common Name field, use SANs instead"
    )


@pytest.mark.parametrize(
    ("issued_days_ago", "days", "level", "text"),
    [
        (0, 365, Level.OK, "serving certificate expires on 2027-06-01 11:55 UTC, in 364 days"),
        (0, 30, Level.WARN, "serving certificate expires on 2026-07-01 11:55 UTC, in 29 days"),
        (0, 10, Level.WARN, "serving certificate expires on 2026-06-11 11:55 UTC, in 9 days"),
        (
            40,
            30,
            Level.FAIL,
            "serving certificate expired on 2026-05-22 11:55 UTC: kube-apiserver answers "
            "'x509: certificate has expired or is not yet valid'",
        ),
        (-2, 30, Level.FAIL, '"webhook" is not valid before 2026-06-03 11:55 UTC (clock skew?)'),
    ],
    ids=["a year left", "29 days left warns", "10 days left warns", "expired", "not yet valid"],
)
def test_days_to_expiry(issued_days_ago: int, days: int, level: Level, text: str) -> None:
    bundle = issue_bundle(("webhook",), days=days, now=NOW - dt.timedelta(days=issued_days_ago))
    chain = load_certificates(bundle.cert)
    roots = load_certificates(bundle.ca_cert)
    result = certificates.check_expiry(chain, roots, NOW)
    assert (result.level, result.detail) == (level, text)


def test_a_ca_that_ends_before_the_leaf_is_the_one_named() -> None:
    authority = issue_authority(days=20, now=NOW)
    key = ec.generate_private_key(ec.SECP256R1())
    outliving = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "webhook")]))
        .issuer_name(authority.cert.subject)
        .public_key(key.public_key())
        .serial_number(3)
        .not_valid_before(NOW - dt.timedelta(days=1))
        .not_valid_after(NOW + dt.timedelta(days=365))
        .sign(authority.key, hashes.SHA256())
    )
    result = certificates.check_expiry([outliving], [authority.cert], NOW)
    assert (result.level, result.detail) == (
        Level.WARN,
        'CA "feedbackstore-webhook CA" expires on 2026-06-21 11:55 UTC, in 19 days',
    )


def intermediate_chain() -> tuple[Authority, x509.Certificate, Bundle]:
    """root -> intermediate (a CA) -> leaf, the way cert-manager can serve a chain."""
    root = issue_authority(now=NOW)
    key = ec.generate_private_key(ec.SECP256R1())
    ski = root.cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    middle = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "intermediate")]))
        .issuer_name(root.cert.subject)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(NOW - dt.timedelta(days=1))
        .not_valid_after(NOW + dt.timedelta(days=100))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), False)
        .sign(root.key, hashes.SHA256())
    )
    leaf = issue_serving(Authority(middle, key), (SERVICE_HOST,), now=NOW, common_name="webhook")
    return root, middle, leaf


def test_a_chain_through_an_intermediate_verifies_and_its_end_counts() -> None:
    root, middle, leaf = intermediate_chain()
    from cryptography.hazmat.primitives import serialization

    served = leaf.cert + middle.public_bytes(serialization.Encoding.PEM)
    root_pem = root.cert.public_bytes(serialization.Encoding.PEM)
    found = serving_checks(secret_of(leaf, cert=served, ca=root_pem), root_pem)
    assert found["ca-bundle"].detail == 'caBundle CA "feedbackstore-webhook CA" verifies "webhook"'
    assert found["certificate-expiry"].level is Level.OK
    without_middle = serving_checks(secret_of(leaf, ca=root_pem), root_pem)["ca-bundle"]
    assert without_middle.level is Level.FAIL


# -- endpoints, Lease, stores ------------------------------------------------------------


def endpoint_slice(*ready: bool | None) -> dict[str, Any]:
    endpoints = []
    for number, state in enumerate(ready):
        conditions = {} if state is None else {"ready": state}
        endpoints.append({"addresses": [f"10.0.0.{number + 1}"], "conditions": conditions})
    return {"endpoints": endpoints}


@pytest.mark.parametrize(
    ("service", "slices", "level", "detail"),
    [
        (
            {},
            [endpoint_slice(True, None)],
            Level.OK,
            "Service ns/svc: 2 ready (10.0.0.1, 10.0.0.2)",
        ),
        (
            {},
            [endpoint_slice(False), endpoint_slice(False)],
            Level.FAIL,
            "Service ns/svc has no ready endpoints (2 not ready: pods not Ready)",
        ),
        (
            {},
            [],
            Level.FAIL,
            "Service ns/svc has no ready endpoints (0 not ready: no pods selected)",
        ),
        (None, [], Level.FAIL, "Service ns/svc not found"),
        (FORBIDDEN, [], Level.FAIL, f"cannot read Service ns/svc: {FORBIDDEN.reason}"),
        ({}, FORBIDDEN, Level.FAIL, f"cannot list EndpointSlices: {FORBIDDEN.reason}"),
    ],
    ids=[
        "ready and unknown count as ready",
        "none ready",
        "no endpoints",
        "no Service",
        "Service forbidden",
        "slices forbidden",
    ],
)
def test_service_endpoints(service: Any, slices: Any, level: Level, detail: str) -> None:
    result = check_endpoints(service, slices, "ns/svc")
    assert (result.level, result.detail) == (level, detail)


def test_many_endpoints_are_counted_not_all_listed() -> None:
    result = check_endpoints({}, [endpoint_slice(*[True] * 7)], "ns/svc", "why this one")
    assert result.detail == (
        "Service ns/svc: 7 ready (10.0.0.1, 10.0.0.2, 10.0.0.3, 10.0.0.4, 10.0.0.5 and 2 more) "
        "(why this one)"
    )


def lease(
    holder: str = "writer-0_1", renewed: dt.datetime | None = NOW, duration: int = 15
) -> dict[str, Any]:
    spec: dict[str, Any] = {"holderIdentity": holder, "leaseDurationSeconds": duration}
    if renewed is not None:
        spec["renewTime"] = renewed.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return {"metadata": {"resourceVersion": "1"}, "spec": spec}


@pytest.mark.parametrize(
    ("found", "level", "detail"),
    [
        (
            lease(renewed=NOW - dt.timedelta(seconds=3)),
            Level.OK,
            "held by writer-0_1, renewed 3 s ago, lapses in 12 s unless renewed",
        ),
        (
            lease(renewed=NOW + dt.timedelta(seconds=2)),
            Level.OK,
            "held by writer-0_1, renewed 2 s in the future (clock skew), lapses in 17 s unless "
            "renewed",
        ),
        (
            lease(renewed=NOW - dt.timedelta(seconds=15)),
            Level.FAIL,
            "Lease ns/lease held by writer-0_1, last renewed 15 s ago, lapsed 0 s ago: "
            "the leader stopped renewing",
        ),
        (
            lease(renewed=NOW - dt.timedelta(seconds=16)),
            Level.FAIL,
            "Lease ns/lease held by writer-0_1, last renewed 16 s ago, lapsed 1 s ago: "
            "the leader stopped renewing",
        ),
        (
            lease(renewed=NOW - dt.timedelta(hours=3)),
            Level.FAIL,
            "Lease ns/lease held by writer-0_1, last renewed 3 h ago, lapsed 3 h ago: "
            "the leader stopped renewing",
        ),
        (
            {"spec": {"holderIdentity": "writer-0_1", "renewTime": "2026-06-01T11:59:50.000000Z"}},
            Level.OK,
            "held by writer-0_1, renewed 10 s ago, lapses in 5 s unless renewed",
        ),
        (lease(holder=""), Level.FAIL, "Lease ns/lease is released: no status writer leads"),
        (lease(renewed=None), Level.FAIL, "Lease ns/lease held by writer-0_1 was never renewed"),
        (None, Level.FAIL, "Lease ns/lease not found: no status writer has ever led"),
        (FORBIDDEN, Level.FAIL, f"cannot read Lease ns/lease: {FORBIDDEN.reason}"),
    ],
    ids=[
        "fresh",
        "ahead of our clock",
        "lapsed the moment its duration is up, as cleanup judges it",
        "just past its duration",
        "hours old",
        "without a duration: the writer's own default",
        "released",
        "never renewed",
        "missing",
        "forbidden",
    ],
)
def test_the_status_writer_lease(found: Any, level: Level, detail: str) -> None:
    result = check_lease(found, "ns/lease", NOW)
    assert (result.level, result.detail) == (level, detail)


def store(name: str, generation: int, condition: dict[str, Any] | None) -> dict[str, Any]:
    body: dict[str, Any] = {"metadata": {"namespace": "ns", "name": name, "generation": generation}}
    if condition is not None:
        body["status"] = {"conditions": [{"type": "Ready", "status": "True"}, condition]}
    return body


def validated(status: str = "True", observed: int | None = 1) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": "Validated", "status": status}
    if observed is not None:
        condition["observedGeneration"] = observed
    return condition


def stalled(status: str = "False", observed: int | None = 1) -> dict[str, Any]:
    """The status writer's own condition: `True` when the spec is invalid."""
    return {**validated(status, observed), "type": "Stalled"}


@pytest.mark.parametrize(
    ("stores", "level", "detail"),
    [
        (
            [store("a", 1, stalled()), store("b", 3, stalled(observed=3))],
            Level.OK,
            "2 FeedbackStores in all namespaces, every Stalled current",
        ),
        ([], Level.OK, "0 FeedbackStores in all namespaces, every Stalled current"),
        (
            [
                store("a", 1, None),
                store("b", 2, stalled()),
                store("c", 1, stalled(observed=None)),
            ],
            Level.FAIL,
            "3 FeedbackStores in all namespaces: 1 without Stalled (ns/a); "
            "2 stale: observedGeneration < generation (ns/b, ns/c)",
        ),
        (
            [store("a", 1, stalled("True"))],
            Level.WARN,
            "1 FeedbackStore in all namespaces, all current; 1 invalid, Stalled=True (ns/a)",
        ),
        (
            [store(f"s{n}", 1, None) for n in range(7)],
            Level.FAIL,
            "7 FeedbackStores in all namespaces: 7 without Stalled "
            "(ns/s0, ns/s1, ns/s2, ns/s3, ns/s4 and 2 more)",
        ),
        (
            [
                store("a", 2, validated("True", observed=2))
                | {
                    "status": {
                        "conditions": [validated("True", observed=2), stalled("True", observed=2)]
                    }
                }
            ],
            Level.WARN,
            "1 FeedbackStore in all namespaces, all current; 1 invalid, Stalled=True (ns/a)",
        ),
        (
            [
                store("a", 3, None)
                | {
                    "status": {
                        "conditions": [validated("False", observed=3), stalled("False", observed=2)]
                    }
                }
            ],
            Level.FAIL,
            "1 FeedbackStore in all namespaces: 1 stale: observedGeneration < generation (ns/a)",
        ),
        (
            [store("a", 1, validated("False"))],
            Level.FAIL,
            "1 FeedbackStore in all namespaces: 1 without Stalled (ns/a)",
        ),
    ],
    ids=[
        "all current",
        "none at all",
        "missing and stale",
        "current but invalid warns",
        "many are counted, a few named",
        "invalid by our Stalled though the platform's Validated says True",
        "stale by our Stalled though the platform's Validated is current",
        "the platform's Validated alone is no verdict of ours",
    ],
)
def test_store_conditions(stores: list[dict[str, Any]], level: Level, detail: str) -> None:
    result = check_stores(stores, "in all namespaces", "feedbackstore-system")
    assert (result.level, result.detail) == (level, detail)


def test_store_conditions_point_at_the_writers_logs_in_the_components_namespace() -> None:
    result = check_stores([store("a", 1, None)], "in all namespaces", "platform-system")
    assert "kubectl -n platform-system logs deploy/feedbackstore-status-writer" in result.fix


def test_store_conditions_unreadable_or_not_listed() -> None:
    assert check_stores(FORBIDDEN, "x", "ns").level is Level.FAIL
    assert check_stores(None, "x", "ns").level is Level.SKIP


def written_by(name: str, *managers: str) -> dict[str, Any]:
    """A store whose `Validated` (second of its conditions) has these managers besides ours."""
    body = store(name, 1, validated("False"))
    entries = [("feedbackstore-status-writer", "Apply"), *((m, "Update") for m in managers)]
    body["metadata"]["managedFields"] = [
        {
            "manager": manager,
            "operation": operation,
            "subresource": "status",
            "fieldsV1": {
                "f:status": {"f:conditions": {'k:{"type":"Validated"}': {"f:message": {}}}}
            },
        }
        for manager, operation in entries
    ]
    return body


def test_only_our_writer_writing_validated_is_ok() -> None:
    result = check_validated_writers([written_by("a"), store("b", 1, None)])
    assert (result.level, result.detail) == (
        Level.OK,
        "no field manager but feedbackstore-status-writer writes Validated",
    )


def test_a_second_writer_of_validated_is_named_with_its_stores_and_the_fix() -> None:
    stores = [
        written_by("a", "ctxmesh-operator"),
        written_by("b", "ctxmesh-operator", "kubectl"),
        written_by("c"),
    ]
    result = check_validated_writers(stores)
    assert (result.level, result.detail) == (
        Level.WARN,
        "Validated is also written by ctxmesh-operator on 2 FeedbackStores (ns/a, ns/b); "
        "kubectl on 1 FeedbackStore (ns/b): the status writer leaves it to them and keeps every "
        "problem in Stalled",
    )
    assert result.fix == (
        "if that is the platform's operator, nothing to fix: its Validated says its first "
        "problem (kubectl describe fs NAME -n NS shows every one under Stalled); else stop that "
        "controller and give Validated back to the status writer, e.g. kubectl -n ns patch fs a "
        "--subresource=status --type=json -p "
        """'[{"op":"test","path":"/status/conditions/1/type","value":"Validated"},"""
        """{"op":"remove","path":"/status/conditions/1"}]'"""
    )


def test_the_hand_back_command_points_at_validated_wherever_it_is() -> None:
    body = written_by("a", "x")
    body["status"]["conditions"].reverse()
    assert '"path":"/status/conditions/0"}' in hand_back_command(body)


def test_validated_writers_unreadable_or_not_listed_is_skipped() -> None:
    assert check_validated_writers(FORBIDDEN).level is Level.SKIP
    assert check_validated_writers(None).level is Level.SKIP


# -- the dry-run probe -------------------------------------------------------------------

# What the webhook says of a store in Monitor mode, as kube-apiserver relays it.
WEBHOOK_WARNING = (
    "spec.mode: Monitor relays undeclared score names instead of rejecting them (422); "
    "use only to migrate"
)


def test_the_probe_is_a_valid_monitor_store_that_only_the_webhook_warns_about() -> None:
    assert probe_store("ns") == {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": "feedbackstore-doctor-probe", "namespace": "ns"},
        "spec": {"mode": "Monitor", "human": {"scores": [{"name": "doctor-probe"}]}},
    }
    assert expected_warnings() == (WEBHOOK_WARNING,)


@pytest.mark.parametrize(
    ("outcome", "selected", "level", "detail", "fix_starts"),
    [
        (
            ProbeOutcome(201, (WEBHOOK_WARNING,)),
            True,
            Level.OK,
            "dry-run create in namespace p: kube-apiserver called the webhook, which warned as "
            "expected",
            "",
        ),
        (
            ProbeOutcome(201, ("something else",)),
            False,
            Level.FAIL,
            "dry-run create in namespace p was admitted without the webhook's warning: it was not "
            "called",
            "the namespaceSelector does not match namespace p",
        ),
        (
            ProbeOutcome(201),
            True,
            Level.FAIL,
            "dry-run create in namespace p was admitted without the webhook's warning: it was not "
            "called",
            "with failurePolicy Ignore a failed call is silent",
        ),
        (
            ProbeOutcome(201),
            None,
            Level.FAIL,
            "dry-run create in namespace p was admitted without the webhook's warning: it was not "
            "called",
            "kube-apiserver has no registration of ours to call",
        ),
        (
            ProbeOutcome(
                500,
                (),
                'Internal error occurred: failed calling webhook "v": dial tcp: '
                "connect: connection refused",
            ),
            True,
            Level.FAIL,
            'dry-run create in namespace p: Internal error occurred: failed calling webhook "v": '
            "dial tcp: connect: connection refused",
            "kube-apiserver's own words",
        ),
        (
            ProbeOutcome(404, (), 'namespaces "p" not found'),
            None,
            Level.FAIL,
            'dry-run create in namespace p: namespaces "p" not found',
            "pass --probe-namespace",
        ),
        (
            ProbeOutcome(403, (), "forbidden"),
            None,
            Level.FAIL,
            "dry-run create in namespace p: HTTP 403: forbidden",
            "check kube-apiserver",
        ),
        (
            ProbeOutcome(None, (), "ReadTimeoutError"),
            None,
            Level.FAIL,
            "dry-run create in namespace p: no answer from kube-apiserver: ReadTimeoutError",
            "check kube-apiserver",
        ),
    ],
    ids=[
        "the webhook's warning came back",
        "not called: selector does not match",
        "not called: maybe failing open",
        "not called: no registration",
        "the call failed",
        "no such namespace",
        "forbidden",
        "no answer",
    ],
)
def test_the_dry_run_probe(
    outcome: ProbeOutcome, selected: bool | None, level: Level, detail: str, fix_starts: str
) -> None:
    result = check_probe(outcome, "p", selected)
    assert (result.level, result.detail) == (level, detail)
    assert result.fix.startswith(fix_starts)


def test_no_probe_without_the_api() -> None:
    assert check_probe(None, "p", None).level is Level.SKIP


class Headers:
    def __init__(self, *values: str) -> None:
        self.values = list(values)

    def getlist(self, name: str) -> list[str]:
        assert name == "Warning"
        return self.values


def test_warning_headers_are_unquoted_as_kube_apiserver_quotes_them() -> None:
    headers = Headers('299 - "spec.mode: Monitor \\"accepts\\" names"', '299 - "a, b", 299 - "c"')
    assert _warnings(headers) == ('spec.mode: Monitor "accepts" names', "a, b", "c")
    assert _warnings(None) == ()


# -- results, rendering, the whole run ---------------------------------------------------


def test_warnings_and_skips_alone_are_healthy() -> None:
    assert healthy([ok("a", ""), warn("b", "", ""), skip("c", "")])
    assert not healthy([ok("a", ""), fail("b", "", "")])


def test_combine_keeps_the_worst_and_its_fix() -> None:
    combined = combine("x", [("one", ok("x", "fine")), ("two", fail("x", "bad", "do this"))])
    assert (combined.level, combined.detail, combined.fix) == (
        Level.FAIL,
        "one: fine; two: bad",
        "do this",
    )


def test_text_puts_the_fix_under_a_failure_and_ends_with_a_summary() -> None:
    text = as_text([ok("crd", "fine"), fail("lease", "gone", "start it"), skip("x", "y")])
    assert text.splitlines() == [
        "ok    crd                      fine",
        "FAIL  lease                    gone",
        "                               fix: start it",
        "skip  x                        not checked: y",
        "3 checks: 1 ok, 0 warnings, 1 failed, 1 skipped — something is wrong",
    ]


def test_json_lists_every_check() -> None:
    assert as_json([warn("a", "soon", "renew")]) == {
        "healthy": True,
        "summary": {"ok": 0, "warn": 1, "fail": 0, "skip": 0},
        "checks": [{"name": "a", "status": "warn", "detail": "soon", "fix": "renew"}],
    }


def test_a_url_registration_checks_the_service_it_was_told_about() -> None:
    by_url = configuration(clientConfig={"url": "https://127.0.0.1:9443/validate"})
    assert service_ref(by_url, TARGET) == (
        "feedbackstore-system",
        "feedbackstore-webhook",
        "unused by a url: registration",
    )
    moved = configuration(clientConfig={"service": {"namespace": "x", "name": "y"}})
    assert service_ref(moved, TARGET) == ("x", "y", "")
    assert service_ref(None, TARGET) == ("feedbackstore-system", "feedbackstore-webhook", "")


def test_a_whole_healthy_snapshot(service_bundle: Bundle) -> None:
    found = configuration()
    found["webhooks"][0]["clientConfig"]["caBundle"] = base64.b64encode(
        service_bundle.ca_cert
    ).decode()
    snapshot = Snapshot(
        crd=crd(),
        configuration=found,
        secret=secret_of(service_bundle),
        service={},
        endpoint_slices=[endpoint_slice(True)],
        lease=lease(),
        stores=[store("a", 1, None) | {"status": {"conditions": [validated(), stalled()]}}],
        probe=ProbeOutcome(201, (WEBHOOK_WARNING,)),
        agents=[inline_agent("a", VALID)],
    )
    results = run_checks(snapshot, TARGET, NOW)
    assert [(r.name, r.level) for r in results] == [(name, Level.OK) for name in EVERY_CHECK]


def test_flags_left_out_take_the_shipped_names() -> None:
    from webhook.cli.doctor import target_from
    from webhook.cli.main import build_parser

    shipped = target_from(build_parser().parse_args(["doctor"]))
    assert shipped == Target()
    assert (shipped.namespace, shipped.webhook_configuration, shipped.secret) == (
        "feedbackstore-system",
        "feedbackstore-webhook",
        "feedbackstore-webhook-tls",
    )
    moved = target_from(
        build_parser().parse_args(
            ["doctor", "--namespace", "ops", "--lease", "l", "--store-namespace", "team"]
        )
    )
    assert moved == Target(namespace="ops", lease="l", store_namespace="team")


# -- held-deletions: stores our finalizer keeps in Terminating ---------------

FINALIZER = "agents.ctxmesh.ai/in-use-protection"


def terminating(
    name: str,
    *,
    finalizers: tuple[str, ...] = (FINALIZER,),
    in_use: str | None = "DeletionDeferred",
) -> dict[str, Any]:
    body = store(name, 1, validated())
    body["metadata"]["deletionTimestamp"] = "2026-06-01T11:00:00Z"
    body["metadata"]["finalizers"] = list(finalizers)
    if in_use is not None:
        body["status"]["conditions"].append({"type": "InUse", "status": "True", "reason": in_use})
    return body


@pytest.mark.parametrize(
    ("stores", "writer_leads", "level", "detail"),
    [
        pytest.param(
            [store("a", 1, validated())],
            True,
            Level.OK,
            "no FeedbackStore held in Terminating by agents.ctxmesh.ai/in-use-protection",
            id="nothing is being deleted",
        ),
        pytest.param(
            [terminating("a", finalizers=("example.com/other",))],
            False,
            Level.OK,
            "no FeedbackStore held in Terminating by agents.ctxmesh.ai/in-use-protection",
            id="another finalizer is not ours to judge",
        ),
        pytest.param(
            [terminating("a")],
            True,
            Level.WARN,
            "1 FeedbackStore Terminating until their agents let go: ns/a",
            id="held while agents reference it: the feature working",
        ),
        pytest.param(
            [terminating("a"), terminating("b")],
            False,
            Level.FAIL,
            "2 FeedbackStores Terminating with agents.ctxmesh.ai/in-use-protection and "
            "no status writer leading to release them: ns/a, ns/b",
            id="held with no writer leading: nobody will release them",
        ),
        pytest.param(
            [terminating("a", in_use="NotReferenced")],
            True,
            Level.FAIL,
            "1 FeedbackStore no longer referenced but still held: ns/a",
            id="the writer says not in use yet the finalizer stays",
        ),
    ],
)
def test_stores_held_by_in_use_protection(
    stores: list[dict[str, Any]], writer_leads: bool, level: Level, detail: str
) -> None:
    result = check_held(stores, writer_leads=writer_leads, lease=SHIPPED_LEASE)
    assert (result.name, result.level, result.detail) == ("held-deletions", level, detail)
    assert (result.fix != "") is (level is not Level.OK)


def test_a_store_the_leading_writer_fails_to_release_gets_a_patch_of_our_finalizer_alone() -> None:
    """`cleanup` refuses while a writer leads: the way out is this one store's finalizer."""
    held = terminating("a", finalizers=("example.com/other", FINALIZER), in_use="NotReferenced")
    assert remove_command(held) == (
        "kubectl -n ns patch fs a --type=json -p '["
        '{"op":"test","path":"/metadata/finalizers/1","value":"agents.ctxmesh.ai/in-use-protection"},'
        '{"op":"remove","path":"/metadata/finalizers/1"}]\''
    )
    result = check_held([held], writer_leads=True, lease=SHIPPED_LEASE)
    assert remove_command(held) in result.fix
    assert "cleanup" not in result.fix


def holding_ours(store: dict[str, Any], *managers: str) -> dict[str, Any]:
    """`store` with our finalizer's entry owned by each of `managers`' applies."""
    store["metadata"]["managedFields"] = [
        {
            "manager": manager,
            "operation": "Apply",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:finalizers": {f'v:"{FINALIZER}"': {}}}},
        }
        for manager in managers
    ]
    return store


WRITER = "feedbackstore-status-writer"


@pytest.mark.parametrize(
    ("lease_at", "command"),
    [
        pytest.param(SHIPPED_LEASE, "feedbackstore-webhook cleanup", id="the shipped Lease"),
        pytest.param(
            ("ops", "writer"),
            "feedbackstore-webhook cleanup --lease-namespace ops --lease-name writer",
            id="a Lease elsewhere is named",
        ),
    ],
)
def test_held_by_the_writer_s_finalizer_with_no_writer_leading_points_at_cleanup(
    lease_at: tuple[str, str], command: str
) -> None:
    from webhook.cli.cleanup import CleanupSettings
    from webhook.cli.flags import settings_from
    from webhook.cli.main import build_parser

    held = holding_ours(terminating("a", finalizers=("example.com/other", FINALIZER)), WRITER)
    result = check_held([held], writer_leads=False, lease=lease_at)
    assert result.level is Level.FAIL
    assert result.fix == (
        "start the status writer again (see status-writer-lease); if it is gone for good: "
        f"run {command}, which takes the writer's finalizer and conditions off every "
        "FeedbackStore (docs/install.md, Uninstall)"
    )
    parsed = build_parser().parse_args(shlex.split(command)[1:])
    settings = settings_from(CleanupSettings, parsed)
    assert (settings.lease_namespace, settings.lease_name) == lease_at


def test_a_finalizer_not_the_writer_s_alone_which_cleanup_leaves_gets_a_patch() -> None:
    shared = holding_ours(terminating("b"), WRITER, "platform-operator")
    held = [holding_ours(terminating("a"), WRITER), shared, terminating("c")]
    result = check_held(held, writer_leads=False, lease=SHIPPED_LEASE)
    assert result.fix == (
        "start the status writer again (see status-writer-lease); if it is gone for good: "
        "run feedbackstore-webhook cleanup, which takes the writer's finalizer and conditions "
        "off every FeedbackStore (docs/install.md, Uninstall); 2 FeedbackStores whose finalizer "
        "is not the writer's alone, which cleanup leaves (ns/b, ns/c): where no agent needs the "
        f"store, remove ours alone, e.g. {remove_command(shared)}"
    )


def test_held_deletions_are_judged_with_the_lease_check_s_answer() -> None:
    snapshot = Snapshot(
        crd=crd(),
        configuration=None,
        secret=None,
        service=None,
        endpoint_slices=[],
        lease=lease(renewed=NOW - dt.timedelta(hours=1)),
        stores=[terminating("a")],
        probe=None,
    )
    by_name = {r.name: r for r in run_checks(snapshot, TARGET, NOW)}
    assert by_name["status-writer-lease"].level is Level.FAIL
    assert by_name["held-deletions"].level is Level.FAIL


def test_unlisted_stores_skip_the_held_check() -> None:
    held = check_held(Unreadable("forbidden"), writer_leads=True, lease=SHIPPED_LEASE)
    assert held.level is Level.SKIP


# -- inline-declarations: AgentDeployments whose spec.feedback is invalid -----

DUPLICATE_INLINE = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}


def inline_agent(name: str, feedback: object = None, **spec: object) -> dict[str, Any]:
    body = {**spec, **({"feedback": feedback} if feedback is not None else {})}
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "AgentDeployment",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": body,
    }


@pytest.mark.parametrize(
    ("agents", "level", "detail"),
    [
        pytest.param(
            [inline_agent("a", VALID), inline_agent("b", feedbackStoreRef="s")],
            Level.OK,
            "1 AgentDeployment with spec.feedback in all namespaces, every declaration valid",
            id="valid declarations; a reference is not judged",
        ),
        pytest.param(
            [inline_agent("a", DUPLICATE_INLINE), inline_agent("b", VALID)],
            Level.WARN,
            "2 AgentDeployments with spec.feedback in all namespaces; 1 "
            "invalid: ns/a (spec.feedback.human.scores[1].name: Duplicate value: "
            '"thumbs": human score names must be unique (first declared at '
            "spec.feedback.human.scores[0].name))",
            id="an invalid declaration is named with its first problem",
        ),
        pytest.param(
            [inline_agent(f"a{i}", {"mode": "x"}) for i in range(7)],
            Level.WARN,
            "7 AgentDeployments with spec.feedback in all namespaces; 7 invalid: "
            + ", ".join(
                f'ns/a{i} (spec.feedback.mode: Unsupported value: "x": '
                'supported values: "Enforce", "Monitor")'
                for i in range(5)
            )
            + " and 2 more",
            id="past five, the rest are counted",
        ),
        pytest.param(
            None,
            Level.OK,
            "no AgentDeployment resource is served: nothing declared inline",
            id="no AgentDeployment resource: nothing can be declared, all is well",
        ),
        pytest.param(
            Unreadable("forbidden"),
            Level.FAIL,
            "cannot list AgentDeployments: forbidden",
            id="a refusal is a failure",
        ),
    ],
)
def test_invalid_inline_declarations_are_listed(agents: Any, level: Level, detail: str) -> None:
    result = check_inline(agents, "in all namespaces")
    assert (result.name, result.level, result.detail) == ("inline-declarations", level, detail)
    assert (result.fix != "") is (level in (Level.WARN, Level.FAIL))
