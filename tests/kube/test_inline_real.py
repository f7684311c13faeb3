"""The inline form on a real kube-apiserver v1.37.2: AgentDeployment's
`spec.feedback`, under the tests' AgentDeployment CRD (tests/kube/agents_crd.py) in both
variants, with this webhook registered as shipped (by `url:`, every entry, test namespaces).

- Every case of the rules' corpus (tests/webhook/rules/test_verdict.py,
  tests/webhook/manifests/test_cel_rules.py, tests/webhook/manifests/test_crd.py: the cases the
  FeedbackStore real-server tests send) goes in as
  `spec.feedback` through `kubectl create --dry-run=server`, in `v1alpha1` and `v1beta1`:
  what answers (the schema, the platform's CEL, the webhook, or nobody: created) and what
  kubectl prints is recorded per case, and the webhook, when it answers, reports every
  problem of the verdict, each under `spec.feedback.`.
- An update that leaves `spec.feedback` alone is never sent to the webhook (matchConditions):
  the audit log carries no annotation of its entry for it, and the webhook counts no review.
"""

from __future__ import annotations

import concurrent.futures
import json
import pathlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.kube.agents_crd import (
    AGENT_PLURAL,
    AGENT_VERSIONS,
    NO_CEL_AGENT_CRD,
    PLATFORM_AGENT_CRD,
    PLATFORM_RULES,
    agent,
    agent_crd_installed,
    agent_crd_text,
    install_agent_crd,
)
from tests.kube.cluster import (
    TEST_LABEL,
    WebhookServer,
    eventually,
    install_crd,
    new_namespace,
    platform_today_crd,
    registered,
    registration,
    wait_webhook_live,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.kubectl_support import (
    Shown,
    User,
    console,
    failed,
    matches_docs,
    reviews_answered,
    succeeded,
)
from tests.webhook.manifests.test_cel_rules import CROSS_FIELD_CASES
from tests.webhook.manifests.test_crd import PER_FIELD_CASES
from tests.webhook.rules.test_verdict import CASES
from webhook.admission.denial import invalid_status
from webhook.admission.warnings import bounded
from webhook.install import AGENT_ENTRY as AGENT_WEBHOOK_NAME
from webhook.rules.forms import INLINE

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

PLATFORM_MESSAGES = tuple(message for _, message in PLATFORM_RULES)
DEPRECATED = re.compile(r"^Warning: agents\.ctxmesh\.ai/v1alpha1 AgentDeployment is deprecated.*$")


def test_the_crd_fixtures_are_what_agents_crd_makes() -> None:
    for path, cel in ((PLATFORM_AGENT_CRD, True), (NO_CEL_AGENT_CRD, False)):
        assert path.read_text() == agent_crd_text(cel=cel), (
            "regenerate: python -c 'from tests.kube.agents_crd import write_agent_crds; "
            "write_agent_crds()'"
        )


@pytest.fixture(scope="module", name="server")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path_factory.mktemp("inline-webhook")) as server:
        yield server


@pytest.fixture(scope="module", name="namespace")
def _namespace(control_plane: ControlPlane, server: WebhookServer) -> Iterator[str]:
    """A test namespace with the shipped registration (every entry) pointed at `server`; the
    FeedbackStore CRD without CEL (the registration's liveness probe is a store), and the
    AgentDeployment CRD for the module, removed after it."""
    install_crd(control_plane, platform_today_crd())
    namespace = new_namespace(control_plane, "inline")
    document = registration(f"inline-{uuid.uuid4().hex[:8]}", server.url, server.ca_pem)
    assert [entry["name"] for entry in document["webhooks"]][-1] == AGENT_WEBHOOK_NAME
    with (
        agent_crd_installed(control_plane, NO_CEL_AGENT_CRD),
        registered(control_plane, document, namespace),
    ):
        yield namespace


# ---------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Answered:
    """What kubectl printed for one case, and who answered: created, schema, cel or webhook."""

    case: str
    version: str
    by: str
    returncode: int
    printed: str


def corpus() -> list[tuple[str, Any]]:
    cases = [(f"verdict: {name}", spec) for name, spec, _ in CASES]
    cases += [(f"cel: {name}", spec) for name, spec, _ in CROSS_FIELD_CASES]
    cases += [(f"schema: {name}", spec) for name, spec, _ in PER_FIELD_CASES]
    return [(name, spec) for name, spec in cases if spec is not None]


