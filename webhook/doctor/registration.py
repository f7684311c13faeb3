"""The ValidatingWebhookConfiguration: present, and set up as manifests/ ships it. Every entry is
checked (its endpoint, sideEffects, timeout, review versions and namespaceSelector), the worst
reported with the entry's name: a certificate patched into one entry only left the others
failing open, unnoticed. Only entries that validate CREATE or UPDATE of FeedbackStores must be
`failurePolicy: Fail`: a DELETE-only entry (in-use warnings) and the inline form's rightly fail
open."""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping
from typing import Any, Final

from webhook import install
from webhook.admission.envelope import CREATE, UPDATE
from webhook.doctor.result import CheckResult, Level, combine, fail, ok, refused, skip
from webhook.doctor.snapshot import KUBE_SYSTEM, NAMESPACE_NAME_LABEL, Fetched, Target, Unreadable
from webhook.kube.objects import metadata_of
from webhook.rules import api
from webhook.text import counted

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


def every_entry(configuration: Fetched) -> list[Entry]:
    """(index, webhook) for each webhook of the configuration."""
    webhooks = configuration.get("webhooks") if isinstance(configuration, dict) else None
    found = enumerate(webhooks if isinstance(webhooks, list) else ())
    return [(index, entry) for index, entry in found if isinstance(entry, dict)]


def admission_entries(configuration: Fetched) -> list[Entry]:
    """(index, webhook) for each webhook that validates CREATE or UPDATE of FeedbackStores."""
    return [
        (index, entry)
        for index, entry in every_entry(configuration)
        if any(_writes_feedbackstores(r) for r in _rules(entry))
    ]


def failure_policy(entry: dict[str, Any]) -> str:
    """As kube-apiserver defaults it."""
    return str(entry.get("failurePolicy") or "Fail")


def entry_label(entry: dict[str, Any]) -> str:
    """An entry by name and failurePolicy: with Ignore, a call that fails lets the request
    through unjudged, which no one sees (fails open)."""
    policy = failure_policy(entry)
    opens = ", fails open" if policy == "Ignore" else ""
    return f"{entry.get('name')} (failurePolicy {policy}{opens})"


def check_registration(
    configuration: Fetched, target: Target, namespaces: Mapping[str, Fetched]
) -> list[CheckResult]:
    name = target.webhook_configuration
    verdicts: dict[str, Judge] = {
        "failurePolicy": _failure_policy,  # of the admission entries alone
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
        every = every_entry(configuration)
        combined = (
            _combined(check, name, entries if check == "failurePolicy" else every, verdict)
            for check, verdict in verdicts.items()
        )
        return [_registration_result(name, entries, every), *combined]
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


def _registration_result(name: str, entries: list[Entry], every: list[Entry]) -> CheckResult:
    blocking = [str(entry.get("name")) for _, entry in entries if _matches_status(entry)]
    if blocking:
        return fail(
            REGISTRATION,
            f"{name}: {', '.join(blocking)} also matches {api.PLURAL}/status, "
            "so a webhook outage blocks the status writer",
            f"list only `{api.PLURAL}` in its rules' resources",
        )
    judge = entries[0][1]
    calls = _calls(judge)
    astray = []
    for _, entry in every:
        where, label = _calls(entry), entry_label(entry)
        if not where.endswith(install.VALIDATE_PATH):
            astray.append(
                f"{label} calls {where}: the webhook answers {install.VALIDATE_PATH} only"
            )
        elif where != calls:
            astray.append(f"{label} calls {where}, not {calls} as {judge.get('name')} does")
    if astray:
        return fail(
            REGISTRATION,
            f"{name}: {'; '.join(astray)}",
            "reapply your install, which points every entry at the Service, port "
            f"{install.SERVICE_PORT} and path {install.VALIDATE_PATH}",
        )
    described = "; ".join(f"{e.get('name')} -> {client_endpoint(e)[1]}" for _, e in entries)
    others = len(every) - len(entries)
    also = f"; and {counted(others, 'other webhook')}, the same way" if others else ""
    return ok(REGISTRATION, f"{name}: {described}{also}")


def _calls(entry: dict[str, Any]) -> str:
    """Where kube-apiserver sends the entry's reviews: Service and port, then path; or the url."""
    service = client_config(entry, "service")
    if isinstance(service, dict):
        path = service.get("path") or "/"
        return f"{client_endpoint(entry)[1]}{path}"
    return client_endpoint(entry)[1]


def _combined(check: str, configuration: str, entries: list[Entry], verdict: Judge) -> CheckResult:
    found = []
    for index, entry in entries:
        level, detail, fix = verdict(entry)
        fix = fix.replace("<NAME>", configuration).replace("<INDEX>", str(index))
        found.append((entry, CheckResult(check, level, detail, fix)))
    return combine_entries(check, found)


def combine_entries(check: str, found: list[tuple[dict[str, Any], CheckResult]]) -> CheckResult:
    """One result for every entry: once when all agree, else each by name, a failing one with
    its failurePolicy (does it refuse the request, or let it through unjudged?)."""
    if len(found) > 1 and len({(r.level, r.detail) for _, r in found}) == 1:
        first = found[0][1]
        detail = f"{first.detail} (all {len(found)} entries)"
        return CheckResult(check, first.level, detail, first.fix)
    labelled = [
        (str(entry.get("name")) if result.level is Level.OK else entry_label(entry), result)
        for entry, result in found
    ]
    return combine(check, labelled)


def _patch(field: str, value: str) -> str:
    return (
        "kubectl patch validatingwebhookconfiguration <NAME> --type=json -p "
        f"""'[{{"op":"replace","path":"/webhooks/<INDEX>/{field}","value":{value}}}]'"""
    )


def _failure_policy(entry: dict[str, Any]) -> Verdict:
    policy = failure_policy(entry)
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
