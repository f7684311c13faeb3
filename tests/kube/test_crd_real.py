"""The shipped CRD on a real kube-apiserver v1.37.2, with no webhook registered.

What the CRD alone refuses is what users of a cluster without the webhook
see, and what everyone sees first (schema and CEL run before any webhook), so
the texts are asserted exactly as kube-apiserver answers them: the Status
`message` and `details.causes` the official client's ApiException carries,
and what `kubectl create -f -` prints. The corpus is the rules package's own
(tests/webhook/rules/test_verdict.py, tests/webhook/manifests/test_cel_rules.py,
tests/webhook/manifests/test_crd.py): on every case the real server, the verdict and the
cel-python harness agree.

kube-apiserver lists the causes of one object in no fixed order (its schema
validation walks Go maps), so several causes are compared as a set.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from tests.kube.cluster import (
    API_VERSION,
    GROUP,
    PLURAL,
    REPO,
    VERSION,
    api_client,
    eventually,
    feedbackstore,
    install_crd,
    new_namespace,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.support.crd_apiserver import CrdServer
from tests.support.rules_builders import channel, channels, human, score, scores
from tests.webhook.manifests.test_cel_rules import CROSS_FIELD_CASES
from tests.webhook.manifests.test_crd import PER_FIELD_CASES
from tests.webhook.rules.test_verdict import CASES
from webhook.manifests.cel_rules import SPEC_RULES
from webhook.manifests.crd import crd_manifest
from webhook.rules import ErrorType, messages, validate_spec
from webhook.rules import api as rules_api

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

KIND = f"{rules_api.KIND}.{GROUP}"
NOT_CHECKED = (
    "<nil>",
    "FieldValueInvalid",
    "Invalid value: null: some validation rules were not checked because the object "
    "was invalid; correct the existing errors to complete validation",
)
STRICT = "cannot be handled as a FeedbackStore: strict decoding error: "
HARNESS = CrdServer.from_crd(crd_manifest())
Cause = tuple[str, str, str]


@pytest.fixture(scope="module", autouse=True)
def _shipped(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


@pytest.fixture(scope="module")
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "crd")


@pytest.fixture(scope="module")
def api(control_plane: ControlPlane) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api_client(control_plane))


class Answer:
    """kube-apiserver's answer to one create: HTTP status, Status body or the stored object."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body

    @property
    def message(self) -> str:
        return str(self.body.get("message", ""))

    @property
    def causes(self) -> set[Cause]:
        causes = (self.body.get("details") or {}).get("causes") or ()
        return {(c.get("field", ""), c.get("reason", ""), c.get("message", "")) for c in causes}

    @property
    def fields(self) -> set[str]:
        """The fields the refusal names: cause fields, or unknown fields of a strict decode."""
        if self.status == 400:
            return set(re.findall(r'unknown field "([^"]+)"', self.message))
        return {field for field, _, _ in self.causes if field != "<nil>"}


def create(
    api: k8s.CustomObjectsApi,
    namespace: str,
    spec: Any,
    *,
    strict: bool = True,
    dry_run: bool = True,
) -> Answer:
    body = feedbackstore(f"fs-{uuid.uuid4().hex[:8]}", spec)
    extra: dict[str, str] = {"field_validation": "Strict"} if strict else {}
    if dry_run:
        extra["dry_run"] = "All"
    try:
        stored = api.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, body, **extra
        )
    except k8s.ApiException as error:
        return Answer(error.status, json.loads(error.body))
    return Answer(201, stored)


def refused(name: str, causes: set[Cause]) -> str:
    """The Status message kube-apiserver writes for one refused object with one cause."""
    ((field, _, message),) = causes
    return f'{KIND} "{name}" is invalid: {field}: {message}'


# ---------------------------------------------------------------- the CRD itself


