"""Every check, in the order an admin reads them, over one `Snapshot`; the CRD, Service, probe and
Lease checks live here, the larger ones in a module each."""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from webhook import install
from webhook.admission.warnings import bounded
from webhook.doctor import certificates, registration
from webhook.doctor.inline import check_inline
from webhook.doctor.result import CheckResult, Level, fail, ok, refused, skip
from webhook.doctor.snapshot import Fetched, FetchedList, ProbeOutcome, Snapshot, Target, Unreadable
from webhook.doctor.stores import check_held, check_stores, check_validated_writers
from webhook.kube.leader import lapses_at, read_record
from webhook.kube.objects import CONDITION_TRUE, find_condition
from webhook.kube.settings import LEASE_DURATION
from webhook.kube.timestamps import parse_time
from webhook.rules import api, validate_spec
from webhook.text import named

CRD: Final = "crd"
ENDPOINTS: Final = "service-endpoints"
LEASE: Final = "status-writer-lease"
_INSTALL_CRD: Final = "kubectl apply --server-side -k manifests/crd"
_ENDPOINTS_NEEDS: Final = "get services, list endpointslices"
# Ready endpoint addresses named in the result; the rest are counted.
_SHOWN_ADDRESSES: Final = 5
PROBE: Final = "webhook-answers"
PROBE_NAME: Final = "feedbackstore-doctor-probe"
PROBE_SPEC: Final = {"mode": api.MONITOR_MODE, "human": {"scores": [{"name": "doctor-probe"}]}}
_CALL_FAILED: Final = "failed calling webhook"


def run_checks(snapshot: Snapshot, target: Target, now: dt.datetime) -> list[CheckResult]:
    results = [check_crd(snapshot.crd)]
    results += registration.check_registration(snapshot.configuration, target, snapshot.namespaces)
    results += _serving(snapshot, target, now)
    namespace, name, note = service_ref(snapshot.configuration, target)
    results.append(
        check_endpoints(snapshot.service, snapshot.endpoint_slices, f"{namespace}/{name}", note)
    )
    selected = registration.selects_namespace(
        snapshot.configuration,
        target.probe_namespace,
        snapshot.namespaces.get(target.probe_namespace),
    )
    results.append(check_probe(snapshot.probe, target.probe_namespace, selected))
    lease = check_lease(snapshot.lease, f"{target.namespace}/{target.lease}", now)
    results.append(lease)
    scope = f"in {target.store_namespace}" if target.store_namespace else "in all namespaces"
    results.append(check_stores(snapshot.stores, scope, target.namespace))
    results.append(check_validated_writers(snapshot.stores))
    held = check_held(
        snapshot.stores,
        writer_leads=lease.level is Level.OK,
        lease=(target.namespace, target.lease),
    )
    results.append(held)
    results.append(check_inline(snapshot.agents, scope))
    return results


def service_ref(configuration: Fetched, target: Target) -> tuple[str, str, str]:
    """(namespace, name, why) of the Service checked; a `url:` registration uses none."""
    entries = registration.admission_entries(configuration)
    for _, entry in entries:
        service = registration.client_config(entry, "service")
        if isinstance(service, dict):
            return str(service.get("namespace")), str(service.get("name")), ""
    return target.namespace, target.service, "unused by a url: registration" if entries else ""


def _serving(snapshot: Snapshot, target: Target, now: dt.datetime) -> list[CheckResult]:
    """The Secret's certificate against every entry: its caBundle, the host it dials."""
    entries = registration.admission_entries(snapshot.configuration)
    names = (certificates.CA_BUNDLE, certificates.NAMES, certificates.EXPIRY)
    if not entries:
        return [skip(name, "no webhook configuration to check against") for name in names]
    per_entry: list[tuple[dict[str, Any], list[CheckResult]]] = []
    secret_ref = f"{target.namespace}/{target.secret}"
    for _, entry in registration.every_entry(snapshot.configuration):
        host, _ = registration.client_endpoint(entry)
        bundle = certificates.ca_bundle(entry)
        found = certificates.check_serving(snapshot.secret, secret_ref, bundle, host, now)
        per_entry.append((entry, found))
    return [
        registration.combine_entries(name, [(entry, found[index]) for entry, found in per_entry])
        for index, name in enumerate(names)
    ]


