"""What a kubectl user sees with the CRD as ctxmesh ships it today (no CEL) and this webhook.

The schema still checks types, enums and limits, but no cross-field rule: the
webhook is the only guard of those, so its own denials and warnings are what
the user reads. Every text below is what kubectl v1.37 printed against
kube-apiserver v1.37.2 (namespace shown as `agents`, the webhook's port as 8443);
`reviews_answered` tells whether kube-apiserver called the webhook at all.
"""

from __future__ import annotations

import json
import pathlib
import re
import time

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    WebhookServer,
    api_client,
    eventually,
    install_crd,
    platform_today_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.kubectl_support import (  # noqa: F401 (fixtures)
    ACROSS,
    ADD_THUMBS,
    BLOCKS,
    CHANNEL,
    CREATE_ACROSS,
    ENUMS,
    MINIMAL,
    MONITOR_WARNING,
    SHOWN_PORT,
    TO_MONITOR_WARNING,
    TODAY,
    TODAY_FAILING,
    TODAY_LEGACY,
    TYPO,
    UNKNOWN_FIELDS,
    UPDATE_THUMBS_TWICE,
    User,
    _server,
    _user,
    _webhook,
    console,
    docs_blocks,
    edit_is_reopened_then_cancelled,
    failed,
    faulty_webhook,
    matches_docs,
    register,
    registered_but_down,
    reviews_answered,
    slow_webhook,
    stored_minimal,
    succeeded,
    webhook_call_failed,
)

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

ACROSS_DENIED = (
    'The FeedbackStore "duplicate-across-sources" is invalid: spec.external[0].score.name: '
    'Duplicate value: "csat": a score name is declared by both human and an external channel; '
    "score names must be unique across all sources (first declared at spec.human.scores[1].name)\n"
)
CHANNEL_DENIED = (
    'The FeedbackStore "duplicate-channel" is invalid: \n'
    '* spec.external[1].name: Duplicate value: "csat-webhook": external channel names must be'
    " unique (first declared at spec.external[0].name)\n"
    '* spec.external[1].score.name: Duplicate value: "csat": each external channel must'
    " declare a distinct score name (first declared at spec.external[0].score.name)\n"
)
# The change-impact warning of an update that drops thumbs' `dataType: BOOLEAN`.
RETYPED = (
    'Warning: score "thumbs" dataType BOOLEAN -> NUMERIC: the gateway checks no dataType; it '
    "reads as NUMERIC in Langfuse\n"
)
THUMBS_DENIED = (
    'The FeedbackStore "support-feedback" is invalid: spec.human.scores[1].name: '
    'Duplicate value: "thumbs": human score names must be unique '
    "(first declared at spec.human.scores[0].name)\n"
)
LOWERCASE_MODE_REFUSED = (
    'The FeedbackStore "support-feedback" is invalid: spec.mode: Unsupported value: '
    '"monitor": supported values: "Enforce", "Monitor"\n'
)
NO_SOURCE_DENIED = (
    'The FeedbackStore "typo-no-source" is invalid: spec: Required value: '
    "feedback must declare at least one source: human.scores or an external channel\n"
)
STRICT_DECODING = (
    f'Error from server (BadRequest): error when creating "{TYPO}": FeedbackStore in version '
    '"v1beta1" cannot be handled as a FeedbackStore: strict decoding error: unknown field '
    '"spec.humans"\n'
)
NOT_IN_SCHEMA = (
    "Error from server: failed to create typed patch object (agents/typo-no-source; "
    "agents.ctxmesh.ai/v1beta1, Kind=FeedbackStore): .spec.humans: field not declared in schema\n"
)
SET_MODE = """kubectl patch fs support-feedback --type=merge -p '{"spec":{"mode":"%s"}}'"""
PATCHED = "feedbackstore.agents.ctxmesh.ai/support-feedback patched\n"
# The webhook's denial of thumbs twice, as `kubectl edit` shows it in the reopened buffer.
EDIT_THUMBS_DENIED = (
    '# * spec.human.scores[1].name: Duplicate value: "thumbs": human score names must be unique'
    " (first declared at spec.human.scores[0].name)\n"
)