def test_the_shipped_crd_is_established_and_keeps_every_rule_field(
    control_plane: ControlPlane,
) -> None:
    crd = k8s.ApiextensionsV1Api(api_client(control_plane)).read_custom_resource_definition(
        f"{PLURAL}.{GROUP}"
    )
    conditions = {c.type: c.status for c in crd.status.conditions}
    assert conditions["Established"] == "True"
    assert conditions["NamesAccepted"] == "True"
    served = crd.to_dict()["spec"]["versions"][0]["schema"]["open_apiv3_schema"]
    node = served["properties"]["spec"]
    for rule in SPEC_RULES:
        here = node
        for name in filter(None, rule.at.split(".")):
            here = here["properties"][name]
        stored = [
            {k: v for k, v in entry.items() if v is not None}
            for entry in here["x_kubernetes_validations"]
        ]
        expected = {
            {"messageExpression": "message_expression", "fieldPath": "field_path"}.get(k, k): v
            for k, v in rule.validation().items()
        }
        assert expected in stored


def test_the_cost_budget_is_real_an_unbounded_list_makes_the_crd_refused(
    control_plane: ControlPlane,
) -> None:
    crd = shipped_crd()
    scores_node = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    del scores_node["properties"]["human"]["properties"]["scores"]["maxItems"]
    result = control_plane.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=kube-tests",
        "-f",
        "-",
        stdin=yaml.safe_dump(crd),
    )
    assert result.returncode == 1
    assert (
        "properties[scores].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost "
        "exceeds budget by factor of" in result.stderr
    )


def test_string_of_an_int_in_a_message_is_unbounded_for_the_estimator(
    control_plane: ControlPlane,
) -> None:
    """Why cel_rules renders indexes with a digit list instead of `string(index)`."""
    crd = shipped_crd()
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["x-kubernetes-validations"][0]["messageExpression"] = "'at ' + string(1)"
    result = control_plane.kubectl(
        "apply",
        "--server-side",
        "--dry-run=server",
        "--field-manager=kube-tests",
        "-f",
        "-",
        stdin=yaml.safe_dump(crd),
    )
    assert result.returncode == 1
    assert (
        "x-kubernetes-validations[0].messageExpression: Forbidden: estimated messageExpression "
        "cost exceeds budget by factor of more than 100x" in result.stderr
    )


# ---------------------------------------------------------------- exact texts

R_INVALID, R_REQUIRED = "FieldValueInvalid", "FieldValueRequired"
DUP_HUMAN_THUMBS = (
    "spec.human.scores",
    R_INVALID,
    'Invalid value: human score names must be unique: "thumbs" is declared at '
    "spec.human.scores[0].name and again at spec.human.scores[2].name",
)
NO_SOURCE = ("spec", R_REQUIRED, f"Required value: {messages.MSG_NO_SOURCE}")
EMOJI = "\N{GRINNING FACE}"