def check_crd(crd: Fetched) -> CheckResult:
    """Installed, Established, and serving the version we speak."""
    if isinstance(crd, Unreadable):
        return refused(CRD, f"read CRD {api.CRD_NAME}", crd, "get on customresourcedefinitions")
    if crd is None:
        return fail(CRD, f"CRD {api.CRD_NAME} is not installed", _INSTALL_CRD)
    established = find_condition(crd, "Established") or {}
    if established.get("status") != CONDITION_TRUE:
        accepted = find_condition(crd, "NamesAccepted") or {}
        why = established.get("message") or accepted.get("message")
        return fail(
            CRD,
            f"CRD {api.CRD_NAME} is not Established" + (f": {why}" if why else ""),
            f"kubectl describe crd {api.CRD_NAME}  (a name conflict or a bad schema shows there)",
        )
    spec = crd.get("spec")
    listed = spec.get("versions") if isinstance(spec, dict) else None
    versions: dict[str, dict[str, Any]] = {
        item["name"]: item
        for item in (listed if isinstance(listed, list) else ())
        if isinstance(item, dict) and isinstance(item.get("name"), str)
    }
    served = versions.get(api.VERSION)
    if served is None or not served.get("served"):
        names = ", ".join(sorted(versions)) or "none"
        return fail(
            CRD,
            f"CRD {api.CRD_NAME} does not serve {api.VERSION} (versions: {names})",
            _INSTALL_CRD,
        )
    described = []
    for name, version in sorted(versions.items()):
        flags = [flag for flag in ("served", "storage") if version.get(flag)]
        described.append(f"{name} ({', '.join(flags) or 'not served'})")
    if _has_key(served.get("schema"), "x-kubernetes-validations"):
        cel = "; cross-field rules in CEL"
    else:
        cel = "; no CEL rules: the webhook alone enforces the cross-field rules"
    return ok(CRD, f"{api.CRD_NAME} Established; versions {', '.join(described)}{cel}")


def _has_key(node: object, key: str) -> bool:
    if isinstance(node, dict):
        return key in node or any(_has_key(value, key) for value in node.values())
    if isinstance(node, list):
        return any(_has_key(item, key) for item in node)
    return False


def check_endpoints(
    service: Fetched, slices: FetchedList, service_ref: str, note: str = ""
) -> CheckResult:
    """`note`: why this Service; an absent `ready` counts as ready (EndpointSlice API)."""
    suffix = f" ({note})" if note else ""
    if isinstance(service, Unreadable):
        return refused(ENDPOINTS, f"read Service {service_ref}", service, _ENDPOINTS_NEEDS)
    if service is None:
        return fail(
            ENDPOINTS,
            f"Service {service_ref} not found{suffix}",
            "reapply your install; --service names another Service",
        )
    if isinstance(slices, Unreadable):
        return refused(ENDPOINTS, "list EndpointSlices", slices, _ENDPOINTS_NEEDS)
    if slices is None:
        return skip(ENDPOINTS, "EndpointSlices not listed")
    ready: list[str] = []
    not_ready = 0
    for endpoint_slice in slices:
        for endpoint in endpoint_slice.get("endpoints") or ():
            if not isinstance(endpoint, dict):
                continue
            conditions = endpoint.get("conditions") or {}
            if isinstance(conditions, dict) and conditions.get("ready") is False:
                not_ready += 1
            else:
                ready.extend(str(a) for a in endpoint.get("addresses") or ())
    if ready:
        shown = named(ready[:_SHOWN_ADDRESSES], len(ready))
        return ok(ENDPOINTS, f"Service {service_ref}: {len(ready)} ready ({shown}){suffix}")
    pods = "pods not Ready" if not_ready else "no pods selected"
    namespace = service_ref.partition("/")[0]
    return fail(
        ENDPOINTS,
        f"Service {service_ref} has no ready endpoints ({not_ready} not ready: {pods}){suffix}",
        f"kubectl -n {namespace} get pods -l {install.WEBHOOK.selector}; "
        "kubectl describe the pods (a missing Secret keeps them ContainerCreating)",
    )


def probe_store(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": PROBE_NAME, "namespace": namespace},
        "spec": PROBE_SPEC,
    }