@pytest.fixture(scope="module", autouse=True)
def _platform_today_crd(control_plane: ControlPlane) -> None:
    install_crd(control_plane, platform_today_crd())


# -- the webhook's denials and warnings reach the user ----------------------------


@pytest.mark.usefixtures("webhook")
def test_the_webhook_is_the_only_cross_field_guard(user: User, server: WebhookServer) -> None:
    before = reviews_answered(server)
    across = user.run(f"kubectl apply -f {ACROSS}")
    channel = user.run(f"kubectl apply --server-side -f {CHANNEL}")
    assert reviews_answered(server) == before + 2, "the webhook answered both"
    assert across.printed == failed(ACROSS_DENIED)
    assert channel.printed == failed(CHANNEL_DENIED), "one line per field"

    created = user.run(f"kubectl apply -f {MINIMAL}")
    assert created.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/support-feedback created\n"
    )

    before = reviews_answered(server)
    lowercase = user.run(SET_MODE % "monitor")
    assert reviews_answered(server) == before, "the schema refused it; the webhook never saw it"
    assert lowercase.printed == failed(LOWERCASE_MODE_REFUSED)

    monitor = user.run(SET_MODE % "Monitor")
    assert monitor.printed == succeeded(PATCHED, TO_MONITOR_WARNING + MONITOR_WARNING)
    duplicate = user.run(f"kubectl patch fs support-feedback --type=json -p '{ADD_THUMBS}'")
    assert duplicate.printed == failed(MONITOR_WARNING + THUMBS_DENIED), "warnings come too"

    shown = console(
        [
            TODAY,
            across,
            channel,
            created,
            "# enums and limits are in the schema: kube-apiserver answers, not the webhook",
            lowercase,
            monitor,
            duplicate,
        ]
    )
    assert matches_docs(shown), f"docs block differs; the run printed:\n{shown}"


@pytest.mark.usefixtures("webhook")
def test_api_clients_read_the_denial_with_kube_apiservers_prefix(
    control_plane: ControlPlane, user: User
) -> None:
    """kubectl prints the causes; a client printing `message` shows kube-apiserver's prefix."""
    api = k8s.CustomObjectsApi(api_client(control_plane))
    with pytest.raises(k8s.ApiException) as refused:
        api.create_namespaced_custom_object(
            GROUP, VERSION, user.namespace, PLURAL, user.document(ACROSS)
        )
    status = json.loads(str(refused.value.body))
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'admission webhook "validate.feedbackstores.agents.ctxmesh.ai" denied the request: '
        'FeedbackStore.agents.ctxmesh.ai "duplicate-across-sources" is invalid: '
        + ACROSS_DENIED.split(" is invalid: ", 1)[1].rstrip("\n")
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueDuplicate",
            "field": "spec.external[0].score.name",
            "message": 'Duplicate value: "csat": a score name is declared by both human and an'
            " external channel; score names must be unique across all sources"
            " (first declared at spec.human.scores[1].name)",
        }
    ]


@pytest.mark.usefixtures("webhook")
def test_several_schema_errors_come_in_no_fixed_order(user: User, server: WebhookServer) -> None:
    """kube-apiserver walks a schema's properties in Go map order: it varies from call to call."""
    before = reviews_answered(server)
    enums = user.run(f"kubectl apply -f {ENUMS}")
    assert reviews_answered(server) == before, "the schema refused it; the webhook never saw it"
    head, *bullets = enums.stderr.splitlines()
    assert (enums.returncode, enums.stdout, head) == (
        1,
        "",
        'The FeedbackStore "wrong-case-enum" is invalid: ',
    )
    assert sorted(bullets) == [
        '* spec.human.scores[0].dataType: Unsupported value: "boolean": supported values: '
        '"NUMERIC", "BOOLEAN", "CATEGORICAL"',
        '* spec.mode: Unsupported value: "enforce": supported values: "Enforce", "Monitor"',
    ]


