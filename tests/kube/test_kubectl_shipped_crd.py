"""What a kubectl user sees with the shipped CRD (manifests/crd/, with CEL rules) and this webhook.

kube-apiserver runs the CRD's CEL rules before any validating webhook, so for
the cross-field rules the CRD's messages are the ones users read and the
webhook is never called (its own counter says so); it is called for what the
CRD lets through, and its warnings still reach the user. Texts are what
kubectl v1.37 printed against kube-apiserver v1.37.2 (namespace shown as
`agents`, the webhook's port as 8443).
"""

from __future__ import annotations

import pathlib

import pytest

from tests.kube.cluster import WebhookServer, install_crd, platform_today_crd, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.kube.kubectl_support import (  # noqa: F401 (fixtures)
    ACROSS,
    ADD_THUMBS,
    CHANNEL,
    CREATE_ACROSS,
    ENUMS,
    MINIMAL,
    MONITOR_WARNING,
    SHIPPED,
    TO_MONITOR_WARNING,
    TYPO,
    UPDATE_THUMBS_TWICE,
    User,
    _server,
    _user,
    _webhook,
    console,
    edit_is_reopened_then_cancelled,
    failed,
    matches_docs,
    register,
    registered_but_down,
    reviews_answered,
    stored_minimal,
    succeeded,
    webhook_call_failed,
)

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

# The CRD's CEL messages, as kube-apiserver renders them.
ACROSS_REFUSED = (
    'The FeedbackStore "duplicate-across-sources" is invalid: spec.external: Invalid value: '
    "a score name is declared by both human and an external channel; score names must be unique "
    'across all sources: "csat" is declared at spec.human.scores[1].name and again at '
    "spec.external[0].score.name\n"
)
CHANNEL_REFUSED = (
    'The FeedbackStore "duplicate-channel" is invalid: \n'
    "* spec.external: Invalid value: each external channel must declare a distinct score name: "
    '"csat" is declared at spec.external[0].score.name and again at spec.external[1].score.name\n'
    "* spec.external: Invalid value: external channel names must be unique: "
    '"csat-webhook" is declared at spec.external[0].name and again at spec.external[1].name\n'
)
NO_SOURCE_REFUSED = (
    'The FeedbackStore "typo-no-source" is invalid: spec: Required value: '
    "feedback must declare at least one source: human.scores or an external channel\n"
)
THUMBS_REFUSED = (
    'The FeedbackStore "support-feedback" is invalid: spec.human.scores: Invalid value: '
    'human score names must be unique: "thumbs" is declared at spec.human.scores[0].name and '
    "again at spec.human.scores[1].name\n"
)
# The webhook's MONITOR_WARNING is shown for the same store (it answers what the CRD lets through).
SET_MONITOR = """kubectl patch fs support-feedback --type=merge -p '{"spec":{"mode":"Monitor"}}'"""
CREATED = "feedbackstore.agents.ctxmesh.ai/support-feedback created\n"
# The CRD's CEL message for thumbs twice, as `kubectl edit` shows it in the reopened buffer.
EDIT_THUMBS_REFUSED = (
    '# * spec.human.scores: Invalid value: human score names must be unique: "thumbs" is'
    " declared at spec.human.scores[0].name and again at spec.human.scores[1].name\n"
)


@pytest.fixture(scope="module", autouse=True)
def _shipped_crd(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


@pytest.mark.usefixtures("webhook")
def test_the_crds_rules_answer_before_the_webhook(user: User, server: WebhookServer) -> None:
    before = reviews_answered(server)
    across = user.run(f"kubectl apply -f {ACROSS}")
    channel = user.run(f"kubectl apply --server-side -f {CHANNEL}")
    typo = user.run(f"kubectl apply --validate=false -f {TYPO}")
    assert reviews_answered(server) == before, "CEL refused all three; the webhook never saw them"
    assert across.printed == failed(ACROSS_REFUSED)
    assert channel.printed == failed(CHANNEL_REFUSED)
    assert typo.printed == failed(NO_SOURCE_REFUSED), "spec.humans dropped, then no source"

    created = user.run(f"kubectl apply -f {MINIMAL}")
    monitor = user.run(SET_MONITOR)
    assert reviews_answered(server) == before + 2, "what CEL lets through goes to the webhook"
    assert created.printed == succeeded(CREATED)
    assert monitor.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/support-feedback patched\n",
        TO_MONITOR_WARNING + MONITOR_WARNING,
    )

    duplicate = user.run(f"kubectl patch fs support-feedback --type=json -p '{ADD_THUMBS}'")
    assert reviews_answered(server) == before + 2
    assert duplicate.printed == failed(THUMBS_REFUSED), "no webhook call, so no Monitor warning"

    shown = console(
        [
            SHIPPED,
            across,
            channel,
            typo,
            created,
            monitor,
            "# refused by the CRD: the webhook is not called, so its Monitor warning is not shown",
            duplicate,
        ]
    )
    assert matches_docs(shown), f"docs block differs; the run printed:\n{shown}"