# (id, spec, exact causes); the Status message is derived for one cause.
EXACT: list[tuple[str, Any, set[Cause]]] = [
    ("an empty spec declares no source", {}, {NO_SOURCE}),
    ("human null is no human source", {"human": None}, {NO_SOURCE}),
    ("external null and an empty list are no source", {"external": []}, {NO_SOURCE}),
    (
        "a missing spec is a bare Required value",
        None,
        {("spec", R_REQUIRED, "Required value"), NOT_CHECKED},
    ),
    (
        "a null name is a missing name",
        human(score(None)),
        {("spec.human.scores[0].name", R_REQUIRED, "Required value"), NOT_CHECKED},
    ),
    (
        "a repeated human score names the value and both places",
        human(score("thumbs"), score("a"), score("thumbs")),
        {DUP_HUMAN_THUMBS},
    ),
    (
        "a human name reused by a channel",
        {**human(score("x"), score("csat")), "external": [channel("csat-webhook", "csat")]},
        {
            (
                "spec.external",
                R_INVALID,
                f'Invalid value: {messages.MSG_DUP_ACROSS}: "csat" is declared at '
                "spec.human.scores[1].name and again at spec.external[0].score.name",
            )
        },
    ),
    (
        "two channels writing one score",
        {"external": [channel("a", "csat"), channel("b", "csat")]},
        {
            (
                "spec.external",
                R_INVALID,
                f'Invalid value: {messages.MSG_DUP_EXTERNAL}: "csat" is declared at '
                "spec.external[0].score.name and again at spec.external[1].score.name",
            )
        },
    ),
    (
        "two channels with one name",
        {"external": [channel("csat-webhook", "a"), channel("csat-webhook", "b")]},
        {
            (
                "spec.external",
                R_INVALID,
                f'Invalid value: {messages.MSG_DUP_CHANNEL}: "csat-webhook" is declared at '
                "spec.external[0].name and again at spec.external[1].name",
            )
        },
    ),
    (
        "a quote and a newline in a name are escaped as the verdict escapes them",
        human(score('say "hi"\n'), score('say "hi"\n')),
        {
            (
                "spec.human.scores",
                R_INVALID,
                'Invalid value: human score names must be unique: "say \\"hi\\"\\n" is declared at '
                "spec.human.scores[0].name and again at spec.human.scores[1].name",
            )
        },
    ),
    (
        "mode in lower case",
        {**human(score()), "mode": "enforce"},
        {
            (
                "spec.mode",
                "FieldValueNotSupported",
                'Unsupported value: "enforce": supported values: "Enforce", "Monitor"',
            ),
            NOT_CHECKED,
        },
    ),
    (
        "dataType in lower case",
        human(score(dataType="numeric")),
        {
            (
                "spec.human.scores[0].dataType",
                "FieldValueNotSupported",
                'Unsupported value: "numeric": supported values: '
                '"NUMERIC", "BOOLEAN", "CATEGORICAL"',
            ),
            NOT_CHECKED,
        },
    ),
    (
        "129 emoji are too long, and the server says bytes though it counts characters",
        human(score(EMOJI * 129)),
        {
            (
                "spec.human.scores[0].name",
                "FieldValueTooLong",
                "Too long: may not be more than 128 bytes",
            ),
            NOT_CHECKED,
        },
    ),
    (
        "65 human scores",
        {"human": {"scores": scores(65)}},
        {
            ("spec.human.scores", "FieldValueTooMany", "Too many: 65: must have at most 64 items"),
            NOT_CHECKED,
        },
    ),
    (
        "33 external channels",
        {"external": channels(33)},
        {
            ("spec.external", "FieldValueTooMany", "Too many: 33: must have at most 32 items"),
            NOT_CHECKED,
        },
    ),
    (
        "65 categories",
        human(score("t", dataType="CATEGORICAL", categories=[f"c{i}" for i in range(65)])),
        {
            (
                "spec.human.scores[0].categories",
                "FieldValueTooMany",
                "Too many: 65: must have at most 64 items",
            ),
            NOT_CHECKED,
        },
    ),
    (
        "a repeated category",
        human(score("t", dataType="CATEGORICAL", categories=["a", "b", "a"])),
        {("spec.human.scores[0].categories[2]", "FieldValueDuplicate", 'Duplicate value: "a"')},
    ),
    (
        "every cross-field rule at once",
        {
            **human(score("thumbs"), score("thumbs"), score("accuracy")),
            "external": [channel("a", "accuracy"), channel("a", "csat"), channel("b", "csat")],
        },
        {
            (
                "spec.human.scores",
                R_INVALID,
                'Invalid value: human score names must be unique: "thumbs" is declared at '
                "spec.human.scores[0].name and again at spec.human.scores[1].name",
            ),
            (
                "spec.external",
                R_INVALID,
                f'Invalid value: {messages.MSG_DUP_ACROSS}: "accuracy" is declared at '
                "spec.human.scores[2].name and again at spec.external[0].score.name",
            ),
            (
                "spec.external",
                R_INVALID,
                f'Invalid value: {messages.MSG_DUP_EXTERNAL}: "csat" is declared at '
                "spec.external[1].score.name and again at spec.external[2].score.name",
            ),
            (
                "spec.external",
                R_INVALID,
                f'Invalid value: {messages.MSG_DUP_CHANNEL}: "a" is declared at '
                "spec.external[0].name and again at spec.external[1].name",
            ),
        },
    ),
]


