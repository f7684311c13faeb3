"""Reading an AdmissionReview: every field kube-apiserver sends parses; anything else is a
BadReviewError naming what is wrong, never an unexpected exception."""

from __future__ import annotations

import pathlib
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.reviews import (
    V1,
    V1BETA1,
    create,
    valid_spec,
)
from webhook.admission import AdmissionReview, BadReviewError, BadReviewReason, decode_review
from webhook.admission.decode import MAX_JSON_VALUES

FIXTURES = pathlib.Path(__file__).resolve().parents[4] / "shared/fixtures/k8s-api-testdata"
UPSTREAM = {
    V1: "admission.k8s.io.v1.AdmissionReview.json",
    V1BETA1: "admission.k8s.io.v1beta1.AdmissionReview.json",
}


def upstream_fixture(api_version: str) -> bytes:
    path = FIXTURES / UPSTREAM[api_version]
    if not path.exists():
        # CI lays shared/ beside the clone; a developer's tree has it at /work/shared.
        path = pathlib.Path("/work/shared/fixtures/k8s-api-testdata") / UPSTREAM[api_version]
    return path.read_bytes()


@pytest.mark.parametrize("api_version", [V1, V1BETA1], ids=["v1", "v1beta1"])
def test_the_upstream_round_trip_fixture_parses_with_every_field(api_version: str) -> None:
    review = decode_review(upstream_fixture(api_version))
    request = review.request
    assert review.api_version == api_version
    assert request.uid == "uidValue"
    assert (request.kind["group"], request.kind["version"], request.kind["kind"]) == (
        "groupValue",
        "versionValue",
        "kindValue",
    )
    assert request.resource["resource"] == "resourceValue"
    assert request.sub_resource == "subResourceValue"
    assert request.request_kind is not None
    assert request.request_kind["kind"] == "kindValue"
    assert request.request_resource is not None
    assert request.request_resource["resource"] == "resourceValue"
    assert request.request_sub_resource == "requestSubResourceValue"
    assert (request.name, request.namespace) == ("nameValue", "namespaceValue")
    assert request.operation == "operationValue"
    assert request.user_info["username"] == "usernameValue"
    assert request.user_info["groups"] == ["groupsValue"]
    assert request.user_info["extra"] == {"extraKey": ["extraValue"]}
    assert request.object["kind"] == "CustomType"
    assert request.old_object["spec"] == {"replicas": 1}
    assert request.dry_run is True
    assert request.options["status"] == {"available": 1}
    assert review.response is not None
    assert review.response.patch == "BA=="
    assert review.response.status is not None
    assert review.response.status.code == 6
    details = review.response.status.details
    assert details is not None
    assert details.causes is not None
    assert details.causes[0].field == "fieldValue"


def test_a_full_kube_apiserver_request_parses_with_null_old_object() -> None:
    sent = create(valid_spec())
    review = decode_review(orjson.dumps(sent))
    assert review.request.old_object is None
    assert review.request.object == sent["request"]["object"]
    assert review.request.user_info["extra"] == sent["request"]["userInfo"]["extra"]


def test_fields_a_newer_api_server_adds_are_ignored() -> None:
    sent = create(valid_spec())
    sent["request"]["someFutureField"] = {"x": 1}
    sent["somethingElse"] = True
    assert decode_review(orjson.dumps(sent)).request.uid == sent["request"]["uid"]


def _with(path: tuple[str, ...], value: Any) -> bytes:
    sent = create(valid_spec())
    target = sent
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return orjson.dumps(sent)


def _without(*path: str) -> bytes:
    sent = create(valid_spec())
    target = sent
    for key in path[:-1]:
        target = target[key]
    del target[path[-1]]
    return orjson.dumps(sent)


