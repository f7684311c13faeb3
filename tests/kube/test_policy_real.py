"""The ValidatingAdmissionPolicies (`manifests policy`) on a real kube-apiserver, with no
webhook registered: the webhook's verdict, judged by kube-apiserver alone.

A plane of its own: its kube-controller-manager also runs the policies' status controller
(which type-checks them and writes `status.typeChecking`), and the policies, which match every
namespace but the registration's excluded ones, judge no other module's objects. The platform's
CRDs as a platform cluster has them: the FeedbackStore CRD without CEL (tests/kube/cluster.py),
and an AgentDeployment CRD whose `spec` is open (`x-kubernetes-preserve-unknown-fields`), so
that the policy alone stands between any JSON and the store.

- Same verdicts as the webhook on the corpus the CRD and inline tests send (every rule and
  limit), as FeedbackStores and as spec.feedback in both versions: created where the verdict
  is valid; else refused by the schema (FeedbackStores only, as before any webhook) or by the
  policy with the webhook's denial message, word for word (tests/webhook/manifests/
  test_policy.py names where CEL says less).
- Maximal objects within the cost limits; no warning in the policies' type checking.
"""

from __future__ import annotations

import concurrent.futures
import functools
import json
import pathlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.agents_crd import AGENT_GROUP, AGENT_PLURAL, AGENT_VERSIONS, agent, agent_crd
from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    api_client,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.test_crd_real import maximal_spec
from tests.webhook.manifests.test_cel_rules import CROSS_FIELD_CASES
from tests.webhook.manifests.test_crd import PER_FIELD_CASES
from tests.webhook.manifests.test_policy import CASES as POLICY_CASES
from tests.webhook.manifests.test_policy import HINT, webhook_says, webhook_says_in_bytes
from tests.webhook.rules.test_verdict import CASES as VERDICT_CASES
from webhook.manifests import policy
from webhook.rules import api as rules_api
from webhook.rules.forms import INLINE, STORE, Form

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

ROOT = pathlib.Path(__file__).resolve().parents[2]
REGISTRATION = yaml.safe_load(
    (ROOT / "manifests" / "webhook" / "validatingwebhookconfiguration.yaml").read_text()
)
STATUS_CONTROLLER = "validatingadmissionpolicy-status-controller"
DENIED = re.compile(r"ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: ")


def open_agent_crd() -> dict[str, Any]:
    """The platform's AgentDeployment CRD with an open `spec`: anything goes in, as JSON."""
    crd = agent_crd(cel=False)
    for version in crd["spec"]["versions"]:
        properties = version["schema"]["openAPIV3Schema"]["properties"]
        properties["spec"] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return crd


@pytest.fixture(scope="module", name="plane")
def _plane(
    control_plane_binaries: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    plane = ControlPlane(
        control_plane_binaries,
        tmp_path_factory.mktemp("policy-plane"),
        namespace_controller=True,
        controllers=f"namespace,{STATUS_CONTROLLER}",
    )
    try:
        plane.start()
        install_crd(plane, platform_today_crd())
        apply(plane, open_agent_crd())
        plane.kubectl(
            "wait", "--for=condition=Established", f"crd/{AGENT_PLURAL}.{AGENT_GROUP}", check=True
        )
        yield plane
    finally:
        plane.stop()


def apply(plane: ControlPlane, *documents: dict[str, Any]) -> None:
    """Replace each document on its own (delete, then create): kube-apiserver compiles a policy
    as it validates it, tens of seconds on a loaded machine, an update twice over, and one
    request must end within its 60 s."""
    for document in documents:
        text = yaml.safe_dump(document)
        if document["kind"].startswith("ValidatingAdmissionPolicy"):
            plane.kubectl("delete", "--ignore-not-found", "-f", "-", stdin=text, check=True)
        plane.kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=kube-tests",
            "-f", "-", stdin=text, check=True, timeout=120,
        )  # fmt: skip


def custom(plane: ControlPlane) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client(plane))


