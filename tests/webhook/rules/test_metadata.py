"""Object metadata offline: the name and namespace rules kube-apiserver applies before any webhook,
applied by the CLI to manifests nobody else has checked, each problem word for word."""

from __future__ import annotations

import pytest

from webhook.rules.metadata import validate_metadata

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name', or '123-abc', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
NAME_REQUIRED = "metadata.name: Required value: a FeedbackStore needs a name"


@pytest.mark.parametrize(
    ("metadata", "problems"),
    [
        pytest.param({"name": "support-feedback"}, [], id="a plain name is fine"),
        pytest.param({"name": "a.b-c.d0"}, [], id="a name may have dots and dashes inside"),
        pytest.param({"name": "a" * 253}, [], id="a name of 253 characters is fine"),
        pytest.param(
            {"name": "a" * 254},
            ["metadata.name: Too long: may not be more than 253 characters"],
            id="a name of 254 characters is too long",
        ),
        pytest.param(None, [NAME_REQUIRED], id="no metadata at all needs a name"),
        pytest.param({}, [NAME_REQUIRED], id="metadata without a name needs one"),
        pytest.param({"name": ""}, [NAME_REQUIRED], id="an empty name is no name"),
        pytest.param(
            [],
            ['metadata: Invalid value: "array": must be of type object'],
            id="metadata that is a list is the wrong type",
        ),
        pytest.param(
            {"name": 5},
            ['metadata.name: Invalid value: "integer": must be of type string'],
            id="a name that is a number is the wrong type",
        ),
        pytest.param(
            {"name": ["a"]},
            ['metadata.name: Invalid value: "array": must be of type string'],
            id="a name that is a list is the wrong type",
        ),
        pytest.param(
            {"name": "Support"},
            [f'metadata.name: Invalid value: "Support": {SUBDOMAIN}'],
            id="an upper-case name is not a subdomain",
        ),
        pytest.param(
            {"name": "-support"},
            [f'metadata.name: Invalid value: "-support": {SUBDOMAIN}'],
            id="a name starting with a dash is not a subdomain",
        ),
        pytest.param(
            {"name": "support."},
            [f'metadata.name: Invalid value: "support.": {SUBDOMAIN}'],
            id="a name ending with a dot is not a subdomain",
        ),
        pytest.param({"name": "s", "namespace": "agents"}, [], id="a plain namespace is fine"),
        pytest.param({"name": "s", "namespace": ""}, [], id="an empty namespace is no namespace"),
        pytest.param({"name": "s", "namespace": None}, [], id="a null namespace is no namespace"),
        pytest.param({"name": "s", "namespace": "a" * 63}, [], id="a namespace of 63 is fine"),
        pytest.param(
            {"name": "s", "namespace": "a" * 64},
            ["metadata.namespace: Too long: may not be more than 63 characters"],
            id="a namespace of 64 characters is too long",
        ),
        pytest.param(
            {"name": "s", "namespace": "team.agents"},
            [f'metadata.namespace: Invalid value: "team.agents": {LABEL}'],
            id="a namespace is a label: a dot is not allowed, unlike in a name",
        ),
        pytest.param(
            {"name": "s", "namespace": 7},
            ['metadata.namespace: Invalid value: "integer": must be of type string'],
            id="a namespace that is a number is the wrong type",
        ),
        pytest.param(
            {"name": 5, "namespace": "A"},
            [
                'metadata.name: Invalid value: "integer": must be of type string',
                f'metadata.namespace: Invalid value: "A": {LABEL}',
            ],
            id="a bad name and a bad namespace are both named, name first",
        ),
        pytest.param(
            {"name": "a" * 300 + "A"},
            ["metadata.name: Too long: may not be more than 253 characters"],
            id="a name both too long and malformed is named too long only",
        ),
    ],
)
def test_metadata_problems(metadata: object, problems: list[str]) -> None:
    assert [str(p) for p in validate_metadata(metadata)] == problems


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("FeedbackStore", "a FeedbackStore needs a name"),
        ("AgentDeployment", "an AgentDeployment needs a name"),
    ],
)
def test_a_missing_name_is_said_for_the_kind_at_hand(kind: str, message: str) -> None:
    assert [str(p) for p in validate_metadata({}, kind)] == [
        f"metadata.name: Required value: {message}"
    ]