HOSTILE = [
    pytest.param(b"", BadReviewReason.NOT_JSON, "not JSON", id="an empty body is not JSON"),
    pytest.param(b"{nope", BadReviewReason.NOT_JSON, "not JSON", id="broken JSON is not JSON"),
    pytest.param(b"\xff\xfe{}", BadReviewReason.NOT_JSON, "not JSON", id="bad UTF-8 is not JSON"),
    pytest.param(
        b'{"a":1} {"b":2}',
        BadReviewReason.NOT_JSON,
        "not JSON",
        id="two documents are not one JSON value",
    ),
    pytest.param(
        b"[" * 300_000 + b"]" * 300_000,
        BadReviewReason.TOO_MANY_VALUES,
        "more than 262144 JSON values",
        id="three hundred thousand nested arrays are too many, counted before decoding",
    ),
    pytest.param(
        b'{"a":' * 60_000 + b"1" + b"}" * 60_000,
        BadReviewReason.TOO_DEEP,
        "nested too deeply",
        id="sixty thousand nested objects are too deep",
    ),
    pytest.param(
        b'{"a":[' + b"{}," * 131_072 + b"{}]}",
        BadReviewReason.TOO_MANY_VALUES,
        "more than 262144 JSON values",
        id="131,073 empty objects are refused before they are decoded",
    ),
    pytest.param(
        b"[" + b'"ab",' * 262_144 + b'"ab"]',
        BadReviewReason.TOO_MANY_VALUES,
        "more than 262144 JSON values",
        id="262,145 short strings are refused before they are decoded",
    ),
    pytest.param(
        b"[" * MAX_JSON_VALUES,
        BadReviewReason.TOO_DEEP,
        "nested too deeply",
        id="a body no longer than the bound on values is within it, and decoded",
    ),
    pytest.param(
        b"[" * (MAX_JSON_VALUES + 1),
        BadReviewReason.TOO_MANY_VALUES,
        "more than 262144 JSON values",
        id="one byte longer, every byte a value, is too many, counted before decoding",
    ),
    pytest.param(b"[]", BadReviewReason.NOT_OBJECT, "got array", id="an array is not an object"),
    pytest.param(
        b'"AdmissionReview"',
        BadReviewReason.NOT_OBJECT,
        'got "AdmissionReview"',
        id="a string is not an object",
    ),
    pytest.param(b"null", BadReviewReason.NOT_OBJECT, "got null", id="null is not an object"),
    pytest.param(
        b"{}",
        BadReviewReason.NOT_ADMISSION_REVIEW,
        "got kind (none)",
        id="an empty object is not an AdmissionReview",
    ),
    pytest.param(
        _with(("kind",), "Pod"),
        BadReviewReason.NOT_ADMISSION_REVIEW,
        'kind "Pod"',
        id="another kind is not an AdmissionReview",
    ),
    pytest.param(
        _with(("apiVersion",), "admission.k8s.io/v2"),
        BadReviewReason.NOT_ADMISSION_REVIEW,
        '"admission.k8s.io/v2"',
        id="an unknown apiVersion is refused",
    ),
    pytest.param(
        _with(("apiVersion",), 1),
        BadReviewReason.NOT_ADMISSION_REVIEW,
        "apiVersion 1",
        id="a numeric apiVersion is refused",
    ),
    pytest.param(
        _without("request"),
        BadReviewReason.NO_REQUEST,
        "no request",
        id="a review without request is refused",
    ),
    pytest.param(
        _with(("request",), None),
        BadReviewReason.NO_REQUEST,
        "no request",
        id="a null request is refused",
    ),
    pytest.param(
        _with(("request",), [1, 2]),
        BadReviewReason.WRONG_TYPE,
        "request: must be an object",
        id="a request that is a list is refused",
    ),
    pytest.param(
        _without("request", "uid"),
        BadReviewReason.NO_UID,
        "no uid",
        id="a request without uid is refused",
    ),
    pytest.param(
        _with(("request", "uid"), ""),
        BadReviewReason.NO_UID,
        "no uid",
        id="an empty uid is refused",
    ),
    pytest.param(
        _with(("request", "uid"), 12345),
        BadReviewReason.WRONG_TYPE,
        "request.uid: Input should be a valid string",
        id="a numeric uid is refused",
    ),
    pytest.param(
        _with(("request", "operation"), ["CREATE"]),
        BadReviewReason.WRONG_TYPE,
        "request.operation",
        id="an operation that is a list is refused",
    ),
    pytest.param(
        _with(("request", "resource"), "feedbackstores"),
        BadReviewReason.WRONG_TYPE,
        "request.resource",
        id="a resource that is a string is refused",
    ),
    pytest.param(
        _with(("request", "userInfo", "groups"), "admins"),
        BadReviewReason.WRONG_TYPE,
        "request.userInfo.groups",
        id="groups that are a string are refused",
    ),
    pytest.param(
        _with(("request", "userInfo", "extra"), {"k": [1]}),
        BadReviewReason.WRONG_TYPE,
        "request.userInfo.extra.k[0]",
        id="extra values that are numbers are refused",
    ),
    pytest.param(
        _with(("request", "dryRun"), "yes"),
        BadReviewReason.WRONG_TYPE,
        "request.dryRun",
        id="a dryRun that is a string is refused",
    ),
    pytest.param(
        _with(("response",), {"allowed": "maybe"}),
        BadReviewReason.WRONG_TYPE,
        "response",
        id="a malformed response inside the request is refused",
    ),
]