def send(plane: ControlPlane, namespace: str, form: Form, version: str, spec: Any,
         name: str, *, dry_run: bool = True) -> tuple[int, str]:  # fmt: skip
    """Create `spec` in `form` (strict field validation, as kubectl): (HTTP code, message)."""
    if form is STORE:
        group, plural, body = GROUP, PLURAL, feedbackstore(name, None)
        body["spec"] = spec
    else:
        group, plural = AGENT_GROUP, AGENT_PLURAL
        body = agent(name, None, version, image="support-agent:1.4")
        body["spec"]["feedback"] = spec
    try:
        custom(plane).create_namespaced_custom_object(
            group, version, namespace, plural, body,
            dry_run="All" if dry_run else None, field_validation="Strict",
        )  # fmt: skip
    except k8s.ApiException as error:
        return error.status, json.loads(error.body)["message"]
    return 201, ""


def policies() -> list[dict[str, Any]]:
    return policy.manifests(REGISTRATION)


def judging(plane: ControlPlane, namespace: str) -> None:
    """Wait until kube-apiserver judges both forms with the policies (it compiles a policy after
    its informer sees it, for tens of seconds under load): a declaration with no source is
    denied by a policy."""
    probes = [(STORE, VERSION), (INLINE, AGENT_VERSIONS[0]), (INLINE, AGENT_VERSIONS[-1])]

    def judged(form: Form, version: str) -> bool:
        name = f"probe-{uuid.uuid4().hex[:8]}"
        code, message = send(plane, namespace, form, version, {"mode": "Enforce"}, name)
        return code == 422 and DENIED.search(message) is not None

    for form, version in probes:
        eventually(functools.partial(judged, form, version), timeout=180, interval=1,
                   what=f"the policies judging {form.kind} {version}")  # fmt: skip


@pytest.fixture(scope="module", name="namespace")
def _namespace(plane: ControlPlane) -> str:
    namespace = new_namespace(plane, "policy")
    apply(plane, *policies())
    judging(plane, namespace)
    return namespace


# ---------------------------------------------------------------- type checking


@pytest.mark.timeout(900)  # policies compile for tens of seconds on a loaded machine
def test_the_policies_type_check_without_a_warning(plane: ControlPlane, namespace: str) -> None:
    api = k8s.AdmissionregistrationV1Api(api_client(plane))
    names = [d["metadata"]["name"] for d in policies() if d["kind"].endswith("Policy")]

    def checked() -> list[dict[str, Any]] | None:
        found = [api.read_validating_admission_policy(name) for name in names]
        statuses = [p.status for p in found]
        if any(s is None or s.type_checking is None for s in statuses):
            return None
        return [s.to_dict() for s in statuses]

    statuses = eventually(checked, timeout=120, what="typeChecking written by the controller")
    for status in statuses:
        assert status["type_checking"].get("expression_warnings") in (None, []), status


# ---------------------------------------------------------------- the corpus


def corpus() -> list[tuple[str, Any]]:
    cases = [(f"verdict: {name}", spec) for name, spec, _ in VERDICT_CASES]
    cases += [(f"cel: {name}", spec) for name, spec, _ in CROSS_FIELD_CASES]
    cases += [(f"schema: {name}", spec) for name, spec, _ in PER_FIELD_CASES]
    cases += [(f"policy: {name}", spec) for name, spec in POLICY_CASES]
    return [(name, spec) for name, spec in cases if spec is not None]


def judged(form: Form, spec: Any, code: int, message: str) -> str:
    """Who answered, having checked that the answer is the webhook's."""
    expected = webhook_says(form, spec)
    if code == 201:
        assert expected is None, "created, but the webhook refuses it"
        return "created"
    if code == 400 and form is STORE:  # not even decoded as the CRD's schema types it
        assert expected is not None, f"refused, but the webhook allows it: {message}"
        return "schema"
    assert code == 422, message
    assert expected is not None, f"refused, but the webhook allows it: {message}"
    denied = DENIED.search(message)
    if denied is None:
        assert form is STORE, f"only a FeedbackStore has a schema to refuse it: {message}"
        return "schema"
    said = message[denied.end() :]
    in_bytes = webhook_says_in_bytes(form, spec)
    assert in_bytes is not None
    assert said == HINT.sub("", in_bytes), "the webhook's denial, word for word"
    return "policy"


