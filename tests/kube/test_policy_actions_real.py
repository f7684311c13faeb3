"""The ValidatingAdmissionPolicies' Warn and Audit actions and their UPDATE ratchet on a real
kube-apiserver, with no webhook registered: what a user sees under each action.

A plane of its own, with the platform's CRDs as tests/kube/test_policy_real.py has them (a
FeedbackStore CRD without CEL, an AgentDeployment CRD with an open `spec`): the policies match
every namespace but the registration's excluded ones, so they judge no other module's objects.
kube-apiserver compiles a policy when it is created, tens of seconds under load. Audit's policies
are Deny's (the action lives in the binding), so going between those two updates the bindings
alone; Warn's policies say each problem in a validation of its own, so going to or from Warn
replaces the policies. Every switch is waited on by what the new action does to a probe.

- Warn: an invalid create and update are admitted, and kubectl prints one warning per problem,
  kube-apiserver's prefix (PREFIX) before the webhook's words; past WARNINGS_SHOWN problems the
  last warning counts the rest. Once the warnings together pass WARNINGS_TOTAL characters
  kube-apiserver cuts each to WARNING_CUT: the policy shows no more than fit whole.
- Audit: an invalid create and update are admitted without a warning; their audit events carry
  the denial the policy would give, as JSON, under AUDIT_KEY.
- Deny, the ratchet: an update that leaves an invalid declaration as it was passes (a label; an
  agent's image); one that changes it and leaves it invalid is refused with every problem; one
  that makes it valid passes.
"""

from __future__ import annotations

import json
import pathlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.agents_crd import AGENT_GROUP, AGENT_KIND, AGENT_PLURAL, AGENT_VERSIONS, agent
from tests.kube.cluster import (
    VERSION,
    api_client,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    platform_today_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.test_policy_real import REGISTRATION, apply, open_agent_crd
from tests.webhook.manifests.test_policy import holding, webhook_says_in_bytes
from webhook.manifests import policy
from webhook.rules import messages
from webhook.rules.forms import INLINE, STORE, Form

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

# What kube-apiserver (v1.37.2) puts before a failed validation's message under Warn, and
# kubectl before each warning.
PREFIX: Final = (
    "Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{binding}': "
)
KUBECTL_WARNING: Final = "Warning: "
# ... and before the denial message under Deny.
DENIED: Final = "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: "
# kube-apiserver's warning budget: past this many characters in all, every warning is cut.
WARNINGS_TOTAL: Final = 4096
WARNING_CUT: Final = 256
# The audit annotation of a policy's failures under Audit.
AUDIT_KEY: Final = "validation.policy.admission.k8s.io/validation_failure"
# A warning as an HTTP header: code 299, no agent, the text quoted with `\` escapes.
HEADER: Final = re.compile(r'299 - "((?:[^"\\]|\\.)*)"')


def score(name: str) -> dict[str, str]:
    """A score with its data type given (the FeedbackStore CRD would default it), so that an
    admitted declaration reads back as sent."""
    return {"name": name, "dataType": "NUMERIC"}


# Three problems the CRDs' schemas let through (only the policies refuse them), each at its own
# path; a probe with one problem could not tell Warn's policies from Deny's.
INVALID: Final = {
    "mode": "Enforce",
    "human": {"scores": [score("thumbs"), score("thumbs"), score("tone")]},
    "external": [
        {"name": "csat", "score": score("tone")},
        {"name": "csat", "score": score("nps")},
    ],
}
# Changed, and still invalid: one more repeat.
STILL_INVALID: Final = {
    **INVALID,
    "human": {"scores": [*INVALID["human"]["scores"], score("thumbs")]},
}
VALID: Final = {"mode": "Enforce", "human": {"scores": [score("thumbs")]}}
# More problems than warnings shown.
MANY: Final = {"mode": "Enforce", "human": {"scores": [{"name": "s"}] * 20}}


@dataclass(frozen=True)
class Target:
    """What a policy judges: a FeedbackStore, or an AgentDeployment's spec.feedback in a version."""

    form: Form
    version: str

    @property
    def policy(self) -> str:
        (entry,) = [name for name, form in policy.ENTRIES.items() if form is self.form]
        return policy.policy_name(entry)

    @property
    def group(self) -> str:
        return self.form.group

    @property
    def plural(self) -> str:
        return self.form.plural

    @property
    def resource(self) -> str:
        """kubectl's name of the resource, in this version."""
        return f"{self.plural}.{self.version}.{self.group}"

    def body(self, name: str, spec: Any) -> dict[str, Any]:
        if self.form is STORE:
            return feedbackstore(name, spec)
        return agent(name, spec, self.version, image="support-agent:1.4")

    def with_declaration(self, obj: dict[str, Any], spec: Any) -> dict[str, Any]:
        if self.form is STORE:
            return {**obj, "spec": spec}
        return {**obj, "spec": {**obj["spec"], "feedback": spec}}

    def declaration(self, obj: dict[str, Any]) -> Any:
        return self.form.declaration(obj)


TARGETS: Final = (Target(STORE, VERSION), *(Target(INLINE, v) for v in AGENT_VERSIONS))
IDS: Final = ("a FeedbackStore", *(f"spec.feedback in {v}" for v in AGENT_VERSIONS))
each_target = pytest.mark.parametrize("target", TARGETS, ids=IDS)


# ---------------------------------------------------------------- what each action shows


def kept_by_kube_apiserver(warnings: list[str]) -> list[str]:
    """The warnings kube-apiserver sends: all of them while they fit WARNINGS_TOTAL characters,
    else each cut to WARNING_CUT, as many as fit."""
    if sum(map(len, warnings)) <= WARNINGS_TOTAL:
        return warnings
    kept: list[str] = []
    for warning in warnings:
        if sum(map(len, kept)) >= WARNINGS_TOTAL:
            break
        kept.append(warning[:WARNING_CUT])
    return kept


def warnings_for(target: Target, spec: Any) -> list[str]:
    """The lines kubectl prints under Warn: each problem as the webhook says it, the last of
    WARNINGS_SHOWN counting the rest."""
    verdict = target.form.verdict(holding(target.form, spec))
    problems = [str(problem) for problem in verdict.problems]
    shown = policy.WARNINGS_SHOWN
    if verdict.problem_count > shown:
        rest = messages.more_problems(verdict.problem_count - (shown - 1))
        problems = [*problems[: shown - 1], rest]
    prefix = PREFIX.format(policy=target.policy, binding=target.policy)
    return [KUBECTL_WARNING + w for w in kept_by_kube_apiserver([prefix + p for p in problems])]


def audited_for(target: Target, spec: Any) -> list[dict[str, Any]]:
    """The audit annotation's value under Audit: the policy's one failure, its message the
    denial Deny would give."""
    return [
        {
            "message": webhook_says_in_bytes(target.form, spec),
            "policy": target.policy,
            "binding": target.policy,
            "expressionIndex": 0,
            "validationActions": ["Audit"],
        }
    ]


def policy_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(KUBECTL_WARNING + "Validation")]