@pytest.mark.parametrize(("spec", "causes"), [pytest.param(s, c, id=i) for i, s, c in EXACT])
def test_the_server_answers_exactly(
    api: k8s.CustomObjectsApi, namespace: str, spec: Any, causes: set[Cause]
) -> None:
    answer = create(api, namespace, spec)
    assert (answer.status, answer.body.get("reason")) == (422, "Invalid"), answer.body
    assert answer.causes == causes
    if len(causes) == 1:
        name = answer.body["details"]["name"]
        assert answer.message == refused(name, causes)


STRICT_EXACT: list[tuple[str, Any, str]] = [
    ("a typo under spec", {"humans": {"scores": [score()]}}, 'unknown field "spec.humans"'),
    (
        "typos at two levels, all listed",
        {**human(score(type="NUMERIC")), "humans": 1},
        'unknown field "spec.human.scores[0].type", unknown field "spec.humans"',
    ),
    (
        "a list where human belongs reads as unknown fields",
        {"human": [score()]},
        'unknown field "spec.human[0].name"',
    ),
]


@pytest.mark.parametrize(("spec", "detail"), [pytest.param(s, d, id=i) for i, s, d in STRICT_EXACT])
def test_strict_decoding_refuses_unknown_fields_before_any_rule(
    api: k8s.CustomObjectsApi, namespace: str, spec: Any, detail: str
) -> None:
    answer = create(api, namespace, spec)
    assert (answer.status, answer.body.get("reason")) == (400, "BadRequest")
    assert answer.message == f'{rules_api.KIND} in version "{VERSION}" {STRICT}{detail}'


def test_without_strict_decoding_a_typo_is_dropped_and_the_store_has_no_source(
    api: k8s.CustomObjectsApi, namespace: str
) -> None:
    answer = create(api, namespace, {"humans": {"scores": [score()]}}, strict=False)
    assert answer.causes == {NO_SOURCE}


def test_without_strict_decoding_a_list_where_human_belongs_is_a_type_error(
    api: k8s.CustomObjectsApi, namespace: str
) -> None:
    answer = create(api, namespace, {"human": [score()]}, strict=False)
    assert answer.causes == {
        (
            "spec.human",
            "FieldValueTypeInvalid",
            'Invalid value: "array": spec.human in body must be of type object: "array"',
        ),
        NOT_CHECKED,
    }


# ---------------------------------------------------------------- kubectl


def kubectl_create(
    plane: ControlPlane, namespace: str, document: dict[str, Any]
) -> tuple[int, str]:
    result = plane.kubectl("create", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(document))
    return result.returncode, result.stdout + result.stderr


def test_kubectl_prints_one_cel_refusal_on_one_line(
    control_plane: ControlPlane, namespace: str
) -> None:
    document = feedbackstore("dup", human(score("thumbs"), score("a"), score("thumbs")))
    code, output = kubectl_create(control_plane, namespace, document)
    assert code == 1
    assert output == (
        'The FeedbackStore "dup" is invalid: spec.human.scores: Invalid value: human score names '
        'must be unique: "thumbs" is declared at spec.human.scores[0].name and again at '
        "spec.human.scores[2].name\n"
    )


def test_kubectl_prints_no_source_as_a_required_value(
    control_plane: ControlPlane, namespace: str
) -> None:
    code, output = kubectl_create(
        control_plane, namespace, feedbackstore("empty", {"mode": "Monitor"})
    )
    assert code == 1
    assert output == (
        f'The FeedbackStore "empty" is invalid: spec: Required value: {messages.MSG_NO_SOURCE}\n'
    )