@pytest.mark.parametrize(("body", "reason", "fragment"), HOSTILE)
def test_a_hostile_body_is_a_bad_review_with_a_clear_message(
    body: bytes, reason: BadReviewReason, fragment: str
) -> None:
    with pytest.raises(BadReviewError) as caught:
        decode_review(body)
    assert caught.value.reason is reason
    assert fragment in caught.value.message
    assert len(caught.value.message) < 600


def test_a_type_error_message_never_echoes_a_huge_key_or_value() -> None:
    body = _with(("request", "userInfo", "extra"), {"k" * 1_000_000: "v" * 1_000_000})
    with pytest.raises(BadReviewError) as caught:
        decode_review(body)
    assert caught.value.reason is BadReviewReason.WRONG_TYPE
    assert len(caught.value.message) < 600


def test_many_type_errors_are_summarised() -> None:
    body = _with(("request", "userInfo", "groups"), list(range(10_000)))
    with pytest.raises(BadReviewError) as caught:
        decode_review(body)
    assert "and 9997 more" in caught.value.message


def nested_spec_body(levels: int) -> bytes:
    """A full review whose spec.human is `levels` objects deep (built as text: orjson
    refuses to serialise past 255 levels)."""
    body = orjson.dumps(create({"human": "DEEP"}))
    return body.replace(b'"DEEP"', b'{"a":' * levels + b"1" + b"}" * levels)


def test_an_object_nested_just_under_the_json_limit_still_parses() -> None:
    review = decode_review(nested_spec_body(1000))
    assert review.request.object["spec"]["human"]["a"]["a"] is not None


# Every field of the envelope, and a few a newer API server might add.
ENVELOPE_FIELDS: list[tuple[str, ...]] = [
    ("apiVersion",),
    ("kind",),
    ("request",),
    ("response",),
    ("extra",),
    *[
        ("request", key)
        for key in (
            "uid",
            "kind",
            "resource",
            "subResource",
            "requestKind",
            "requestResource",
            "requestSubResource",
            "name",
            "namespace",
            "operation",
            "userInfo",
            "object",
            "oldObject",
            "dryRun",
            "options",
            "future",
        )
    ],
    *[
        ("request", gvk, key)
        for gvk in ("kind", "requestKind")
        for key in ("group", "version", "kind", "x")
    ],
    *[
        ("request", gvr, key)
        for gvr in ("resource", "requestResource")
        for key in ("group", "version", "resource", "x")
    ],
    *[("request", "userInfo", key) for key in ("username", "uid", "groups", "extra", "x")],
    ("request", "userInfo", "extra", "scope"),
]
REMOVED = object()
_texts = st.text(max_size=3)
# Values of every JSON type, weighted towards the types the fields may really have.
envelope_values = st.one_of(
    _texts,
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.floats(allow_nan=False),
    st.lists(_texts, max_size=2),
    st.lists(st.integers(0, 2), min_size=1, max_size=2),
    st.dictionaries(
        st.sampled_from(["group", "version", "kind", "resource", "x"]),
        st.one_of(_texts, st.none(), st.integers(0, 1)),
        max_size=3,
    ),
    st.dictionaries(_texts, st.one_of(st.none(), st.lists(_texts, max_size=2), _texts), max_size=2),
    st.sampled_from([V1, V1BETA1, "AdmissionReview", "CREATE", REMOVED]),
)


def _mutated(changes: list[tuple[tuple[str, ...], Any]]) -> Any:
    sent: Any = create(valid_spec())
    for path, value in changes:
        target = sent
        for key in path[:-1]:
            target = target.get(key) if type(target) is dict else None
        if type(target) is not dict:
            continue
        if value is REMOVED:
            target.pop(path[-1], None)
        else:
            target[path[-1]] = value
    return orjson.loads(orjson.dumps(sent))


@settings(max_examples=400, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.sampled_from(ENVELOPE_FIELDS), envelope_values), max_size=3))
def test_any_envelope_is_read_or_refused_with_a_short_message(
    changes: list[tuple[tuple[str, ...], Any]],
) -> None:
    document = _mutated(changes)
    answer: AdmissionReview | BadReviewError
    try:
        answer = decode_review(orjson.dumps(document))
    except BadReviewError as error:
        answer = error
    if isinstance(answer, BadReviewError):
        assert 0 < len(answer.message) < 600
    else:
        assert answer.request.uid == document["request"]["uid"]
        assert answer.api_version == document["apiVersion"]


def _leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Every typed leaf of the upstream fixture's envelope (not inside the untyped objects)."""
    if type(value) is not dict or path[-1:] in (("object",), ("oldObject",), ("options",)):
        return [(path, value)]
    return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]