def audit_annotations(plane: ControlPlane, verb: str, target: Target, namespace: str,
                      name: str) -> dict[str, str]:  # fmt: skip
    """The annotations of the completed audit event of `verb` on the object `name` (waited on:
    the client may have its answer before the event is written)."""

    def find() -> tuple[dict[str, str]] | None:  # found, even with no annotation
        for line in plane.audit_log.read_text().splitlines():
            event: dict[str, Any] = json.loads(line)
            ref = event.get("objectRef", {})
            if (
                event["stage"] == "ResponseComplete"
                and event["verb"] == verb
                and ref.get("resource") == target.plural
                and ref.get("namespace") == namespace
                and ref.get("name") == name
            ):
                return (event.get("annotations", {}),)
        return None

    (found,) = eventually(find, timeout=30, what=f"audit event of {verb} {name}")
    return found


# ---------------------------------------------------------------- the plane and its actions


@dataclass
class Guard:
    """The policies on the plane under one action at a time."""

    plane: ControlPlane
    namespace: str
    action: str | None = None
    policies: list[dict[str, Any]] = field(default_factory=list)

    def use(self, action: str) -> None:
        if action == self.action:
            return
        self.action = None  # until the probes show `action` in effect
        documents = policy.manifests(REGISTRATION, action)
        policies = [d for d in documents if d["kind"] == "ValidatingAdmissionPolicy"]
        if policies != self.policies:
            apply(self.plane, *policies)
            self.policies = policies
        for binding in (d for d in documents if d["kind"] == "ValidatingAdmissionPolicyBinding"):
            self.plane.kubectl(
                "apply", "--server-side", "--force-conflicts", "--field-manager=kube-tests",
                "-f", "-", stdin=yaml.safe_dump(binding), check=True,
            )  # fmt: skip
        for target in TARGETS:
            eventually(
                lambda target=target: self.probe(action, target),
                timeout=240,
                interval=1,
                what=f"{action} in effect for {target.resource}",
            )
        self.action = action

    def probe(self, action: str, target: Target) -> bool:
        """A server dry-run of INVALID shows `action`'s whole answer."""
        name = f"probe-{uuid.uuid4().hex[:8]}"
        result = kubectl_send(self.plane, "create", "--dry-run=server", namespace=self.namespace,
                              body=target.body(name, INVALID))  # fmt: skip
        if action == "Deny":
            return result.returncode == 1 and result.stderr == denial(target, name, INVALID)
        if result.returncode != 0:
            return False
        warned = policy_warnings(result.stderr)
        if action == "Warn":
            return warned == warnings_for(target, INVALID)
        found = audit_annotations(self.plane, "create", target, self.namespace, name)
        audited = json.loads(found.get(AUDIT_KEY, "null"))
        return not warned and audited == audited_for(target, INVALID)