@pytest.mark.usefixtures("webhook")
@pytest.mark.parametrize("command", CREATE_ACROSS)
def test_every_way_of_creating_prints_the_webhooks_denial(
    user: User, server: WebhookServer, command: str
) -> None:
    before = reviews_answered(server)
    assert user.run(command).printed == failed(ACROSS_DENIED)
    assert reviews_answered(server) == before + 1
    assert user.run("kubectl get fs -o name").stdout == "", "nothing was stored"


@pytest.mark.usefixtures("webhook")
def test_a_generate_name_create_reaches_the_webhook_with_the_generated_name(user: User) -> None:
    """kube-apiserver generates the name before validating admission, so users see that name."""
    document = user.document(ACROSS)
    del document["metadata"]["name"]
    document["metadata"]["generateName"] = "across-"
    step = user.run("kubectl create -f -", document)
    generated = re.fullmatch(
        r'The FeedbackStore "(across-[a-z0-9]{5})" is invalid: (.*)\n', step.stderr
    )
    assert generated, step.stderr
    assert generated.group(2) + "\n" == ACROSS_DENIED.split(" is invalid: ", 1)[1]


@pytest.mark.usefixtures("webhook")
def test_kubectl_edit_reopens_the_buffer_with_one_comment_line_per_field(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The edit also turns thumbs' BOOLEAN into the default NUMERIC: the webhook says so.
    edit_is_reopened_then_cancelled(user, monkeypatch, EDIT_THUMBS_DENIED, RETYPED)


@pytest.mark.usefixtures("webhook")
@pytest.mark.parametrize(("command", "add_thumbs_to_stdin"), UPDATE_THUMBS_TWICE)
def test_every_way_of_updating_prints_the_webhooks_denial(
    user: User, command: str, add_thumbs_to_stdin: bool
) -> None:
    stdin = stored_minimal(user, add_thumbs_to_stdin)
    # The merge patch writes both scores without dataType: thumbs' BOOLEAN becomes NUMERIC.
    retyped = RETYPED if "--type=merge" in command else ""
    assert user.run(command, stdin).printed == failed(retyped + THUMBS_DENIED)
    stored = user.run("kubectl get fs support-feedback -o jsonpath={.spec.human.scores[*].name}")
    assert stored.stdout == "thumbs", "the stored spec is unchanged"


@pytest.mark.usefixtures("webhook")
def test_a_merge_patch_adding_a_channel_is_judged_on_the_whole_store(user: User) -> None:
    user.run(f"kubectl apply -f {MINIMAL}")
    patch = '{"spec":{"external":[{"name":"csat-webhook","score":{"name":"thumbs"}}]}}'
    step = user.run(f"kubectl patch fs support-feedback --type=merge -p '{patch}'")
    assert step.printed == failed(
        'The FeedbackStore "support-feedback" is invalid: spec.external[0].score.name: '
        'Duplicate value: "thumbs": a score name is declared by both human and an external '
        "channel; score names must be unique across all sources "
        "(first declared at spec.human.scores[0].name)\n"
    )


# -- an object that was invalid before the webhook came ----------------------------


def test_an_object_created_before_the_webhook_can_be_labelled_deleted_and_released(
    control_plane: ControlPlane, user: User, tmp_path: pathlib.Path
) -> None:
    """The registration's matchConditions: kube-apiserver does not call the webhook
    for an UPDATE that leaves `spec` alone or of an object being deleted, nor for `status`, so
    with the webhook stopped under failurePolicy Fail these still pass, while a CREATE and a
    change of spec fail closed."""
    legacy = user.document(ACROSS)
    legacy["metadata"]["finalizers"] = ["example.com/hold"]
    created = user.run("kubectl create -f -", legacy)
    assert created.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/duplicate-across-sources created\n"
    ), "no webhook yet, no CEL: nothing guards the cross-field rules"
    with registered_but_down(control_plane, user, tmp_path / "down"):
        labelled = user.run("kubectl label fs duplicate-across-sources team=support")
        status = user.run(
            "kubectl patch fs duplicate-across-sources --subresource=status --type=merge "
            """-p '{"status":{"conditions":[]}}'"""
        )
        changed = user.run(
            SET_MODE.replace("support-feedback", "duplicate-across-sources") % "Monitor"
        )
        refused = user.run(f"kubectl create -f {MINIMAL}")
        deleted = user.run("kubectl delete fs duplicate-across-sources --wait=false")
        released = user.run(
            "kubectl patch fs duplicate-across-sources --type=json "
            """-p '[{"op":"remove","path":"/metadata/finalizers"}]'"""
        )
    assert labelled.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/duplicate-across-sources labeled\n"
    )
    assert status.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/duplicate-across-sources patched\n"
    ), "the status subresource is not matched"
    assert changed.printed == failed(
        "Error from server (InternalError): Internal error occurred: failed calling webhook "
        '"validate.feedbackstores.agents.ctxmesh.ai": failed to call webhook: Post '
        f'"https://127.0.0.1:{SHOWN_PORT}/validate?timeout=5s": dial tcp 127.0.0.1:{SHOWN_PORT}: '
        "connect: connection refused\n"
    ), "a change of spec fails closed"
    assert refused.printed == failed(
        webhook_call_failed(
            MINIMAL, 5, f"dial tcp 127.0.0.1:{SHOWN_PORT}: connect: connection refused"
        )
    ), "a CREATE fails closed"
    assert deleted.printed == succeeded(
        'feedbackstore.agents.ctxmesh.ai "duplicate-across-sources" deleted from agents namespace\n'
    ), "DELETE goes to the warning entry only, whose failurePolicy is Ignore"
    assert released.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/duplicate-across-sources patched\n"
    )
    assert user.run("kubectl get fs duplicate-across-sources").printed == failed(
        'Error from server (NotFound): feedbackstores.agents.ctxmesh.ai "duplicate-across-sources"'
        " not found\n"
    )
    shown = console([TODAY_LEGACY, labelled, status, changed, refused, deleted, released])
    assert matches_docs(shown), f"docs block differs; the run printed:\n{shown}"


