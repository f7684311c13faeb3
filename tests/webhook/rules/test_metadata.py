"""Object metadata offline: the name and namespace rules kube-apiserver applies before any webhook,
applied by the CLI to manifests nobody else has checked, each problem word for word as the server
says it (tests/kube/test_metadata_real.py sends the same kinds of case to the real one)."""

from __future__ import annotations

import pytest

from webhook.rules.metadata import validate_metadata

SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
# Two spaces after the first example, as apimachinery's RegexError writes a list of them.
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
NAME_REQUIRED = "metadata.name: Required value: name or generateName is required"
LONG = "a" * 254
TOO_LONG_LABEL = "must be no more than 63 characters"


@pytest.mark.parametrize(
    ("metadata", "problems"),
    [
        pytest.param({"name": "support-feedback"}, [], id="a plain name is fine"),
        pytest.param({"name": "a.b-c.d0"}, [], id="a name may have dots and dashes inside"),
        pytest.param({"name": "a" * 253}, [], id="a name of 253 characters is fine"),
        pytest.param(
            {"name": LONG},
            [f'metadata.name: Invalid value: "{LONG}": must be no more than 253 characters'],
            id="a name of 254 characters is too long, and shown whole",
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
        pytest.param(
            {"name": LONG + "A"},
            [
                f'metadata.name: Invalid value: "{LONG}A": must be no more than 253 characters',
                f'metadata.name: Invalid value: "{LONG}A": {SUBDOMAIN}',
            ],
            id="a name both too long and malformed is named both, length first",
        ),
        pytest.param({"generateName": "support-"}, [], id="a generateName alone makes a name"),
        pytest.param({"generateName": "a.-"}, [], id="the dash and the character before it"),
        pytest.param(
            {"generateName": "Support-"},
            [f'metadata.generateName: Invalid value: "Support-": {SUBDOMAIN}'],
            id="a generateName is judged as a name, less its trailing dash",
        ),
        pytest.param(
            {"name": "Bad", "generateName": "worse."},
            [
                f'metadata.generateName: Invalid value: "worse.": {SUBDOMAIN}',
                f'metadata.name: Invalid value: "Bad": {SUBDOMAIN}',
            ],
            id="generateName and name both judged, generateName first",
        ),
        pytest.param({"name": "s", "namespace": "agents"}, [], id="a plain namespace is fine"),
        pytest.param({"name": "s", "namespace": ""}, [], id="an empty namespace is no namespace"),
        pytest.param({"name": "s", "namespace": None}, [], id="a null namespace is no namespace"),
        pytest.param({"name": "s", "namespace": "a" * 63}, [], id="a namespace of 63 is fine"),
        pytest.param(
            {"name": "s", "namespace": "a" * 64},
            [f'metadata.namespace: Invalid value: "{LONG[:64]}": {TOO_LONG_LABEL}'],
            id="a namespace of 64 characters is too long",
        ),
        pytest.param(
            {"name": "s", "namespace": "team.agents"},
            ['metadata.namespace: Invalid value: "team.agents": must not contain dots'],
            id="a namespace is a label: a dot is said in as many words",
        ),
        pytest.param(
            {"name": "s", "namespace": "Team.agents"},
            [f'metadata.namespace: Invalid value: "Team.agents": {LABEL}'],
            id="a dot in what is no subdomain either: not a label",
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
    ],
)
def test_metadata_problems(metadata: object, problems: list[str]) -> None:
    assert [str(p) for p in validate_metadata(metadata)] == problems


def test_a_long_name_is_shown_whole_as_the_server_shows_it() -> None:
    """A spec's bad values are cut to a readable size; a name is shown whole, as kube-apiserver
    shows it."""
    (problem,) = validate_metadata({"name": "a" * 5000})
    assert problem.message == f'Invalid value: "{"a" * 5000}": must be no more than 253 characters'