def expected_denial(name: str, spec: Any) -> str:
    """What kubectl prints for the webhook's denial: every problem, under spec.feedback."""
    status = invalid_status(name, INLINE.verdict({"spec": {"feedback": spec}}), INLINE)
    lines = [f"{c['field']}: {c['message']}" for c in status["details"]["causes"]]
    head = f'The AgentDeployment "{name}" is invalid: '
    if len(lines) == 1:
        return head + lines[0] + "\n"
    return head + "\n" + "".join(f"* {line}\n" for line in lines)


def expected_warnings(spec: Any) -> list[str]:
    verdict = INLINE.verdict({"spec": {"feedback": spec}})
    return [f"Warning: {w}" for w in bounded(map(str, verdict.warnings))]


def cel_refusal(name: str, message: str) -> str:
    """kube-apiserver's text for one failed CEL rule on spec.feedback (a rule's `message`)."""
    return f'The AgentDeployment "{name}" is invalid: spec.feedback: Invalid value: {message}\n'


def send(
    plane: ControlPlane, namespace: str, version: str, name: str, spec: Any
) -> tuple[int, str, list[str]]:
    """`kubectl create --dry-run=server` of the case as an agent: (exit code, errors, warnings)."""
    body = agent(name, spec, version, image="support-agent:1.4")
    result = plane.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", stdin=json.dumps(body)
    )
    lines = result.stderr.splitlines()
    warnings = [
        line for line in lines if line.startswith("Warning: ") and not DEPRECATED.match(line)
    ]
    errors = "".join(f"{line}\n" for line in lines if not line.startswith("Warning: "))
    return result.returncode, errors, warnings


def judge(name: str, spec: Any, sent: tuple[int, str, list[str]], called: dict[str, str]) -> str:
    """Who answered the case: the webhook when the audit log says kube-apiserver called it
    (`called`: its entry's annotations on the request), else the CEL or the schema, told
    apart by what kubectl printed (the schema's `Too many` reads as the webhook's would)."""
    code, errors, warnings = sent
    verdict = INLINE.verdict({"spec": {"feedback": spec}})
    verdict_key = f"{AGENT_WEBHOOK_NAME}/verdict"
    if code == 0:
        assert verdict.valid, (name, verdict)
        assert called.get(verdict_key) == "allowed", (name, called)
        assert warnings == expected_warnings(spec), "the webhook's warnings, all of them"
        return "created"
    assert not verdict.valid, (name, errors)
    if called:
        assert called[verdict_key] == "denied", (name, called)
        assert errors == expected_denial(name, spec), "every problem, under spec.feedback"
        return "webhook"
    cel = [m for m in PLATFORM_MESSAGES if errors == cel_refusal(name, m)]
    if cel:
        first = next(p.detail for p in verdict.problems if p.detail.startswith(PLATFORM_MESSAGES))
        assert first.startswith(cel[0]), "the platform's first failure is the verdict's first"
        return "cel"
    assert "spec.feedback" in errors, errors
    return "schema"


def run_corpus(plane: ControlPlane, namespace: str) -> list[Answered]:
    cases = corpus()
    run = uuid.uuid4().hex[:4]
    jobs = [
        (version, f"c{run}-{index:03d}-{version}", case, spec)
        for version in AGENT_VERSIONS
        for index, (case, spec) in enumerate(cases)
    ]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        sent = list(pool.map(lambda job: send(plane, namespace, *job[:2], job[3]), jobs))
    calls = webhook_calls(plane, namespace, f"c{run}-")
    answered = []
    for (version, name, case, spec), printed in zip(jobs, sent, strict=True):
        by = judge(name, spec, printed, calls.get(name, {}))
        answered.append(Answered(case, version, by, printed[0], printed[1]))
    return answered


def webhook_calls(plane: ControlPlane, namespace: str, prefix: str) -> dict[str, dict[str, str]]:
    """The agent entry's annotations on each audited create of an agent named `prefix...`: only
    the requests kube-apiserver sent to the webhook carry them (written before it answered:
    the audit log is blocking)."""
    calls: dict[str, dict[str, str]] = {}
    for line in plane.audit_log.read_text().splitlines():
        event: dict[str, Any] = json.loads(line)
        ref = event.get("objectRef", {})
        name = ref.get("name", "")
        if (event["stage"], event["verb"], ref.get("resource"), ref.get("namespace")) == (
            "ResponseComplete",
            "create",
            AGENT_PLURAL,
            namespace,
        ) and name.startswith(prefix):
            annotations = event.get("annotations", {})
            found = {k: v for k, v in annotations.items() if k.startswith(f"{AGENT_WEBHOOK_NAME}/")}
            if found:
                calls[name] = found
    return calls


