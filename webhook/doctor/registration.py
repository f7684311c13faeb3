"""The ValidatingWebhookConfiguration: present, and set up as manifests/ ships it. Only entries that
validate CREATE or UPDATE of FeedbackStores are held to it, the worst reported: a DELETE-only entry
(in-use warnings) may rightly fail open."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final

from webhook.admission.envelope import CREATE, UPDATE
from webhook.doctor.result import CheckResult, Level, combine, fail, ok, refused, skip
from webhook.doctor.snapshot import KUBE_SYSTEM, NAMESPACE_NAME_LABEL, Fetched, Target, Unreadable
from webhook.kube.objects import metadata_of
from webhook.rules import api

REGISTRATION: Final = "webhook-configuration"

# kube-apiserver's own default is 10 s; past it every FeedbackStore write hangs that long
# while the webhook is down; under 2 s a TLS handshake to a busy pod may not make it.
MAX_TIMEOUT: Final = 10
MIN_TIMEOUT: Final = 2
DEFAULT_TIMEOUT: Final = 10

# (level, detail, fix); a fix may hold <NAME> and <INDEX>, filled in per entry.
Verdict = tuple[Level, str, str]
Judge = Callable[[dict[str, Any]], Verdict]
Entry = tuple[int, dict[str, Any]]


def admission_entries(configuration: Fetched) -> list[Entry]:
    """(index, webhook) for each webhook that validates CREATE or UPDATE of FeedbackStores."""
    webhooks = configuration.get("webhooks") if isinstance(configuration, dict) else None
    return [
        (index, entry)
        for index, entry in enumerate(webhooks if isinstance(webhooks, list) else ())
        if isinstance(entry, dict) and any(_writes_feedbackstores(r) for r in _rules(entry))
    ]


def check_registration(
    configuration: Fetched, target: Target, namespaces: Mapping[str, Fetched]
) -> list[CheckResult]:
    name = target.webhook_configuration
    verdicts: dict[str, Judge] = {
        "failurePolicy": _failure_policy,
        "sideEffects": _side_effects,
        "timeoutSeconds": _timeout,
        "admissionReviewVersions": _review_versions,
        "namespaceSelector": _selector_verdict(target, namespaces),
    }
    if isinstance(configuration, Unreadable):
        needs = "get on validatingwebhookconfigurations"
        head = refused(REGISTRATION, f"read {name}", configuration, needs)
        why = "webhook configuration unreadable"
    elif configuration is None:
        head = fail(
            REGISTRATION,
            f"ValidatingWebhookConfiguration {name} not found",
            "reapply your install (kubectl apply -k certs/, or manifests/cert-manager/); "
            "kubectl get validatingwebhookconfigurations lists what is there",
        )
        why = "no webhook configuration"
    elif entries := admission_entries(configuration):
        combined = (_combined(check, name, entries, v) for check, v in verdicts.items())
        return [_registration_result(name, entries), *combined]
    else:
        head = fail(
            REGISTRATION,
            f"{name} has no webhook for CREATE/UPDATE of {api.CRD_NAME}",
            "reapply manifests/webhook/validatingwebhookconfiguration.yaml",
        )
        why = "no webhook entry to check"
    return [head, *(skip(check, why) for check in verdicts)]


def client_endpoint(entry: dict[str, Any]) -> tuple[str, str]:
    """(host the certificate must name, how kube-apiserver dials it: `service:` as NAME.NS.svc)."""
    service = client_config(entry, "service")
    if isinstance(service, dict):
        host = f"{service.get('name')}.{service.get('namespace')}.svc"
        port = service.get("port") or 443
        return host, f"Service {service.get('namespace')}/{service.get('name')}:{port}"
    url = client_config(entry, "url")
    if isinstance(url, str):
        return urllib.parse.urlsplit(url).hostname or "", url
    return "", "no clientConfig"


def client_config(entry: dict[str, Any], key: str) -> object:
    config = entry.get("clientConfig")
    return config.get(key) if isinstance(config, dict) else None


def _rules(entry: dict[str, Any]) -> list[dict[str, Any]]:
    rules = entry.get("rules")
    return [rule for rule in rules if isinstance(rule, dict)] if isinstance(rules, list) else []


def _covers(values: object, wanted: str) -> bool:
    return isinstance(values, list) and (wanted in values or "*" in values)


def _writes_feedbackstores(rule: dict[str, Any]) -> bool:
    resources, operations = rule.get("resources"), rule.get("operations")
    return (
        _covers(rule.get("apiGroups"), api.GROUP)
        and _covers(rule.get("apiVersions"), api.VERSION)
        and isinstance(resources, list)
        and any(r in (api.PLURAL, "*", "*/*") for r in resources)
        and (_covers(operations, CREATE) or _covers(operations, UPDATE))
    )


def _matches_status(entry: dict[str, Any]) -> bool:
    status = (f"{api.PLURAL}/status", f"{api.PLURAL}/*", "*/*", "*/status")
    return any(r in status for rule in _rules(entry) for r in rule.get("resources") or ())


def _registration_result(name: str, entries: list[Entry]) -> CheckResult:
    blocking = [str(entry.get("name")) for _, entry in entries if _matches_status(entry)]
    if blocking:
        return fail(
            REGISTRATION,
            f"{name}: {', '.join(blocking)} also matches {api.PLURAL}/status, "
            "so a webhook outage blocks the status writer",
            f"list only `{api.PLURAL}` in its rules' resources",
        )
    described = "; ".join(f"{e.get('name')} -> {client_endpoint(e)[1]}" for _, e in entries)
    return ok(REGISTRATION, f"{name}: {described}")


def _combined(check: str, configuration: str, entries: list[Entry], verdict: Judge) -> CheckResult:
    labelled = []
    for index, entry in entries:
        level, detail, fix = verdict(entry)
        fix = fix.replace("<NAME>", configuration).replace("<INDEX>", str(index))
        labelled.append((str(entry.get("name")), CheckResult(check, level, detail, fix)))
    return combine(check, labelled)


def _patch(field: str, value: str) -> str:
    return (
        "kubectl patch validatingwebhookconfiguration <NAME> --type=json -p "
        f"""'[{{"op":"replace","path":"/webhooks/<INDEX>/{field}","value":{value}}}]'"""
    )


def _failure_policy(entry: dict[str, Any]) -> Verdict:
    policy = entry.get("failurePolicy") or "Fail"
    if policy == "Fail":
        return Level.OK, "Fail", ""
    return (
        Level.FAIL,
        f"{policy}: while the webhook is down, FeedbackStores are admitted without it, silently",
        _patch("failurePolicy", '"Fail"'),
    )


def _side_effects(entry: dict[str, Any]) -> Verdict:
    effects = entry.get("sideEffects")
    if effects in ("None", "NoneOnDryRun"):
        return Level.OK, str(effects), ""
    return (
        Level.FAIL,
        f"{effects}: kube-apiserver refuses dry-run requests (kubectl --dry-run=server, "
        "kubectl diff) for the objects this webhook matches",
        _patch("sideEffects", '"None"'),
    )


def _timeout(entry: dict[str, Any]) -> Verdict:
    seconds = entry.get("timeoutSeconds")
    value = seconds if type(seconds) is int else DEFAULT_TIMEOUT
    if MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        return Level.OK, f"{value} s", ""
    if value > MAX_TIMEOUT:
        why = f"{value} s: while the webhook hangs, every FeedbackStore write waits that long"
    else:
        why = f"{value} s: a TLS handshake to a busy pod may not fit; writes then fail"
    return Level.WARN, why, _patch("timeoutSeconds", "5")


def _review_versions(entry: dict[str, Any]) -> Verdict:
    listed = entry.get("admissionReviewVersions")
    versions = [str(v) for v in listed] if isinstance(listed, list) else []
    shown = ", ".join(versions) or "none"
    if "v1" in versions:
        return Level.OK, shown, ""
    fix = _patch("admissionReviewVersions", '["v1"]')
    if "v1beta1" in versions:
        return Level.WARN, f"{shown}: v1beta1 only (deprecated); the webhook speaks v1", fix
    return Level.FAIL, f"{shown}: the webhook speaks v1 and v1beta1 only", fix


def _selector_verdict(target: Target, namespaces: Mapping[str, Fetched]) -> Judge:
    protected = (KUBE_SYSTEM, target.namespace)

    def verdict(entry: dict[str, Any]) -> Verdict:
        selector = entry.get("namespaceSelector")
        matched = [ns for ns in protected if selects(selector, _labels(ns, namespaces.get(ns)))]
        if not matched:
            return Level.OK, f"leaves out {' and '.join(protected)}", ""
        return (
            Level.FAIL,
            f"matches {' and '.join(matched)}: a broken webhook could block the repairs there",
            f"add to the namespaceSelector's matchExpressions: {{key: {NAMESPACE_NAME_LABEL},"
            f" operator: NotIn, values: [{', '.join(protected)}]}}",
        )

    return verdict


def _labels(name: str, namespace: Fetched) -> dict[str, str]:
    """A namespace's labels; kube-apiserver always sets the name label, so start from it."""
    labels: dict[str, str] = {NAMESPACE_NAME_LABEL: name}
    found = metadata_of(namespace).get("labels")
    if isinstance(found, dict):
        labels.update({str(k): str(v) for k, v in found.items()})
    return labels


def selects_namespace(configuration: Fetched, name: str, namespace: Fetched) -> bool | None:
    """Whether any admission entry's namespaceSelector matches namespace `name` (None: unknown)."""
    if not isinstance(configuration, dict):
        return None
    labels = _labels(name, namespace)
    return any(
        selects(entry.get("namespaceSelector"), labels)
        for _, entry in admission_entries(configuration)
    )


def selects(selector: object, labels: Mapping[str, str]) -> bool:
    """As kube-apiserver matches a `namespaceSelector`; apimachinery refuses an unknown operator."""
    if not isinstance(selector, dict):
        return True
    match_labels = selector.get("matchLabels") or {}
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    return all(_requirement(r, labels) for r in selector.get("matchExpressions") or ())


def _requirement(requirement: Any, labels: Mapping[str, str]) -> bool:
    if not isinstance(requirement, dict) or not isinstance(key := requirement.get("key"), str):
        return False
    operator, values = requirement.get("operator"), requirement.get("values") or ()
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    return operator == "DoesNotExist" and not present