# -- unknown fields: decoding comes first ----------------------------------------------


@pytest.mark.usefixtures("webhook")
def test_unknown_fields_are_refused_or_dropped_before_the_webhook(
    user: User, server: WebhookServer
) -> None:
    before = reviews_answered(server)
    strict = user.run(f"kubectl apply -f {TYPO}")
    server_side = user.run(f"kubectl apply --server-side --validate=false -f {TYPO}")
    assert reviews_answered(server) == before, "kube-apiserver refused both; no webhook call"
    assert strict.printed == failed(STRICT_DECODING)
    assert server_side.printed == failed(NOT_IN_SCHEMA), "server-side apply is always strict"

    # Not strict: the field is dropped (a warning only when asked for), and what is left
    # of the object has no source. The webhook sees that, never the typo.
    warned = user.run(f"kubectl apply --validate=warn -f {TYPO}")
    dropped = user.run(f"kubectl apply --validate=false -f {TYPO}")
    assert reviews_answered(server) == before + 2
    assert warned.printed == failed('Warning: unknown field "spec.humans"\n' + NO_SOURCE_DENIED)
    assert dropped.printed == failed(NO_SOURCE_DENIED), "dropped without a word"

    shown = console(
        [
            UNKNOWN_FIELDS,
            strict,
            server_side,
            "# with this webhook and the CRD as ctxmesh ships it today:",
            warned,
            dropped,
        ]
    )
    assert matches_docs(shown), f"docs block differs; the run printed:\n{shown}"


def test_without_the_webhook_a_dropped_typo_is_stored_as_a_store_with_no_source(
    user: User,
) -> None:
    stored = user.run(f"kubectl create --validate=false -f {TYPO}")
    assert stored.printed == succeeded("feedbackstore.agents.ctxmesh.ai/typo-no-source created\n")
    spec = user.run("kubectl get fs typo-no-source -o jsonpath={.spec}")
    assert spec.stdout == '{"mode":"Enforce"}', "defaulted, and nothing else: no source at all"


