"""The platform's AgentDeployment CRD as the tests' fixtures, in two variants.

The platform ships this CRD, not us; the fixtures hold what the tests need of it:
`spec.feedback` with exactly a FeedbackStore's spec schema (limits, enums, defaults: built
from our model, as the platform's types are the same), the older `spec.feedbackStoreRef`
(the in-use and `migrate` tests), a few fields of the agent's own (`image`, `replicas`) that
an update may change without touching its feedback, and a `status` subresource the platform
alone writes. Served as `v1beta1` (storage) and the
deprecated `v1alpha1`, one schema, no conversion, as the platform serves it.

- `agentdeployments-platform.yaml` carries the platform's four CEL rules on
  `spec.feedback`, with its texts (the messages ours match word for word), first
  failure only: each rule holds when an earlier one fails, so one message at most.
- `agentdeployments-no-cel.yaml` has the same schema without them.

Generated here (`write_agent_crds()`); tests/kube/test_inline_real.py checks that the files
are what this module makes.
"""

from __future__ import annotations

import contextlib
import pathlib
import uuid
from collections.abc import Iterator
from typing import Any, Final

import yaml
from kubernetes import client as k8s

from tests.kube.cluster import PROBE_NAMESPACE, api_client, eventually, load_yaml
from tests.kube.controlplane import ControlPlane
from webhook.manifests.crd import spec_schema
from webhook.manifests.render import render_yaml
from webhook.rules import messages

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
PLATFORM_AGENT_CRD = FIXTURES / "agentdeployments-platform.yaml"
NO_CEL_AGENT_CRD = FIXTURES / "agentdeployments-no-cel.yaml"
AGENT_GROUP, AGENT_PLURAL, AGENT_KIND = "agents.ctxmesh.ai", "agentdeployments", "AgentDeployment"
AGENT_CRD_NAME = f"{AGENT_PLURAL}.{AGENT_GROUP}"
AGENT_VERSIONS: Final = ("v1alpha1", "v1beta1")  # deprecated, storage

# The platform's four invariants on `spec.feedback` (self), in its order, with its texts.
PLATFORM_RULES: Final = (
    (
        "(has(self.human) && size(self.human.scores) > 0)"
        " || (has(self.external) && size(self.external) > 0)",
        messages.MSG_NO_SOURCE,
    ),
    (
        "!has(self.human)"
        " || self.human.scores.all(s, self.human.scores.exists_one(t, t.name == s.name))",
        messages.MSG_DUP_HUMAN,
    ),
    (
        "!has(self.human) || !has(self.external)"
        " || self.external.all(c, !self.human.scores.exists(s, s.name == c.score.name))",
        messages.MSG_DUP_ACROSS,
    ),
    (
        "!has(self.external)"
        " || self.external.all(c, self.external.exists_one(d, d.score.name == c.score.name))",
        messages.MSG_DUP_EXTERNAL,
    ),
)


def platform_validations() -> list[dict[str, str]]:
    """The rules, first failure only: rule k is checked only when rules 1..k-1 hold."""
    validations = []
    for index, (rule, message) in enumerate(PLATFORM_RULES):
        earlier = " && ".join(f"({r})" for r, _ in PLATFORM_RULES[:index])
        validations.append(
            {"rule": f"!({earlier}) || ({rule})" if earlier else rule, "message": message}
        )
    return validations


def agent_crd(*, cel: bool) -> dict[str, Any]:
    feedback = spec_schema(cel=False)
    feedback["description"] = "The agent's FeedbackStore declaration: a FeedbackStore's spec."
    if cel:
        feedback["x-kubernetes-validations"] = platform_validations()
    spec = {
        "type": "object",
        "properties": {
            "image": {"type": "string"},
            "replicas": {"type": "integer", "minimum": 0},
            "feedbackStoreRef": {"type": "string"},
            "feedback": feedback,
        },
    }
    status = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec, "status": status}}}

    def version(name: str) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": name, "served": True, "storage": name == "v1beta1"}
        if name == "v1alpha1":
            entry["deprecated"] = True
        return {**entry, "subresources": {"status": {}}, "schema": schema}

    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": AGENT_CRD_NAME},
        "spec": {
            "group": AGENT_GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": AGENT_KIND,
                "plural": AGENT_PLURAL,
                "singular": "agentdeployment",
                "listKind": f"{AGENT_KIND}List",
            },
            "versions": [version(name) for name in reversed(AGENT_VERSIONS)],
        },
    }


def agent_crd_text(*, cel: bool) -> str:
    what = "with the platform's four CEL rules" if cel else "without CEL rules"
    return render_yaml(
        agent_crd(cel=cel),
        header=(
            f"The platform's AgentDeployment CRD for the tests, {what}.\n"
            "Generated by tests/kube/agents_crd.py; regenerate with write_agent_crds()."
        ),
    )


def write_agent_crds() -> None:
    PLATFORM_AGENT_CRD.write_text(agent_crd_text(cel=True))
    NO_CEL_AGENT_CRD.write_text(agent_crd_text(cel=False))


def agent(name: str, feedback: Any = None, version: str = "v1beta1", **spec: Any) -> dict[str, Any]:
    """An AgentDeployment of the fixtures' schema; `feedback` None leaves it out."""
    body: dict[str, Any] = {
        "apiVersion": f"{AGENT_GROUP}/{version}",
        "kind": AGENT_KIND,
        "metadata": {"name": name},
        "spec": dict(spec),
    }
    if feedback is not None:
        body["spec"]["feedback"] = feedback
    return body


def install_agent_crd(plane: ControlPlane, path: pathlib.Path) -> None:
    """Apply the CRD at `path` (either variant) and wait until the server serves exactly it,
    told apart by behaviour: an agent declaring no source is refused by the CEL variant only
    (probed where no test webhook is registered)."""
    document = load_yaml(path)
    has_cel = "x-kubernetes-validations" in path.read_text()
    plane.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=kube-tests",
        "-f",
        "-",
        stdin=yaml.safe_dump(document),
        check=True,
    )
    plane.kubectl(
        "wait", "--for=condition=Established", f"crd/{AGENT_CRD_NAME}", "--timeout=60s", check=True
    )
    api = k8s.CustomObjectsApi(api_client(plane))

    def serves_variant() -> bool:
        for version in AGENT_VERSIONS:
            probe = agent(f"probe-{uuid.uuid4().hex[:8]}", {"mode": "Enforce"}, version)
            try:
                api.create_namespaced_custom_object(
                    AGENT_GROUP, version, PROBE_NAMESPACE, AGENT_PLURAL, probe, dry_run="All"
                )
            except k8s.ApiException as error:
                if error.status == 404 or not (has_cel and error.status == 422):
                    return False
                continue
            if has_cel:
                return False
        return True

    eventually(serves_variant, timeout=60, what=f"AgentDeployment CRD (CEL={has_cel}) served")


@contextlib.contextmanager
def agent_crd_installed(
    plane: ControlPlane, path: pathlib.Path = NO_CEL_AGENT_CRD
) -> Iterator[None]:
    """The AgentDeployment CRD at `path` for the duration; removed after, with every agent (a
    cluster without it is one where in-use protection is off)."""
    install_agent_crd(plane, path)
    try:
        yield
    finally:
        plane.kubectl(
            "delete",
            "crd",
            AGENT_CRD_NAME,
            "--ignore-not-found",
            "--wait=true",
            check=True,
            timeout=120,
        )