CORPUS_BLOCK = (
    "# the rules' corpus as spec.feedback, each case in v1alpha1 and v1beta1 (the same answer"
    " in both): who answered"
)
_ANSWERERS = (
    ("created", "created"),
    ("schema", "refused by the schema"),
    ("cel", "refused by the platform's CEL (its first failure)"),
    ("webhook", "denied by the webhook (every problem)"),
)


@pytest.mark.timeout(600)  # four kubectl runs of each of ~190 cases: two CRDs, two versions
def test_every_corpus_case_as_spec_feedback_is_answered_alike_in_both_versions(
    control_plane: ControlPlane, namespace: str, tmp_path: pathlib.Path
) -> None:
    """Without CEL the schema or the webhook answers; with the platform's CEL, its first
    failure comes before the webhook, which still denies what the CEL lets through."""
    plain = run_corpus(control_plane, namespace)
    install_agent_crd(control_plane, PLATFORM_AGENT_CRD)
    try:
        with_cel = run_corpus(control_plane, namespace)
    finally:
        install_agent_crd(control_plane, NO_CEL_AGENT_CRD)
    lines = [CORPUS_BLOCK]
    for variant, answered in (("without CEL", plain), ("with the platform's CEL", with_cel)):
        record(tmp_path, variant, answered)
        cases = answered_alike(answered)
        counts = [
            f"{sum(1 for by in cases.values() if by == key)} {said}" for key, said in _ANSWERERS
        ]
        lines.append(f"{variant}: {len(cases)} cases: {', '.join(counts)}")
    assert {by for by in answered_alike(plain).values()} == {"created", "schema", "webhook"}
    assert {by for by in answered_alike(with_cel).values()} == {
        "created",
        "schema",
        "cel",
        "webhook",
    }
    assert matches_docs(console(lines), SECTION), console(lines)


def answered_alike(answered: list[Answered]) -> dict[str, str]:
    """Who answered each case, asserting that both versions printed the same."""
    seen: dict[str, set[tuple[str, int, str]]] = {}
    for a in answered:
        printed = a.printed.replace("v1alpha1", "v1beta1")
        seen.setdefault(a.case, set()).add((a.by, a.returncode, printed))
    assert all(len(each) == 1 for each in seen.values()), "both versions print the same"
    return {case: next(iter(each))[0] for case, each in seen.items()}


def record(directory: pathlib.Path, variant: str, answered: list[Answered]) -> None:
    """Every case's answer, kept in the test's directory (a JSON line each) for a reader."""
    path = directory / f"inline-{variant.replace(' ', '-')}.jsonl"
    path.write_text("".join(json.dumps(a.__dict__) + "\n" for a in answered))


# ---------------------------------------------------------------- what users see

SECTION = ("inline-form.md", "## What an agent's author sees (real kube-apiserver v1.37.2)")
NO_CEL_BLOCK = "# the platform's AgentDeployment CRD without CEL rules, this webhook registered"
CEL_BLOCK = (
    "# the platform's CRD with its four CEL rules: its first failure only; what CEL lets through,"
    " the webhook judges"
)
UPDATE_BLOCK = (
    "# updates: a change of spec.feedback is judged and said; any other change never reaches"
    " the webhook"
)
FEEDBACK = {
    "mode": "Enforce",
    "human": {
        "scores": [
            {"name": "thumbs", "dataType": "BOOLEAN"},
            {"name": "tone", "dataType": "CATEGORICAL"},
        ]
    },
    "external": [{"name": "csat-webhook", "score": {"name": "csat"}}],
}
# Three problems: two of the platform's invariants (its CEL says the first) and a channel name.
INVALID_FEEDBACK = {
    "human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]},
    "external": [
        {"name": "csat-webhook", "score": {"name": "csat"}},
        {"name": "csat-webhook", "score": {"name": "thumbs"}},
    ],
}
CHANNELS_FEEDBACK = {
    "human": {"scores": [{"name": "thumbs"}]},
    "external": [
        {"name": "csat-webhook", "score": {"name": "csat"}},
        {"name": "csat-webhook", "score": {"name": "nps"}},
    ],
}


def staged(user: User, file: str, name: str, feedback: Any, version: str = "v1beta1") -> list[str]:
    """Write an agent to `file` in the user's directory; the console lines that show it."""
    document = agent(name, feedback, version, image="ghcr.io/ctxmesh/support-agent:1.4", replicas=2)
    text = yaml.safe_dump(document, sort_keys=False)
    (user.workdir / file).write_text(text)
    return [f"$ cat {file}", *text.splitlines()]