# -- a webhook that cannot answer --------------------------------------------------------


def test_a_webhook_that_is_down_or_too_slow_blocks_writes_under_fail(
    control_plane: ControlPlane, user: User, tmp_path: pathlib.Path
) -> None:
    with registered_but_down(control_plane, user, tmp_path / "down"):
        refused = user.run(f"kubectl apply -f {MINIMAL}")
    assert refused.printed == failed(
        webhook_call_failed(MINIMAL, 5, "dial tcp 127.0.0.1:8443: connect: connection refused")
    )

    delay = 5.0
    with slow_webhook(tmp_path / "slow", delay) as (url, ca, port):
        user.ports.append(port)
        with register(control_plane, url, ca, user.namespace, wait=False, timeoutSeconds=1):
            probe = f"kubectl create --dry-run=server -f {MINIMAL}"
            eventually(lambda: "deadline" in user.run(probe).stderr, what="registration live")
            started = time.monotonic()
            late = user.run(f"kubectl apply -f {MINIMAL}")
            waited = time.monotonic() - started
    assert waited < delay - 1, f"kube-apiserver gave up at timeoutSeconds, not after {waited:.1f} s"
    assert late.printed == failed(webhook_call_failed(MINIMAL, 1, "context deadline exceeded"))

    with faulty_webhook(tmp_path / "faulty") as (url, ca, port, log):
        user.ports.append(port)
        with register(control_plane, url, ca, user.namespace, wait=False):
            probe = f"kubectl create --dry-run=server -f {MINIMAL}"
            eventually(lambda: "internal error" in user.run(probe).stderr, what="registration live")
            broken = user.run(f"kubectl apply -f {MINIMAL}")
    assert broken.printed == failed(
        f'Error from server (InternalError): error when creating "{MINIMAL}": admission webhook '
        '"validate.feedbackstores.agents.ctxmesh.ai" denied the request: internal error in the '
        "webhook (RuntimeError); its log has the details\n"
    )
    errors = [json.loads(line) for line in log if '"level":"error"' in line]
    assert errors, "\n".join(log)
    assert {e["msg"] for e in errors} == {"internal error"}
    assert all("a fault injected into the verdict" in e["exception"] for e in errors)
    assert user.run("kubectl get fs -o name").stdout == "", "nothing was stored"

    shown = console(
        [
            TODAY_FAILING,
            refused,
            "# registered with timeoutSeconds: 1, answering after 5 s",
            late,
            "# failing while it judges (a fault injected into its verdict): answered with code 500",
            broken,
        ]
    )
    assert matches_docs(shown), f"docs block differs; the run printed:\n{shown}"


# -- admissionReviewVersions: [v1beta1] ----------------------------------------------------


def test_a_v1beta1_only_registration_gets_the_same_answers(
    control_plane: ControlPlane, server: WebhookServer, user: User
) -> None:
    """kube-apiserver sends v1beta1 and refuses any answer not in kind, so passing proves both."""
    url, ca = server.url, server.ca_pem
    with register(control_plane, url, ca, user.namespace, admissionReviewVersions=["v1beta1"]):
        denied = user.run(f"kubectl create -f {ACROSS}")
        created = user.run(f"kubectl create -f {MINIMAL}")
        monitor = user.run(SET_MODE % "Monitor")
    assert denied.printed == failed(ACROSS_DENIED)
    assert created.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/support-feedback created\n"
    )
    assert monitor.printed == succeeded(PATCHED, TO_MONITOR_WARNING + MONITOR_WARNING)


# -- the docs section as a whole ---------------------------------------------------------


def test_the_docs_section_holds_exactly_the_blocks_the_tests_check() -> None:
    assert [block.splitlines()[0] for block in docs_blocks()] == list(BLOCKS)
