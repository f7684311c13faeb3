"""The FeedbackStore CustomResourceDefinition, built from the rules package.

`human.scores` and `external` stay atomic lists, not `x-kubernetes-list-type:
map` keyed by `name`, as decided on a real kube-apiserver v1.37.2
(tests/kube/test_crd_real.py keeps the evidence):

- kube-apiserver refuses a duplicate map key itself, without the platform's
  words; and under server-side apply (Flux, Argo CD, `kubectl apply
  --server-side`) it never reaches validation: HTTP 500 `failed to create typed
  patch object`, none of the object's other problems reported.
- Server-side apply would merge item by item, so a score another field manager
  added would silently stay when Git no longer lists it; a store is
  configuration one owner replaces whole.
- `external` could be keyed only by the channel `name`, never by the nested
  `score.name` the cross-source rules compare.
"""

from __future__ import annotations

from typing import Any

from webhook.manifests.cel_rules import SPEC_RULES, CelRule
from webhook.manifests.condition import status_schema
from webhook.manifests.structural import structural_schema
from webhook.rules import api, inuse
from webhook.rules.model import FeedbackStoreSpec

PART_OF = "feedbackstore-webhook"
_VALIDATED = f'.status.conditions[?(@.type=="{api.CONDITION_TYPE}")]'
_IN_USE = f'.status.conditions[?(@.type=="{inuse.CONDITION_TYPE}")]'


def spec_schema(*, cel: bool = True) -> dict[str, Any]:
    """The structural schema of `spec` with the CEL rules attached where they apply.

    `cel=False` gives the schema alone, as the platform's CRD ships today: then
    the webhook is the only guard of the cross-field rules.
    """
    schema = structural_schema(FeedbackStoreSpec.model_json_schema(by_alias=True))
    for rule in SPEC_RULES if cel else ():
        _attach(schema, rule)
    return schema


def _attach(schema: dict[str, Any], rule: CelRule) -> None:
    node = schema
    for name in filter(None, rule.at.split(".")):
        node = node["properties"][name]
    node.setdefault("x-kubernetes-validations", []).append(rule.validation())


def root_schema(*, cel: bool = True) -> dict[str, Any]:
    return {
        "type": "object",
        "description": (
            "Which feedback score names an agent accepts and from which source "
            "(a human channel or an external channel)."
        ),
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec_schema(cel=cel),
            "status": status_schema(),
        },
    }


def printer_columns() -> list[dict[str, Any]]:
    return [
        {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
        {"name": "Validated", "type": "string", "jsonPath": f"{_VALIDATED}.status"},
        {
            "name": "Reason",
            "type": "string",
            "jsonPath": f"{_VALIDATED}.reason",
            "priority": 1,
        },
        {"name": "In Use", "type": "string", "jsonPath": f"{_IN_USE}.status"},
        {"name": "Agents", "type": "string", "jsonPath": f"{_IN_USE}.message", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def crd_manifest(*, cel: bool = True) -> dict[str, Any]:
    """The whole CRD object, ready to serialise (built afresh on every call)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": api.CRD_NAME,
            "labels": {"app.kubernetes.io/part-of": PART_OF},
        },
        "spec": {
            "group": api.GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": api.KIND,
                "listKind": f"{api.KIND}List",
                "plural": api.PLURAL,
                "singular": api.SINGULAR,
                "shortNames": list(api.SHORT_NAMES),
                "categories": list(api.CATEGORIES),
            },
            "versions": [
                {
                    "name": api.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": printer_columns(),
                    "schema": {"openAPIV3Schema": root_schema(cel=cel)},
                }
            ],
        },
    }