@pytest.fixture(name="user")
def _user(control_plane: ControlPlane, namespace: str, tmp_path: pathlib.Path) -> User:
    """A kubectl user in a namespace of its own under the module's registration."""
    own = new_namespace(control_plane, "inline-user")
    user = User(control_plane, own, tmp_path / "user")
    return user


def denial(name: str, spec: Any) -> str:
    return expected_denial(name, spec)


def test_what_an_agents_author_sees_without_cel(user: User) -> None:
    shown: list[Shown] = [NO_CEL_BLOCK]
    shown += staged(user, "support-agent.yaml", "support-agent", FEEDBACK)
    created = user.run("kubectl apply -f support-agent.yaml")
    assert created.printed == succeeded(
        "agentdeployment.agents.ctxmesh.ai/support-agent created\n",
        "".join(f"{w}\n" for w in expected_warnings(FEEDBACK)),
    )
    shown += [created, *staged(user, "billing-agent.yaml", "billing-agent", INVALID_FEEDBACK)]
    refused = user.run("kubectl apply -f billing-agent.yaml")
    assert refused.printed == failed(denial("billing-agent", INVALID_FEEDBACK))
    shown.append(refused)
    assert matches_docs(console(shown), SECTION), console(shown)


def test_what_an_agents_author_sees_with_the_platforms_cel(
    control_plane: ControlPlane, user: User
) -> None:
    install_agent_crd(control_plane, PLATFORM_AGENT_CRD)
    try:
        shown: list[Shown] = [CEL_BLOCK]
        shown += staged(user, "billing-agent.yaml", "billing-agent", INVALID_FEEDBACK)
        first = user.run("kubectl apply -f billing-agent.yaml")
        assert first.printed == failed(cel_refusal("billing-agent", PLATFORM_MESSAGES[1]))
        shown += [
            first,
            *staged(user, "billing-agent.yaml", "billing-agent", CHANNELS_FEEDBACK, "v1alpha1"),
        ]
        second = user.run("kubectl apply -f billing-agent.yaml")
        deprecated = (
            "Warning: agents.ctxmesh.ai/v1alpha1 AgentDeployment is deprecated; use "
            "agents.ctxmesh.ai/v1beta1 AgentDeployment\n"
        )
        assert second.printed == failed(deprecated + denial("billing-agent", CHANNELS_FEEDBACK))
        shown.append(second)
    finally:
        install_agent_crd(control_plane, NO_CEL_AGENT_CRD)
    assert matches_docs(console(shown), SECTION), console(shown)


# FEEDBACK with `thumbs` renamed to `thumbs-up`.
RENAMED = {
    "mode": "Enforce",
    "human": {
        "scores": [
            {"name": "thumbs-up", "dataType": "BOOLEAN"},
            {"name": "tone", "dataType": "CATEGORICAL"},
        ]
    },
    "external": [{"name": "csat-webhook", "score": {"name": "csat"}}],
}


def test_what_an_agents_author_sees_on_update(user: User, server: WebhookServer) -> None:
    staged(user, "support-agent.yaml", "support-agent", FEEDBACK)
    user.run("kubectl apply -f support-agent.yaml")
    shown: list[Shown] = [UPDATE_BLOCK]
    before = reviews_answered(server)
    patch = json.dumps({"spec": {"feedback": RENAMED}}, separators=(",", ":"))
    renamed = user.run(f"kubectl patch agentdeployment support-agent --type=merge -p '{patch}'")
    assert reviews_answered(server) == before + 1
    assert renamed.printed == succeeded(
        "agentdeployment.agents.ctxmesh.ai/support-agent patched\n",
        'Warning: score "thumbs" renamed to "thumbs-up" in human: the gateway rejects "thumbs" '
        "(422) from now on\n" + "".join(f"{w}\n" for w in expected_warnings(RENAMED)),
    )
    scaled = user.run(
        """kubectl patch agentdeployment support-agent --type=merge -p '{"spec":{"replicas":3}}'"""
    )
    labelled = user.run("kubectl label agentdeployment support-agent team=support")
    assert reviews_answered(server) == before + 1, "neither reached the webhook"
    assert scaled.printed == succeeded("agentdeployment.agents.ctxmesh.ai/support-agent patched\n")
    assert labelled.printed == succeeded(
        "agentdeployment.agents.ctxmesh.ai/support-agent labeled\n"
    )
    shown += [renamed, scaled, labelled]
    assert matches_docs(console(shown), SECTION), console(shown)


# ---------------------------------------------------------------- what is never sent (audit)