UPSTREAM_LEAVES = [
    path
    for path, value in _leaves(orjson.loads(upstream_fixture(V1)))
    if path[-1:] not in (("object",), ("oldObject",), ("options",))
    and path[-2:-1] != ("extra",)  # a map's key is client data, not a field name
    and path[-2:-1] != ("shardInfo",)  # untyped values
]


@pytest.mark.parametrize("path", UPSTREAM_LEAVES, ids=".".join)
def test_every_typed_field_of_the_upstream_fixture_refuses_a_wrong_type_by_its_name(
    path: tuple[str, ...],
) -> None:
    sent = orjson.loads(upstream_fixture(V1))
    target = sent
    for key in path[:-1]:
        target = target[key]
    # An object where a string, number, boolean or list belongs, and a list where a string does.
    target[path[-1]] = ["x"] if path in (("kind",), ("apiVersion",)) else {"x": 1}
    with pytest.raises(BadReviewError) as caught:
        decode_review(orjson.dumps(sent))
    if path in (("kind",), ("apiVersion",)):
        assert caught.value.reason is BadReviewReason.NOT_ADMISSION_REVIEW
    elif path == ("request", "uid"):
        assert caught.value.reason is BadReviewReason.WRONG_TYPE
        assert caught.value.message.startswith("invalid AdmissionReview: request.uid: ")
    else:
        assert caught.value.reason is BadReviewReason.WRONG_TYPE
        assert caught.value.message.startswith(f"invalid AdmissionReview: {'.'.join(path)}")


# One body for each 400 the decoder gives, with the whole message it answers.
MESSAGES = [
    pytest.param(
        b"{nope",
        BadReviewReason.NOT_JSON,
        "request body is not JSON: unexpected character, expected a string key: "
        "line 1 column 2 (char 1)",
        id="not JSON",
    ),
    pytest.param(
        b"[" * 2000 + b"]" * 2000,
        BadReviewReason.TOO_DEEP,
        "request body is nested too deeply: depth limit exceeded: line 1 column 1026 (char 1025)",
        id="too deep",
    ),
    pytest.param(
        b"[1]",
        BadReviewReason.NOT_OBJECT,
        "request body must be a JSON object (an AdmissionReview), got array",
        id="not an object",
    ),
    pytest.param(
        _with(("kind",), "Pod"),
        BadReviewReason.NOT_ADMISSION_REVIEW,
        'expected kind "AdmissionReview" with apiVersion "admission.k8s.io/v1" or '
        '"admission.k8s.io/v1beta1", got kind "Pod" and apiVersion '
        '"admission.k8s.io/v1"',
        id="not an AdmissionReview",
    ),
    pytest.param(
        _without("request"),
        BadReviewReason.NO_REQUEST,
        "AdmissionReview has no request",
        id="no request",
    ),
    pytest.param(
        _with(("request",), "r"),
        BadReviewReason.WRONG_TYPE,
        'request: must be an object, got "r"',
        id="a request that is not an object",
    ),
    pytest.param(
        _with(("request", "uid"), ""),
        BadReviewReason.NO_UID,
        "AdmissionReview request has no uid",
        id="no uid",
    ),
    pytest.param(
        _with(("request", "uid"), 7),
        BadReviewReason.WRONG_TYPE,
        "invalid AdmissionReview: request.uid: Input should be a valid string",
        id="a uid that is a number",
    ),
    pytest.param(
        _with(("request", "userInfo", "groups"), [1, "a", 2, 3, 4]),
        BadReviewReason.WRONG_TYPE,
        "invalid AdmissionReview: request.userInfo.groups[0]: Input should be a valid "
        "string; request.userInfo.groups[2]: Input should be a valid string; "
        "request.userInfo.groups[3]: Input should be a valid string; and 1 more",
        id="several wrong types",
    ),
    pytest.param(
        _with(("request", "dryRun"), "yes"),
        BadReviewReason.WRONG_TYPE,
        "invalid AdmissionReview: request.dryRun: Input should be a valid boolean",
        id="a dryRun that is a string",
    ),
    pytest.param(
        _with(("response",), {"uid": "u"}),
        BadReviewReason.WRONG_TYPE,
        "invalid AdmissionReview: response.allowed: Field required",
        id="a response without allowed",
    ),
]


@pytest.mark.parametrize(("body", "reason", "message"), MESSAGES)
def test_each_bad_review_has_its_whole_message(
    body: bytes, reason: BadReviewReason, message: str
) -> None:
    with pytest.raises(BadReviewError) as caught:
        decode_review(body)
    assert (caught.value.reason, caught.value.message) == (reason, message)