def denial(target: Target, name: str, spec: Any) -> str:
    """What kubectl prints when a policy denies: kube-apiserver's `denied request: ` before the
    webhook's denial message, in a 422 Invalid whose one cause names no field."""
    said = DENIED.format(policy=target.policy, binding=target.policy)
    said += str(webhook_says_in_bytes(target.form, spec))
    line = f'The {target.plural} "{name}" is invalid: : {said}'
    return "".join(f"{warning}\n" for warning in other_warnings(target)) + f"{line}\n"


def kubectl_send(plane: ControlPlane, *args: str, namespace: str, body: dict[str, Any]) -> Any:
    return plane.kubectl(*args, "-n", namespace, "-f", "-", stdin=json.dumps(body))


@pytest.fixture(scope="module", name="plane")
def _plane(
    control_plane_binaries: pathlib.Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControlPlane]:
    plane = ControlPlane(
        control_plane_binaries, tmp_path_factory.mktemp("policy-actions"), namespace_controller=True
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


@pytest.fixture(scope="module", name="guard")
def _guard(plane: ControlPlane) -> Guard:
    return Guard(plane, new_namespace(plane, "actions"))


def custom(plane: ControlPlane) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client(plane))


def read(guard: Guard, target: Target, name: str) -> dict[str, Any]:
    found: dict[str, Any] = custom(guard.plane).get_namespaced_custom_object(
        target.group, target.version, guard.namespace, target.plural, name
    )
    return found


def create(guard: Guard, target: Target, name: str, spec: Any) -> Any:
    body = target.body(name, spec)
    return kubectl_send(guard.plane, "create", namespace=guard.namespace, body=body)


def replace(guard: Guard, target: Target, name: str, spec: Any) -> Any:
    """An UPDATE of the object's declaration to `spec`, all else as stored."""
    body = target.with_declaration(read(guard, target, name), spec)
    return kubectl_send(guard.plane, "replace", namespace=guard.namespace, body=body)


def label(guard: Guard, target: Target, name: str) -> Any:
    """An UPDATE (a patch) that leaves the declaration as it was."""
    ref = f"{target.resource}/{name}"
    return guard.plane.kubectl("label", "-n", guard.namespace, ref, "team=support")


def other_warnings(target: Target) -> list[str]:
    """kube-apiserver's warnings that are not the policy's: a deprecated version's."""
    if target.form is INLINE and target.version != AGENT_VERSIONS[-1]:
        served = f"{AGENT_GROUP}/{AGENT_VERSIONS[-1]} {AGENT_KIND}"
        deprecated = f"{AGENT_GROUP}/{target.version} {AGENT_KIND}"
        return [f"{KUBECTL_WARNING}{deprecated} is deprecated; use {served}"]
    return []


# ---------------------------------------------------------------- Warn


@each_target
@pytest.mark.timeout(900)  # policies compile for tens of seconds on a loaded machine
def test_under_warn_an_invalid_create_and_update_are_admitted_with_each_problem_a_warning(
    guard: Guard, target: Target
) -> None:
    guard.use("Warn")
    name = f"warned-{uuid.uuid4().hex[:6]}"
    created = create(guard, target, name, INVALID)
    assert created.returncode == 0, created.stderr
    assert created.stderr.splitlines() == other_warnings(target) + warnings_for(target, INVALID)
    replaced = replace(guard, target, name, STILL_INVALID)
    assert replaced.returncode == 0, replaced.stderr
    assert replaced.stderr.splitlines() == other_warnings(target) + warnings_for(
        target, STILL_INVALID
    )
    assert target.declaration(read(guard, target, name)) == STILL_INVALID
    labelled = label(guard, target, name)
    assert labelled.returncode == 0, labelled.stderr
    assert labelled.stderr.splitlines() == other_warnings(target), "the declaration is as it was"
    for verb in ("create", "update"):
        annotations = audit_annotations(guard.plane, verb, target, guard.namespace, name)
        assert AUDIT_KEY not in annotations, "Warn warns, and audits nothing"