def test_kubectl_lists_several_problems_one_per_line(
    control_plane: ControlPlane, namespace: str
) -> None:
    spec = {"mode": "enforce", **human(score("thumbs", dataType="boolean"))}
    code, output = kubectl_create(control_plane, namespace, feedbackstore("cases", spec))
    assert code == 1
    head, *lines = output.splitlines()
    assert head == 'The FeedbackStore "cases" is invalid: '
    assert sorted(lines) == [
        f"* {NOT_CHECKED[0]}: {NOT_CHECKED[2]}",
        '* spec.human.scores[0].dataType: Unsupported value: "boolean": supported values: '
        '"NUMERIC", "BOOLEAN", "CATEGORICAL"',
        '* spec.mode: Unsupported value: "enforce": supported values: "Enforce", "Monitor"',
    ]


def test_kubectl_strict_decoding_names_the_typo(
    control_plane: ControlPlane, namespace: str
) -> None:
    document = feedbackstore("typo", {"humans": {"scores": [score()]}})
    code, output = kubectl_create(control_plane, namespace, document)
    assert code == 1
    assert output == (
        'Error from server (BadRequest): error when creating "STDIN": FeedbackStore in version '
        f'"v1beta1" {STRICT}unknown field "spec.humans"\n'
    )


# ---------------------------------------------------------------- examples


def _examples() -> list[Any]:
    found = []
    for path in sorted((REPO / "examples").rglob("*.yaml")):
        for index, document in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if isinstance(document, dict) and document.get("kind") == rules_api.KIND:
                found.append(pytest.param(document, id=f"{path.relative_to(REPO)}#{index}"))
    return found


@pytest.mark.parametrize("document", _examples())
def test_every_example_gets_the_verdicts_answer_from_kubectl(
    control_plane: ControlPlane, namespace: str, document: dict[str, Any]
) -> None:
    document = copy.deepcopy(document)
    document["metadata"].pop("namespace", None)
    result = control_plane.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(document)
    )
    verdict = validate_spec(document.get("spec"))
    assert (result.returncode == 0) is verdict.valid, result.stderr
    if not verdict.valid:
        named = set(
            re.findall(r'(?:is invalid: |\* )(spec[^:]*):|unknown field "([^"]+)"', result.stderr)
        )
        named = {field for pair in named for field in pair if field}
        assert named, result.stderr
        decoding_only = "strict decoding error" in result.stderr
        assert agree(verdict_fields(document.get("spec")), named, decoding_only=decoding_only), (
            result.stderr,
            verdict,
        )


# ---------------------------------------------------------------- defaults and limits


def test_defaults_are_applied_by_the_server(api: k8s.CustomObjectsApi, namespace: str) -> None:
    spec = {**human(score("thumbs")), "external": [channel()]}
    stored = create(api, namespace, spec, dry_run=False).body["spec"]
    assert stored["mode"] == rules_api.DEFAULT_MODE
    assert stored["human"]["scores"][0]["dataType"] == rules_api.DEFAULT_DATA_TYPE
    assert stored["external"][0]["score"]["dataType"] == rules_api.DEFAULT_DATA_TYPE


def maximal_spec() -> dict[str, Any]:
    width = rules_api.MAX_NAME_LENGTH
    return {
        "mode": "Monitor",
        "human": {
            "scores": [
                {
                    "name": f"{i:03d}".ljust(width, EMOJI),
                    "dataType": "CATEGORICAL",
                    "categories": [
                        f"{i}-{j}".ljust(width, "c") for j in range(rules_api.MAX_CATEGORIES)
                    ],
                }
                for i in range(rules_api.MAX_HUMAN_SCORES)
            ]
        },
        "external": [
            {
                "name": f"{i:03d}".ljust(width, "c"),
                "score": {"name": f"{i:03d}".ljust(width, "e"), "dataType": "BOOLEAN"},
            }
            for i in range(rules_api.MAX_EXTERNAL_CHANNELS)
        ],
    }


def test_the_largest_valid_store_is_stored(api: k8s.CustomObjectsApi, namespace: str) -> None:
    spec = maximal_spec()
    assert validate_spec(spec).valid
    answer = create(api, namespace, spec, dry_run=False)
    assert answer.status == 201, answer.message
    assert answer.body["spec"] == spec


