"""The doctor's checks, in the order it reports them: what the unit tests and the real-server
tests hold `doctor` to, stated once so that a new check is added to both at a time."""

from typing import Final

EVERY_CHECK: Final = [
    "crd",
    "webhook-configuration",
    "failurePolicy",
    "sideEffects",
    "timeoutSeconds",
    "admissionReviewVersions",
    "namespaceSelector",
    "ca-bundle",
    "certificate-names",
    "certificate-expiry",
    "service-endpoints",
    "webhook-answers",
    "status-writer-lease",
    "store-conditions",
    "validated-writers",
    "held-deletions",
    "inline-declarations",
]