@pytest.mark.parametrize(
    ("form", "version"),
    [(STORE, VERSION), *((INLINE, version) for version in AGENT_VERSIONS)],
    ids=["as FeedbackStores", *(f"as spec.feedback in {v}" for v in AGENT_VERSIONS)],
)
@pytest.mark.timeout(900)  # policies compile for tens of seconds on a loaded machine
def test_the_corpus_gets_the_webhooks_verdict_and_words(
    plane: ControlPlane, namespace: str, form: Form, version: str
) -> None:
    cases = corpus()
    run = uuid.uuid4().hex[:4]

    def one(job: tuple[int, tuple[str, Any]]) -> tuple[str, str]:
        index, (case, spec) = job
        code, message = send(plane, namespace, form, version, spec, f"c{run}-{index:03d}")
        try:
            return case, judged(form, spec, code, message)
        except AssertionError as error:
            return case, f"WRONG: {error}"

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(one, enumerate(cases)))
    wrong = [f"{case}: {answer}" for case, answer in answers if answer.startswith("WRONG")]
    assert not wrong, "\n".join(wrong)
    by = {answer for _, answer in answers}
    assert "policy" in by
    assert "created" in by
    if form is INLINE:
        assert by == {"policy", "created"}, "the open schema refuses nothing"


# ---------------------------------------------------------------- cost limits


def costliest_spec(*, repeated_categories: bool) -> dict[str, Any]:
    """Every name the same and as long as allowed in the widest characters, categories as long
    as a maximal store's, and (where no schema refuses a repeated one first) all the same:
    every item has problems to say."""
    name = "\N{GRINNING FACE}" * rules_api.MAX_NAME_LENGTH
    width = rules_api.MAX_NAME_LENGTH
    categories = [
        "c" * width if repeated_categories else f"{j}".ljust(width, "c")
        for j in range(rules_api.MAX_CATEGORIES)
    ]
    category = {"dataType": "CATEGORICAL", "categories": categories}
    return {
        "human": {"scores": [{"name": name, **category}] * rules_api.MAX_HUMAN_SCORES},
        "external": [{"name": name, "score": {"name": name}}] * rules_api.MAX_EXTERNAL_CHANNELS,
    }


@pytest.mark.parametrize(
    ("form", "version"),
    [(STORE, VERSION), *((INLINE, version) for version in AGENT_VERSIONS)],
    ids=["as a FeedbackStore", *(f"as spec.feedback in {v}" for v in AGENT_VERSIONS)],
)
@pytest.mark.timeout(900)  # policies compile for tens of seconds on a loaded machine
def test_maximal_objects_are_judged_within_the_cost_limits(
    plane: ControlPlane, namespace: str, form: Form, version: str
) -> None:
    code, message = send(plane, namespace, form, version, maximal_spec(), "maximal")
    assert (code, message) == (201, "")
    spec = costliest_spec(repeated_categories=False)
    code, message = send(plane, namespace, form, version, spec, "costliest")
    assert code == 422
    denied = DENIED.search(message)
    assert denied is not None, message
    assert message[denied.end() :] == webhook_says_in_bytes(form, spec)
    if form is INLINE:  # no schema refuses a repeated category first
        spec = costliest_spec(repeated_categories=True)
        code, message = send(plane, namespace, form, version, spec, "repeated")
        assert code == 422
        denied = DENIED.search(message)
        assert denied is not None, message
        # Every category a repeat at the limits: over kube-apiserver's per-call cost limit, so
        # refused with its cost error instead of the list (docs/admission-policy.md).
        assert "limit exceeded" in message[denied.end() :], message