def test_the_largest_invalid_store_gets_every_message_within_the_runtime_budget(
    api: k8s.CustomObjectsApi, namespace: str
) -> None:
    spec = maximal_spec()
    spec["human"]["scores"][-1]["name"] = spec["human"]["scores"][0]["name"]
    for item in spec["external"]:
        item["score"]["name"] = "shared"
    spec["external"][-1]["name"] = spec["external"][0]["name"]
    answer = create(api, namespace, spec)
    assert {(field, message.split(":")[1].strip()) for field, _, message in answer.causes} == {
        ("spec.human.scores", messages.MSG_DUP_HUMAN),
        ("spec.external", messages.MSG_DUP_EXTERNAL),
        ("spec.external", messages.MSG_DUP_CHANNEL),
    }
    assert any("spec.human.scores[63].name" in message for _, _, message in answer.causes)
    assert any("spec.external[31].score.name" in message for _, _, message in answer.causes)


def test_the_costliest_messages_stay_within_the_per_call_limit(
    api: k8s.CustomObjectsApi, namespace: str
) -> None:
    """Every name the same and as long as allowed in the costliest characters: every item
    builds a message, and each messageExpression still runs to the end."""
    name = EMOJI * rules_api.MAX_NAME_LENGTH
    spec = {
        "human": {"scores": [{"name": name}] * rules_api.MAX_HUMAN_SCORES},
        "external": [{"name": name, "score": {"name": name}}] * rules_api.MAX_EXTERNAL_CHANNELS,
    }
    causes = create(api, namespace, spec).causes
    quoted = f'"{name}"'
    assert causes == {
        (
            "spec.human.scores",
            R_INVALID,
            f"Invalid value: {messages.MSG_DUP_HUMAN}: {quoted} is declared at "
            "spec.human.scores[0].name and again at spec.human.scores[63].name",
        ),
        (
            "spec.external",
            R_INVALID,
            f"Invalid value: {messages.MSG_DUP_ACROSS}: {quoted} is declared at "
            "spec.human.scores[0].name and again at spec.external[0].score.name",
        ),
        (
            "spec.external",
            R_INVALID,
            f"Invalid value: {messages.MSG_DUP_CHANNEL}: {quoted} is declared at "
            "spec.external[0].name and again at spec.external[31].name",
        ),
    }


# ---------------------------------------------------------------- the corpus


def verdict_fields(spec: Any) -> dict[str, ErrorType]:
    return {p.field: p.type for p in validate_spec(spec).problems}


_CROSS_FIELD = (ErrorType.DUPLICATE, ErrorType.REQUIRED)
_FIRST_AT = re.compile(r"\(first declared at (\S+)\)$")


def agree(verdict: dict[str, ErrorType], named: set[str], *, decoding_only: bool = False) -> bool:
    """The server names only fields the verdict names (or lists holding them, or items
    under them), and every field the verdict does, except the cross-field ones CEL never
    got to, and anything at all when strict decoding refused the object before validation."""

    def covers(server_field: str, field: str) -> bool:
        return field == server_field or field.startswith((f"{server_field}.", f"{server_field}["))

    for server_field in named:
        if not any(covers(server_field, f) or covers(f, server_field) for f in verdict):
            return False
    missing = [f for f in verdict if not any(covers(n, f) or covers(f, n) for n in named)]
    return decoding_only or all(verdict[f] in _CROSS_FIELD for f in missing)


def _corpus() -> Iterator[Any]:
    for name, spec, _ in CASES:
        yield pytest.param(spec, id=f"verdict: {name}")
    for name, spec, _ in CROSS_FIELD_CASES:
        yield pytest.param(spec, id=f"cel: {name}")
    for name, spec, _ in PER_FIELD_CASES:
        yield pytest.param(spec, id=f"schema: {name}")


