"""Every check, in the order an admin reads them, over one `Snapshot`."""

from __future__ import annotations

import datetime as dt

from webhook.doctor import certificates, registration
from webhook.doctor.crd import check_crd
from webhook.doctor.endpoints import check_endpoints
from webhook.doctor.held import check_held
from webhook.doctor.lease import check_lease
from webhook.doctor.probe import check_probe
from webhook.doctor.result import CheckResult, Level, combine, skip
from webhook.doctor.snapshot import Fetched, Snapshot, Target
from webhook.doctor.stores import check_stores


def service_ref(configuration: Fetched, target: Target) -> tuple[str, str, str]:
    """(namespace, name, why this one) of the Service whose endpoints are checked.

    A `service:` registration names it; with a `url:` one kube-apiserver never
    uses a Service, so the one the doctor was told about is checked.
    """
    entries = registration.admission_entries(configuration)
    for _, entry in entries:
        service = registration.client_config(entry, "service")
        if isinstance(service, dict):
            return str(service.get("namespace")), str(service.get("name")), ""
    return target.namespace, target.service, "unused by a url: registration" if entries else ""


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
    results.append(check_stores(snapshot.stores, scope))
    results.append(check_held(snapshot.stores, writer_leads=lease.level is Level.OK))
    return results


def _serving(snapshot: Snapshot, target: Target, now: dt.datetime) -> list[CheckResult]:
    """The certificate checks for each admission entry, one line per check."""
    entries = registration.admission_entries(snapshot.configuration)
    names = (certificates.CA_BUNDLE, certificates.NAMES, certificates.EXPIRY)
    if not entries:
        return [skip(name, "no webhook configuration to check against") for name in names]
    per_entry: list[tuple[str, list[CheckResult]]] = []
    secret_ref = f"{target.namespace}/{target.secret}"
    for _, entry in entries:
        host, _ = registration.client_endpoint(entry)
        bundle = certificates.ca_bundle(entry)
        found = certificates.check_serving(snapshot.secret, secret_ref, bundle, host, now)
        per_entry.append((str(entry.get("name")), found))
    return [
        combine(name, [(label, found[index]) for label, found in per_entry])
        for index, name in enumerate(names)
    ]