def expected_warnings() -> tuple[str, ...]:
    return bounded(str(w) for w in validate_spec(PROBE_SPEC).warnings)


def check_probe(outcome: ProbeOutcome | None, namespace: str, selected: bool | None) -> CheckResult:
    """A dry-run create of a valid store in `mode: Monitor`, which only the webhook warns about
    (the CRD's own rules never warn): the warning comes back only if kube-apiserver called it
    through the registration, reached its pod and trusted its certificate. `selected`:
    namespaceSelector matches `namespace`.
    """
    if outcome is None:
        return skip(PROBE, "no FeedbackStore API to probe")
    where = f"dry-run create in namespace {namespace}"
    if outcome.status is None:
        return fail(PROBE, f"{where}: no answer from kube-apiserver: {outcome.message}", _LOGS)
    if outcome.status in (200, 201):
        if any(text in got for text in expected_warnings() for got in outcome.warnings):
            return ok(
                PROBE, f"{where}: kube-apiserver called the webhook, which warned as expected"
            )
        return fail(PROBE, f"{where} was admitted without the webhook's warning: it was not called",
                    _not_called_fix(namespace, selected))  # fmt: skip
    if _CALL_FAILED in outcome.message:
        return fail(PROBE, f"{where}: {outcome.message}", _CALL_FIX)
    if outcome.status == 404 and "namespaces" in outcome.message:
        return fail(PROBE, f"{where}: {outcome.message}", _NAMESPACE_FIX)
    return fail(PROBE, f"{where}: HTTP {outcome.status}: {outcome.message}", _LOGS)


def _not_called_fix(namespace: str, selected: bool | None) -> str:
    if selected is None:
        return "kube-apiserver has no registration of ours to call: see webhook-configuration"
    if selected is False:
        return f"the namespaceSelector does not match namespace {namespace}: " + _NAMESPACE_FIX
    return (
        "with failurePolicy Ignore a failed call is silent: look for 'failed calling webhook' in "
        "kube-apiserver's log; check the rules match CREATE of feedbackstores"
    )


_CALL_FIX = (
    "kube-apiserver's own words: an x509 error points at the certificate checks above, "
    "'connection refused', 'no endpoints' or a timeout at the webhook pods and the network "
    f"from the control plane to them (TCP {install.PORT})"
)
_NAMESPACE_FIX = "pass --probe-namespace NS, an existing namespace the webhook matches"
_LOGS = "check kube-apiserver's health and logs, and that you may create feedbackstores there"


def check_lease(lease: Fetched, lease_ref: str, now: dt.datetime) -> CheckResult:
    """A status writer leads: its Lease held and, by the doctor's clock, not lapsed (as `cleanup`
    judges it before it starts: the leader module's `lapses_at`)."""
    namespace = lease_ref.partition("/")[0]
    look = (
        f"kubectl -n {namespace} get pods -l {install.STATUS_WRITER.selector}; "
        f"kubectl -n {namespace} logs deploy/{install.STATUS_WRITER.name}"
    )
    if isinstance(lease, Unreadable):
        return refused(LEASE, f"read Lease {lease_ref}", lease, "get on leases")
    if lease is None:
        return fail(LEASE, f"Lease {lease_ref} not found: no status writer has ever led", look)
    record = read_record(lease)
    if not record.holder:
        return fail(LEASE, f"Lease {lease_ref} is released: no status writer leads", look)
    until = lapses_at(record, LEASE_DURATION)
    renewed = parse_time(record.renew_time)
    if until is None or renewed is None:
        return fail(LEASE, f"Lease {lease_ref} held by {record.holder} was never renewed", look)
    age = _ago((now - renewed).total_seconds())
    lapsed = (now - until).total_seconds()
    if lapsed >= 0:
        return fail(
            LEASE,
            f"Lease {lease_ref} held by {record.holder}, last renewed {age}, lapsed "
            f"{_ago(lapsed)}: the leader stopped renewing",
            look,
        )
    return ok(
        LEASE, f"held by {record.holder}, renewed {age}, lapses in {-lapsed:.0f} s unless renewed"
    )


def _ago(seconds: float) -> str:
    if seconds < 0:
        return f"{-seconds:.0f} s in the future (clock skew)"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.0f} h ago"