@pytest.mark.parametrize("spec", list(_corpus()))
def test_on_the_rules_corpus_the_server_refuses_what_the_verdict_refuses(
    api: k8s.CustomObjectsApi, namespace: str, spec: Any
) -> None:
    verdict = validate_spec(spec)
    answer = create(api, namespace, spec)
    assert (answer.status == 201) is verdict.valid, (answer.status, answer.message)
    if verdict.valid:
        return
    assert answer.fields, answer.body
    assert agree(verdict_fields(spec), answer.fields, decoding_only=answer.status == 400), (
        answer.body,
        [str(p) for p in verdict.problems],
    )
    named_by_verdict = {p.field for p in verdict.problems} | {
        found.group(1) for p in verdict.problems if (found := _FIRST_AT.search(p.detail))
    }
    for _, _, message in answer.causes:
        for named in re.findall(r"spec(?:\.\w+|\[\d+\])+", message.split(": ", 2)[-1]):
            assert named in named_by_verdict, (message, named_by_verdict)


def _small_cel_cases() -> Iterator[Any]:
    for name, spec, expected in CROSS_FIELD_CASES:
        if expected:
            yield pytest.param(spec, id=name)


@pytest.mark.parametrize("spec", list(_small_cel_cases()))
def test_the_cel_harness_prints_what_the_real_server_prints(
    api: k8s.CustomObjectsApi, namespace: str, spec: Any
) -> None:
    outcome = HARNESS.admit(
        {
            "apiVersion": API_VERSION,
            "kind": rules_api.KIND,
            "metadata": {"name": "x"},
            "spec": spec,
        },
        messages=True,
    )
    assert create(api, namespace, spec).causes == set(outcome.cel_causes)


# ---------------------------------------------------------------- the decisions, kept as evidence

EVIDENCE_GROUP = "evidence.feedbackstore-tests.ctxmesh.ai"


def evidence_crd() -> dict[str, Any]:
    """The shipped CRD under another group, with what crd.py and cel_rules.py decided against:
    `human.scores` and `external` as list-type map keyed by name, and the rule for
    score names repeated across channels with `reason: FieldValueDuplicate`."""
    crd = crd_manifest()
    crd["metadata"]["name"] = f"{PLURAL}.{EVIDENCE_GROUP}"
    crd["spec"]["group"] = EVIDENCE_GROUP
    # No short name or category: kubectl would otherwise warn that `fs` is
    # ambiguous in every later test that reads its (cached) discovery.
    del crd["spec"]["names"]["shortNames"], crd["spec"]["names"]["categories"]
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    for node in (
        spec["properties"]["human"]["properties"]["scores"],
        spec["properties"]["external"],
    ):
        node["x-kubernetes-list-type"] = "map"
        node["x-kubernetes-list-map-keys"] = ["name"]
    for rule in spec["x-kubernetes-validations"]:
        if rule["message"] == messages.MSG_DUP_EXTERNAL:
            rule["reason"] = "FieldValueDuplicate"
    return crd


@pytest.fixture(scope="module")
def evidence(control_plane: ControlPlane, namespace: str) -> Iterator[str]:
    """The evidence CRD, served; yields its apiVersion."""
    crd = evidence_crd()
    control_plane.kubectl(
        "apply",
        "--server-side",
        "--field-manager=kube-tests",
        "-f",
        "-",
        stdin=yaml.safe_dump(crd),
        check=True,
    )
    control_plane.kubectl(
        "wait",
        "--for=condition=Established",
        f"crd/{crd['metadata']['name']}",
        "--timeout=60s",
        check=True,
    )
    api_version = f"{EVIDENCE_GROUP}/{VERSION}"

    def served() -> bool:
        probe = {**feedbackstore("probe", human(score())), "apiVersion": api_version}
        result = control_plane.kubectl(
            "create", "--dry-run=server", "-n", namespace, "-f", "-", stdin=yaml.safe_dump(probe)
        )
        return result.returncode == 0

    eventually(served, timeout=60, what="evidence CRD served")
    yield api_version
    control_plane.kubectl("delete", "crd", crd["metadata"]["name"], "--timeout=60s", check=True)