def agent_webhook_annotations(
    plane: ControlPlane, verb: str, namespace: str, name: str, count: int
) -> list[dict[str, str]]:
    """The annotations of the agent entry on each of the first `count` completed audit events of
    `verb` on agent `name`, in order (kube-apiserver writes them before it answers: blocking)."""

    def find() -> list[dict[str, str]] | None:
        found = []
        for line in plane.audit_log.read_text().splitlines():
            event: dict[str, Any] = json.loads(line)
            ref = event.get("objectRef", {})
            if (
                event["stage"],
                event["verb"],
                ref.get("resource"),
                ref.get("namespace"),
                ref.get("name"),
            ) == ("ResponseComplete", verb, AGENT_PLURAL, namespace, name):
                annotations = event.get("annotations", {})
                found.append(
                    {k: v for k, v in annotations.items() if k.startswith(f"{AGENT_WEBHOOK_NAME}/")}
                )
        return found if len(found) >= count else None

    found = eventually(find, what=f"{count} audit events of {verb} {namespace}/{name}")
    assert found is not None
    return found[:count]


@pytest.mark.usefixtures("namespace")  # the AgentDeployment CRD and the registration
def test_an_agent_update_leaving_spec_feedback_alone_is_never_sent_to_the_webhook(
    control_plane: ControlPlane, server: WebhookServer
) -> None:
    """Proven by the audit log (no annotation of the agent entry on those requests) and the
    webhook's own count, on an agent whose feedback is invalid, created before the webhook
    covered its namespace: the webhook would have said so in a warning, had it been called."""
    plane = control_plane
    namespace = f"inline-legacy-{uuid.uuid4().hex[:6]}"
    plane.kubectl("create", "namespace", namespace, check=True)
    legacy = agent("legacy-agent", INVALID_FEEDBACK, image="support-agent:1.3", replicas=1)
    plane.kubectl("create", "-n", namespace, "-f", "-", stdin=json.dumps(legacy), check=True)
    plane.kubectl("label", "namespace", namespace, f"{TEST_LABEL}=on", check=True)
    wait_webhook_live(plane, namespace)

    def kubectl(*args: str) -> str:
        result = plane.kubectl(*args, "-n", namespace, check=True)
        return result.stderr

    before = reviews_answered(server)
    nulled = {**agent("nulled-agent", image="support-agent:1.4"), "spec": {"feedback": None}}
    outputs = [
        # a null is pruned before admission: no spec.feedback, not sent
        plane.kubectl(
            "create", "-n", namespace, "-f", "-", stdin=json.dumps(nulled), check=True
        ).stderr,
        kubectl(
            "patch",
            "agentdeployment",
            "legacy-agent",
            "--type=merge",
            "-p",
            '{"spec":{"replicas":3,"image":"support-agent:1.4"}}',
        ),
        kubectl("label", "agentdeployment", "legacy-agent", "team=support"),
        kubectl(
            "patch",
            "agentdeployment",
            "legacy-agent",
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":["ctxmesh.ai/test-hold"]}}',
        ),
        kubectl("delete", "agentdeployment", "legacy-agent", "--wait=false"),
        # being deleted: even a change of spec.feedback is not sent
        kubectl(
            "patch",
            "agentdeployment",
            "legacy-agent",
            "--type=merge",
            "-p",
            json.dumps({"spec": {"feedback": CHANNELS_FEEDBACK}}),
        ),
        kubectl(
            "patch",
            "agentdeployment",
            "legacy-agent",
            "--type=merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
        ),
    ]
    assert reviews_answered(server) == before
    assert outputs == [""] * len(outputs), "no warning: the webhook never saw them"
    patches = agent_webhook_annotations(plane, "patch", namespace, "legacy-agent", 5)
    assert patches == [{}] * 5
    assert agent_webhook_annotations(plane, "delete", namespace, "legacy-agent", 1) == [{}]
    assert agent_webhook_annotations(plane, "create", namespace, "nulled-agent", 1) == [{}]

    # the control: a change of spec.feedback on a live agent is sent, and audited
    plane.kubectl(
        "create",
        "-n",
        namespace,
        "-f",
        "-",
        check=True,
        stdin=json.dumps(agent("support-agent", FEEDBACK)),
    )
    kubectl(
        "patch",
        "agentdeployment",
        "support-agent",
        "--type=merge",
        "-p",
        json.dumps({"spec": {"feedback": RENAMED}}),
    )
    assert reviews_answered(server) == before + 2
    key = f"{AGENT_WEBHOOK_NAME}/verdict"
    assert agent_webhook_annotations(plane, "create", namespace, "support-agent", 1)[0][key] == (
        "allowed"
    )
    assert agent_webhook_annotations(plane, "patch", namespace, "support-agent", 1)[0][key] == (
        "allowed"
    )
