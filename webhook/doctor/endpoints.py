"""Does the webhook's Service have somewhere to send kube-apiserver's calls?

Ready endpoints come from EndpointSlices labelled with the Service's name; an
endpoint whose `ready` condition is absent counts as ready, as the
EndpointSlice API tells consumers to read an unknown state.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.doctor.result import CheckResult, fail, ok, refused, skip
from webhook.doctor.snapshot import Unreadable

NAME: Final = "service-endpoints"
_NEEDS: Final = "get services, list endpointslices"


def ready_addresses(slices: list[dict[str, Any]]) -> tuple[list[str], int]:
    """(addresses of ready endpoints, how many endpoints are not ready)."""
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
    return ready, not_ready


def check_endpoints(
    service: dict[str, Any] | Unreadable | None,
    slices: list[dict[str, Any]] | Unreadable | None,
    service_ref: str,
    note: str = "",
) -> CheckResult:
    """`note` says why this Service is the one checked (e.g. the registration calls a url:)."""
    suffix = f" ({note})" if note else ""
    namespace = service_ref.partition("/")[0]
    if isinstance(service, Unreadable):
        return refused(NAME, f"read Service {service_ref}", service, _NEEDS)
    if service is None:
        return fail(
            NAME,
            f"Service {service_ref} not found{suffix}",
            "reapply your install; --service names another Service",
        )
    if isinstance(slices, Unreadable):
        return refused(NAME, "list EndpointSlices", slices, _NEEDS)
    if slices is None:
        return skip(NAME, "EndpointSlices not listed")
    ready, not_ready = ready_addresses(slices)
    if ready:
        shown = ", ".join(ready[:5]) + (f" and {len(ready) - 5} more" if len(ready) > 5 else "")
        return ok(NAME, f"Service {service_ref}: {len(ready)} ready ({shown}){suffix}")
    pods = "pods not Ready" if not_ready else "no pods selected"
    return fail(
        NAME,
        f"Service {service_ref} has no ready endpoints ({not_ready} not ready: {pods}){suffix}",
        f"kubectl -n {namespace} get pods -l app.kubernetes.io/component=webhook; "
        "kubectl describe the pods (a missing Secret keeps them ContainerCreating)",
    )