@pytest.mark.usefixtures("webhook")
@pytest.mark.parametrize("command", CREATE_ACROSS)
def test_every_way_of_creating_prints_the_crds_message(
    user: User, server: WebhookServer, command: str
) -> None:
    before = reviews_answered(server)
    assert user.run(command).printed == failed(ACROSS_REFUSED)
    assert reviews_answered(server) == before


@pytest.mark.usefixtures("webhook")
def test_kubectl_edit_reopens_the_buffer_with_one_comment_line_per_field(
    user: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit_is_reopened_then_cancelled(user, monkeypatch, EDIT_THUMBS_REFUSED)


@pytest.mark.usefixtures("webhook")
@pytest.mark.parametrize(("command", "add_thumbs_to_stdin"), UPDATE_THUMBS_TWICE)
def test_every_way_of_updating_prints_the_crds_message(
    user: User, server: WebhookServer, command: str, add_thumbs_to_stdin: bool
) -> None:
    stdin = stored_minimal(user, add_thumbs_to_stdin)
    before = reviews_answered(server)
    assert user.run(command, stdin).printed == failed(THUMBS_REFUSED)
    assert reviews_answered(server) == before


@pytest.mark.usefixtures("webhook")
def test_unknown_fields_are_refused_before_the_crds_rules(user: User) -> None:
    assert user.run(f"kubectl apply -f {TYPO}").printed == failed(
        f'Error from server (BadRequest): error when creating "{TYPO}": FeedbackStore in version '
        '"v1beta1" cannot be handled as a FeedbackStore: strict decoding error: unknown field '
        '"spec.humans"\n'
    )


@pytest.mark.usefixtures("webhook")
def test_schema_errors_skip_the_crds_rules_and_say_so(user: User, server: WebhookServer) -> None:
    """kube-apiserver's own note, on a field path it prints as `<nil>`; in no fixed order."""
    before = reviews_answered(server)
    enums = user.run(f"kubectl apply -f {ENUMS}")
    assert reviews_answered(server) == before
    head, *bullets = enums.stderr.splitlines()
    assert (enums.returncode, enums.stdout, head) == (
        1,
        "",
        'The FeedbackStore "wrong-case-enum" is invalid: ',
    )
    assert sorted(bullets) == [
        "* <nil>: Invalid value: null: some validation rules were not checked because the object "
        "was invalid; correct the existing errors to complete validation",
        '* spec.human.scores[0].dataType: Unsupported value: "boolean": supported values: '
        '"NUMERIC", "BOOLEAN", "CATEGORICAL"',
        '* spec.mode: Unsupported value: "enforce": supported values: "Enforce", "Monitor"',
    ]


def test_with_the_webhook_down_the_crd_still_answers_first(
    control_plane: ControlPlane, user: User, tmp_path: pathlib.Path
) -> None:
    with registered_but_down(control_plane, user, tmp_path / "down"):
        invalid = user.run(f"kubectl apply -f {ACROSS}")
        valid = user.run(f"kubectl apply -f {MINIMAL}")
    assert invalid.printed == failed(ACROSS_REFUSED)
    assert valid.printed == failed(
        webhook_call_failed(MINIMAL, 5, "dial tcp 127.0.0.1:8443: connect: connection refused")
    )


def test_an_object_from_before_the_rules_can_be_labelled_deleted_and_released(
    control_plane: ControlPlane, server: WebhookServer, user: User
) -> None:
    """Created under the CRD without CEL, then the shipped CRD installed: CEL ratchets.

    kube-apiserver lets an update through when the invalid part is unchanged
    (with its own warning) and refuses one that touches the node carrying the
    rule; the webhook adds its warnings.
    """
    legacy = user.document(ACROSS)
    legacy["metadata"]["finalizers"] = ["example.com/hold"]
    try:
        install_crd(control_plane, platform_today_crd())
        assert user.run("kubectl create -f -", legacy).returncode == 0
    finally:
        install_crd(control_plane, shipped_crd())
    with register(control_plane, server.url, server.ca_pem, user.namespace):
        before = reviews_answered(server)
        labelled = user.run("kubectl label fs duplicate-across-sources team=support")
        assert reviews_answered(server) == before, "spec unchanged: not sent (matchConditions)"
        changed = user.run(
            "kubectl patch fs duplicate-across-sources --type=merge "
            """-p '{"spec":{"mode":"Monitor"}}'"""
        )
        deleted = user.run("kubectl delete fs duplicate-across-sources --wait=false")
        released = user.run(
            "kubectl patch fs duplicate-across-sources --type=json "
            """-p '[{"op":"remove","path":"/metadata/finalizers"}]'"""
        )
    cel = "Warning: " + ACROSS_REFUSED.split(" is invalid: ", 1)[1]
    assert labelled.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/duplicate-across-sources labeled\n", cel
    )
    assert changed.printed == failed(ACROSS_REFUSED), "a change under the rule's node is judged"
    assert deleted.printed == succeeded(
        'feedbackstore.agents.ctxmesh.ai "duplicate-across-sources" deleted from agents namespace\n'
    )
    assert released.printed == succeeded(
        "feedbackstore.agents.ctxmesh.ai/duplicate-across-sources patched\n", cel
    ), "being deleted: not sent to the webhook (matchConditions)"
    assert user.run("kubectl get fs -o name").stdout == "", "released, so gone"