@each_target
@pytest.mark.timeout(900)
def test_under_warn_any_client_reads_each_problem_in_a_warning_header(
    guard: Guard, target: Target
) -> None:
    guard.use("Warn")
    _, code, headers = custom(guard.plane).create_namespaced_custom_object_with_http_info(
        target.group, target.version, guard.namespace, target.plural,
        target.body(f"raw-{uuid.uuid4().hex[:6]}", INVALID), dry_run="All",
    )  # fmt: skip
    assert code == 201
    said = [HEADER.fullmatch(value) for value in headers.getlist("Warning")]
    assert all(said), headers.getlist("Warning")
    texts = [re.sub(r"\\(.)", r"\1", found.group(1)) for found in said if found]
    printed = other_warnings(target) + warnings_for(target, INVALID)
    assert texts == [line.removeprefix(KUBECTL_WARNING) for line in printed]


@each_target
@pytest.mark.timeout(900)
def test_under_warn_past_the_warnings_shown_the_last_counts_the_rest_and_none_is_cut(
    guard: Guard, target: Target
) -> None:
    guard.use("Warn")
    created = create(guard, target, f"many-{uuid.uuid4().hex[:6]}", MANY)
    assert created.returncode == 0, created.stderr
    warned = policy_warnings(created.stderr)
    assert warned == warnings_for(target, MANY)
    assert len(warned) == policy.WARNINGS_SHOWN == 10
    assert warned[-1].endswith(messages.more_problems(10)), "19 problems: 9 said, 10 counted"
    assert sum(len(w) - len(KUBECTL_WARNING) for w in warned) <= WARNINGS_TOTAL, "none cut"
    assert all(len(w) - len(KUBECTL_WARNING) > WARNING_CUT for w in warned[:-1]), "whole lines"


# ---------------------------------------------------------------- Audit


@each_target
@pytest.mark.timeout(900)
def test_under_audit_an_invalid_create_and_update_are_admitted_and_audited_with_the_denial(
    guard: Guard, target: Target
) -> None:
    guard.use("Audit")
    name = f"audited-{uuid.uuid4().hex[:6]}"
    created = create(guard, target, name, INVALID)
    assert created.returncode == 0, created.stderr
    assert created.stderr.splitlines() == other_warnings(target), "Audit warns nobody"
    replaced = replace(guard, target, name, STILL_INVALID)
    assert replaced.returncode == 0, replaced.stderr
    assert target.declaration(read(guard, target, name)) == STILL_INVALID
    assert label(guard, target, name).returncode == 0
    for verb, spec in (("create", INVALID), ("update", STILL_INVALID)):
        annotations = audit_annotations(guard.plane, verb, target, guard.namespace, name)
        assert json.loads(annotations[AUDIT_KEY]) == audited_for(target, spec)
    labelled = audit_annotations(guard.plane, "patch", target, guard.namespace, name)
    assert AUDIT_KEY not in labelled, "the declaration is as it was"


# ---------------------------------------------------------------- Deny and the UPDATE ratchet


@each_target
@pytest.mark.timeout(900)
def test_under_deny_only_an_update_that_changes_an_invalid_declaration_is_judged(
    guard: Guard, target: Target
) -> None:
    guard.use("Audit")  # the invalid object exists from before the policies denied
    name = f"ratchet-{uuid.uuid4().hex[:6]}"
    assert create(guard, target, name, INVALID).returncode == 0
    guard.use("Deny")
    ref = f"{target.resource}/{name}"
    labelled = label(guard, target, name)
    assert labelled.returncode == 0, labelled.stderr
    if target.form is INLINE:
        patched = guard.plane.kubectl(
            "patch", "-n", guard.namespace, ref, "--type=merge",
            "-p", json.dumps({"spec": {"image": "support-agent:1.5"}}),
        )  # fmt: skip
        assert patched.returncode == 0, patched.stderr
        assert read(guard, target, name)["spec"]["image"] == "support-agent:1.5"
    refused = replace(guard, target, name, STILL_INVALID)
    assert refused.returncode == 1
    assert refused.stderr == denial(target, name, STILL_INVALID)
    assert target.declaration(read(guard, target, name)) == INVALID
    fixed = replace(guard, target, name, VALID)
    assert fixed.returncode == 0, fixed.stderr