def apply(
    plane: ControlPlane, namespace: str, document: dict[str, Any], manager: str, *extra: str
) -> tuple[int, str]:
    result = plane.kubectl(
        "apply",
        "--server-side",
        f"--field-manager={manager}",
        "-n",
        namespace,
        *extra,
        "-f",
        "-",
        stdin=yaml.safe_dump(document),
    )
    return result.returncode, result.stdout + result.stderr


DUPLICATE_THUMBS = human(score("thumbs"), score("a"), score("thumbs"))


def test_a_map_list_refuses_a_duplicate_key_without_the_platforms_words(
    control_plane: ControlPlane, namespace: str, evidence: str
) -> None:
    document = {**feedbackstore("dup", DUPLICATE_THUMBS), "apiVersion": evidence}
    code, output = kubectl_create(control_plane, namespace, document)
    assert code == 1
    assert '* spec.human.scores[2]: Duplicate value: {"name":"thumbs"}' in output.splitlines()


def test_server_side_apply_of_a_duplicate_key_fails_before_validation_with_a_map_list(
    control_plane: ControlPlane, namespace: str, evidence: str
) -> None:
    document = {**feedbackstore("dup-ssa", DUPLICATE_THUMBS), "apiVersion": evidence}
    code, output = apply(control_plane, namespace, document, "gitops", "--dry-run=server")
    assert code == 1
    assert output.startswith("Error from server: failed to create typed patch object (")
    assert '.spec.human.scores: duplicate entries for key [name="thumbs"]' in output
    assert messages.MSG_DUP_HUMAN not in output


def test_server_side_apply_of_a_duplicate_gets_the_crds_message_with_atomic_lists(
    control_plane: ControlPlane, namespace: str
) -> None:
    document = feedbackstore("dup-ssa", DUPLICATE_THUMBS)
    code, output = apply(control_plane, namespace, document, "gitops", "--dry-run=server")
    assert code == 1
    assert output == f'The FeedbackStore "dup-ssa" is invalid: {": ".join(DUP_HUMAN_THUMBS[::2])}\n'


def test_a_map_list_merges_another_managers_score_into_a_gitops_store(
    control_plane: ControlPlane, namespace: str, evidence: str
) -> None:
    def store(*names: str) -> dict[str, Any]:
        document = feedbackstore("merged", human(*(score(n) for n in names)))
        return {**document, "apiVersion": evidence}

    assert apply(control_plane, namespace, store("thumbs", "accuracy"), "gitops")[0] == 0
    assert apply(control_plane, namespace, store("csat"), "someone-else")[0] == 0
    assert apply(control_plane, namespace, store("thumbs"), "gitops")[0] == 0
    names = control_plane.kubectl(
        "get",
        f"{PLURAL}.{EVIDENCE_GROUP}",
        "merged",
        "-n",
        namespace,
        "-o",
        "jsonpath={.spec.human.scores[*].name}",
        check=True,
    )
    assert names.stdout == "thumbs csat"


def test_an_atomic_list_makes_another_manager_take_the_whole_list(
    control_plane: ControlPlane, namespace: str
) -> None:
    def store(*names: str) -> dict[str, Any]:
        return feedbackstore("atomic", human(*(score(n) for n in names)))

    assert apply(control_plane, namespace, store("thumbs", "accuracy"), "gitops")[0] == 0
    code, output = apply(control_plane, namespace, store("csat"), "someone-else")
    assert code == 1
    assert 'Apply failed with 1 conflict: conflict with "gitops": .spec.human.scores' in output


def test_reason_field_value_duplicate_drops_the_rules_message(
    api: k8s.CustomObjectsApi, namespace: str, evidence: str
) -> None:
    spec = {"external": [channel("a", "csat"), channel("b", "csat")]}
    body = {**feedbackstore("dup-reason", spec), "apiVersion": evidence}
    with pytest.raises(k8s.ApiException) as refused_by:
        api.create_namespaced_custom_object(
            EVIDENCE_GROUP, VERSION, namespace, PLURAL, body, dry_run="All"
        )
    causes = Answer(422, json.loads(refused_by.value.body)).causes
    assert causes == {("spec.external", "FieldValueDuplicate", "Duplicate value")}
