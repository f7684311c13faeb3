"""The CRD's OpenAPI schema: generated from the rules, structural, agreeing with the verdict.

A cluster without the webhook must refuse what the verdict refuses. Every
per-field limit is checked here through `CrdServer`, which admits an object
the way kube-apiserver does (nulls dropped, defaults applied, strict field
validation, OpenAPI limits, list-type set), against `validate_feedbackstore`.
"""

from __future__ import annotations

import copy
import pathlib
import subprocess
import sys
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.crd_apiserver import CrdServer
from webhook.cli.manifests import crd_text
from webhook.manifests.crd import crd_manifest
from webhook.rules import api, messages, validate_feedbackstore

ROOT = pathlib.Path(__file__).resolve().parents[3]
CRD_FILE = ROOT / "manifests" / "crd" / "feedbackstores.agents.ctxmesh.ai.yaml"
SERVER = CrdServer.from_crd(crd_manifest())
MAX = api.MAX_NAME_LENGTH


def store(spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": api.API_VERSION,
        "kind": api.KIND,
        "metadata": {"name": "support-feedback", "namespace": "agents"},
        "spec": spec,
    }


def base_spec() -> dict[str, Any]:
    """Both sources present, so breaking one field never removes the last source."""
    return {
        "human": {"scores": [{"name": "thumbs"}]},
        "external": [{"name": "csat-webhook", "score": {"name": "csat"}}],
    }


def spec_schema() -> dict[str, Any]:
    version = crd_manifest()["spec"]["versions"][0]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return schema


# ---------------------------------------------------------------- generation


def test_the_committed_crd_is_what_the_generator_prints_today() -> None:
    assert CRD_FILE.read_text(encoding="utf-8") == crd_text(), (
        "manifests/crd is stale: run feedbackstore-webhook manifests crd "
        f"--out {CRD_FILE.relative_to(ROOT)}"
    )


def test_the_committed_crd_parses_to_the_generated_object() -> None:
    assert yaml.safe_load(CRD_FILE.read_text(encoding="utf-8")) == crd_manifest()


@pytest.mark.parametrize(
    ("edit", "expected_code"),
    [
        pytest.param(lambda text: text, 0, id="an up-to-date file passes --check"),
        pytest.param(
            lambda text: text.replace("maxItems: 64", "maxItems: 65", 1),
            1,
            id="a hand-edited limit fails --check",
        ),
        pytest.param(lambda text: "", 1, id="an emptied file fails --check"),
    ],
)
def test_manifests_crd_check_reports_a_stale_file(
    tmp_path: pathlib.Path, edit: Any, expected_code: int
) -> None:
    target = tmp_path / "crd.yaml"
    target.write_text(edit(crd_text()), encoding="utf-8")
    before = target.read_text(encoding="utf-8")
    result = _cli("manifests", "crd", "--out", str(target), "--check")
    assert result.returncode == expected_code, result.stdout + result.stderr
    assert target.read_text(encoding="utf-8") == before, "--check must never write"


def test_manifests_crd_prints_the_crd_and_writes_it_with_out(tmp_path: pathlib.Path) -> None:
    printed = _cli("manifests", "crd")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == crd_text()
    target = tmp_path / "nested" / "crd.yaml"
    written = _cli("manifests", "crd", "--out", str(target))
    assert written.returncode == 0, written.stderr
    assert target.read_text(encoding="utf-8") == crd_text()


def test_manifests_crd_check_without_out_is_a_usage_error() -> None:
    result = _cli("manifests", "crd", "--check")
    assert result.returncode == 2
    assert "--check needs --out" in result.stderr


def test_manifests_crd_names_the_file_it_cannot_read(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "absent.yaml"
    result = _cli("manifests", "crd", "--out", str(missing), "--check")
    assert result.returncode == 2
    assert str(missing) in result.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webhook.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# ---------------------------------------------------------------- the CRD object


def test_the_crd_names_the_resource_as_spec_section_1_does() -> None:
    crd = crd_manifest()
    assert crd["metadata"]["name"] == "feedbackstores.agents.ctxmesh.ai"
    assert crd["spec"]["group"] == "agents.ctxmesh.ai"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "kind": "FeedbackStore",
        "listKind": "FeedbackStoreList",
        "plural": "feedbackstores",
        "singular": "feedbackstore",
        "shortNames": ["fs"],
        "categories": ["agents"],
    }


def test_the_crd_has_one_served_storage_version_with_a_status_subresource() -> None:
    (version,) = crd_manifest()["spec"]["versions"]
    assert version["name"] == "v1beta1"
    assert version["served"] is True
    assert version["storage"] is True
    assert version["subresources"] == {"status": {}}


def test_the_printer_columns_show_mode_validated_in_use_and_age() -> None:
    (version,) = crd_manifest()["spec"]["versions"]
    columns = {column["name"]: column for column in version["additionalPrinterColumns"]}
    assert columns["Mode"]["jsonPath"] == ".spec.mode"
    assert columns["Validated"]["jsonPath"] == ('.status.conditions[?(@.type=="Validated")].status')
    assert columns["Age"] == {
        "name": "Age",
        "type": "date",
        "jsonPath": ".metadata.creationTimestamp",
    }
    assert columns["In Use"]["jsonPath"] == '.status.conditions[?(@.type=="InUse")].status'
    assert columns["Agents"]["jsonPath"] == '.status.conditions[?(@.type=="InUse")].message'
    assert columns["Agents"]["priority"] == 1  # the names: with -o wide
    assert [c["name"] for c in version["additionalPrinterColumns"] if "priority" not in c] == [
        "Mode",
        "Validated",
        "In Use",
        "Age",
    ]


def _walk(node: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = [(path, node)]
    for name, child in node.get("properties", {}).items():
        found += _walk(child, f"{path}.{name}")
    if "items" in node:
        found += _walk(node["items"], f"{path}[]")
    return found


def test_the_schema_is_structural_every_node_typed_no_refs_unions_or_titles() -> None:
    root = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _walk(root):
        assert "type" in node, path
        for forbidden in ("$ref", "$defs", "anyOf", "oneOf", "allOf", "title", "nullable"):
            assert forbidden not in node, (path, forbidden)
        assert not ("properties" in node and "additionalProperties" in node), path


def test_the_spec_schema_states_every_limit_enum_and_default_from_limits() -> None:
    spec = spec_schema()
    human = spec["properties"]["human"]
    scores = human["properties"]["scores"]
    external = spec["properties"]["external"]
    assert spec["properties"]["mode"]["enum"] == list(api.MODES)
    assert spec["properties"]["mode"]["default"] == api.DEFAULT_MODE
    assert human["required"] == ["scores"]
    assert (scores["minItems"], scores["maxItems"]) == (
        api.MIN_HUMAN_SCORES,
        api.MAX_HUMAN_SCORES,
    )
    assert external["maxItems"] == api.MAX_EXTERNAL_CHANNELS
    assert external["items"]["required"] == ["name", "score"]
    for score in (scores["items"], external["items"]["properties"]["score"]):
        assert score["required"] == ["name"]
        assert score["properties"]["dataType"]["enum"] == list(api.DATA_TYPES)
        assert score["properties"]["dataType"]["default"] == api.DEFAULT_DATA_TYPE
        categories = score["properties"]["categories"]
        assert categories["maxItems"] == api.MAX_CATEGORIES
        assert categories["x-kubernetes-list-type"] == "set"
        assert categories["items"] == {"type": "string"}
    for name in (
        scores["items"]["properties"]["name"],
        external["items"]["properties"]["name"],
        external["items"]["properties"]["score"]["properties"]["name"],
    ):
        assert (name["minLength"], name["maxLength"]) == (
            api.MIN_NAME_LENGTH,
            api.MAX_NAME_LENGTH,
        )


def test_status_conditions_are_a_list_map_keyed_by_type() -> None:
    root = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    conditions = root["properties"]["status"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    assert "type" in conditions["items"]["required"]
    assert conditions["items"]["properties"]["status"]["enum"] == ["True", "False", "Unknown"]


def test_spec_is_required_at_the_root() -> None:
    root = crd_manifest()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert root["required"] == ["spec"]


def test_a_status_written_by_the_status_writer_is_accepted_by_the_schema() -> None:
    obj = store(base_spec())
    obj["status"] = {
        "conditions": [
            {
                "type": api.CONDITION_TYPE,
                "status": "True",
                "reason": api.REASON_VALID,
                "message": messages.MESSAGE_VALID,
                "observedGeneration": 3,
                "lastTransitionTime": "2026-01-02T03:04:05Z",
            }
        ]
    }
    assert SERVER.admit(obj).accepted


# ---------------------------------------------------------------- per-field agreement


def _set(path: str, value: Any) -> Any:
    """A base spec with one field (dotted path, [i] for list items) replaced or deleted."""

    def build() -> Any:
        spec: Any = base_spec()
        *parents, last = _parts(path)
        node = spec
        for part in parents:
            node = node[part]
        if value is _DELETE:
            del node[last]
        else:
            node[last] = copy.deepcopy(value)
        return spec

    return build()


def _parts(path: str) -> list[Any]:
    parts: list[Any] = []
    for piece in path.replace("]", "").split("."):
        name, *indexes = piece.split("[")
        parts.append(name)
        parts += [int(index) for index in indexes]
    return parts


_DELETE = object()
HUMAN_NAME = "human.scores[0].name"
CHANNEL_NAME = "external[0].name"
CHANNEL_SCORE_NAME = "external[0].score.name"


def _scores(count: int) -> list[dict[str, str]]:
    return [{"name": f"s{i}"} for i in range(count)]


def _channels(count: int) -> list[dict[str, Any]]:
    return [{"name": f"channel-{i}", "score": {"name": f"external-{i}"}} for i in range(count)]


PER_FIELD_CASES = [
    # (id, spec, valid)
    ("the base store with both sources is valid", base_spec(), True),
    ("one human score is enough", {"human": {"scores": [{"name": "thumbs"}]}}, True),
    ("one external channel is enough", {"external": _channels(1)}, True),
    ("64 human scores are allowed", _set("human.scores", _scores(64)), True),
    ("65 human scores are too many", _set("human.scores", _scores(65)), False),
    ("an empty human score list is refused", _set("human.scores", []), False),
    ("32 external channels are allowed", _set("external", _channels(32)), True),
    ("33 external channels are too many", _set("external", _channels(33)), False),
    ("an empty external list beside human scores is fine", _set("external", []), True),
]
for where in (HUMAN_NAME, CHANNEL_NAME, CHANNEL_SCORE_NAME):
    PER_FIELD_CASES += [
        (f"{where} of 1 character is allowed", _set(where, "a"), True),
        (f"{where} of 128 ASCII characters is allowed", _set(where, "a" * MAX), True),
        (f"{where} of 129 ASCII characters is too long", _set(where, "a" * (MAX + 1)), False),
        (f"{where} of 128 two-byte characters counts characters", _set(where, "é" * MAX), True),
        (f"{where} of 128 emoji counts code points not bytes", _set(where, "😀" * MAX), True),
        (f"{where} of 129 emoji is too long", _set(where, "😀" * (MAX + 1)), False),
        (f"{where} empty is refused", _set(where, ""), False),
        (f"{where} null is a missing name", _set(where, None), False),
        (f"{where} missing is refused", _set(where, _DELETE), False),
        (f"{where} as a number is a type error", _set(where, 42), False),
        (f"{where} as a boolean is a type error", _set(where, True), False),
        (f"{where} as a list is a type error", _set(where, ["thumbs"]), False),
        (f"{where} with surrounding spaces only warns", _set(where, " thumbs "), True),
    ]
for where in ("human.scores[0]", "external[0].score"):
    PER_FIELD_CASES += [
        (f"{where}.dataType BOOLEAN is allowed", _set(f"{where}.dataType", "BOOLEAN"), True),
        (f"{where}.dataType null means the default", _set(f"{where}.dataType", None), True),
        (f"{where}.dataType lower case is refused", _set(f"{where}.dataType", "numeric"), False),
        (f"{where}.dataType STRING is unsupported", _set(f"{where}.dataType", "STRING"), False),
        (f"{where}.dataType as a number is a type error", _set(f"{where}.dataType", 1), False),
        (
            f"{where}.categories with 64 labels are allowed",
            _set(f"{where}.categories", [f"c{i}" for i in range(64)]),
            True,
        ),
        (
            f"{where}.categories with 65 labels are too many",
            _set(f"{where}.categories", [f"c{i}" for i in range(65)]),
            False,
        ),
        (
            f"{where}.categories with a repeated label is a duplicate",
            _set(f"{where}.categories", ["billing", "billing"]),
            False,
        ),
        (f"{where}.categories null is no categories", _set(f"{where}.categories", None), True),
        (
            f"{where}.categories holding null is a type error",
            _set(f"{where}.categories", [None]),
            False,
        ),
        (
            f"{where}.categories holding a number is a type error",
            _set(f"{where}.categories", [1]),
            False,
        ),
        (
            f"{where}.categories as a string is a type error",
            _set(f"{where}.categories", "a"),
            False,
        ),
        (f"{where} with an unknown field is refused", _set(f"{where}.label", "x"), False),
        (f"{where} as a string is a type error", _set(where, "thumbs"), False),
        (f"{where} null is refused", _set(where, None), False),
    ]
PER_FIELD_CASES += [
    ("mode Monitor is allowed (with a warning)", _set("mode", "Monitor"), True),
    ("mode null means the default", _set("mode", None), True),
    ("mode in lower case is refused", _set("mode", "enforce"), False),
    ("mode in upper case is refused", _set("mode", "ENFORCE"), False),
    ("mode as a boolean is a type error", _set("mode", True), False),
    ("an unknown field under spec is refused", _set("humans", {"scores": []}), False),
    ("an unknown field under human is refused", _set("human.score", []), False),
    ("an unknown field on a channel is refused", _set("external[0].kind", "csat"), False),
    ("human as a list is a type error", _set("human", [{"name": "thumbs"}]), False),
    ("human without scores is refused", _set("human", {}), False),
    ("human.scores as an object is a type error", _set("human.scores", {"name": "x"}), False),
    ("human.scores holding null is a type error", _set("human.scores", [None]), False),
    ("external as an object is a type error", _set("external", {"name": "x"}), False),
    ("external holding null is a type error", _set("external", [None]), False),
    ("external holding a string is a type error", _set("external", ["csat"]), False),
    ("a channel without its score is refused", _set("external[0].score", _DELETE), False),
    ("human null leaves the external source", _set("human", None), True),
    ("external null leaves the human source", _set("external", None), True),
    ("spec as a list is a type error", ["human"], False),
    ("spec as a string is a type error", "human", False),
]


@pytest.mark.parametrize(
    ("spec", "valid"),
    [pytest.param(spec, valid, id=name) for name, spec, valid in PER_FIELD_CASES],
)
def test_the_schema_refuses_exactly_what_the_verdict_refuses(spec: Any, valid: bool) -> None:
    obj = store(spec)
    outcome = SERVER.admit(obj)
    assert validate_feedbackstore(obj).valid is valid
    assert outcome.accepted is valid, outcome
    if not valid:
        assert outcome.schema_errors, "a per-field problem must be caught by the schema itself"


def test_defaults_are_applied_as_the_model_states_them() -> None:
    stored = SERVER.admit(store(base_spec())).stored["spec"]
    assert stored["mode"] == api.DEFAULT_MODE
    assert stored["human"]["scores"][0]["dataType"] == api.DEFAULT_DATA_TYPE
    assert stored["external"][0]["score"]["dataType"] == api.DEFAULT_DATA_TYPE


def test_a_missing_spec_is_refused_by_both_as_a_required_value() -> None:
    obj = store(None)
    del obj["spec"]
    assert [str(p) for p in validate_feedbackstore(obj).problems] == [
        f"spec: Required value: {messages.MSG_NO_SOURCE}"
    ]
    assert [(path, validator) for path, validator, _ in SERVER.admit(obj).schema_errors] == [
        ("", "required")
    ]


def _example_documents() -> list[Any]:
    documents = []
    for path in sorted((ROOT / "examples").rglob("*.y*ml")):
        for index, document in enumerate(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
            if isinstance(document, dict) and document.get("kind") == api.KIND:
                documents.append(pytest.param(document, id=f"{path.relative_to(ROOT)}#{index}"))
    return documents


@pytest.mark.parametrize("document", _example_documents())
def test_every_example_gets_the_same_answer_from_the_crd_and_the_verdict(document: Any) -> None:
    assert SERVER.admit(document).accepted is validate_feedbackstore(document).valid


# ---------------------------------------------------------------- generated corpus

NAMES = st.one_of(
    st.sampled_from(["thumbs", "a", "a" * MAX, "a" * (MAX + 1), "é" * MAX, "😀" * (MAX + 1), ""]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=140),
    st.none(),
    st.integers(),
    st.booleans(),
    st.lists(st.text(max_size=3), max_size=2),
)
DATA_TYPES = st.one_of(st.sampled_from([*api.DATA_TYPES, "numeric", "STRING", ""]), st.none())
LABELS = st.one_of(st.text(max_size=5), st.none(), st.integers())
CATEGORIES = st.one_of(
    st.none(),
    st.lists(LABELS, max_size=4),
    st.lists(st.text(min_size=1, max_size=4), min_size=60, max_size=70, unique=True),
    st.text(max_size=3),
)


@st.composite
def scores_decls(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(st.one_of(st.none(), st.text(max_size=3), st.integers()))
    score: dict[str, Any] = {}
    if draw(st.integers(0, 8)):
        score["name"] = draw(NAMES)
    if draw(st.booleans()):
        score["dataType"] = draw(DATA_TYPES)
    if draw(st.booleans()):
        score["categories"] = draw(CATEGORIES)
    if draw(st.integers(0, 20)) == 0:
        score[draw(st.sampled_from(["label", "datatype", "names"]))] = "x"
    return score


@st.composite
def specs(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 40)) == 0:
        return draw(st.one_of(st.none(), st.lists(st.integers(), max_size=2), st.text(max_size=3)))
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["mode"] = draw(
            st.one_of(st.sampled_from(["Enforce", "Monitor", "monitor"]), st.none())
        )
    if draw(st.integers(0, 4)):
        count = draw(st.sampled_from([0, 1, 2, 3, 64, 65]))
        scores = [{"name": f"s{i}"} for i in range(count)]
        for index in draw(st.lists(st.integers(0, max(count - 1, 0)), max_size=2)):
            if scores:
                scores[index] = draw(scores_decls())
        spec["human"] = draw(st.sampled_from([{"scores": scores}, None, {}, [scores]]))
    if draw(st.integers(0, 3)):
        count = draw(st.sampled_from([0, 1, 2, 32, 33]))
        channels: list[Any] = [{"name": f"c{i}", "score": {"name": f"e{i}"}} for i in range(count)]
        for index in draw(st.lists(st.integers(0, max(count - 1, 0)), max_size=2)):
            if channels:
                channels[index] = draw(
                    st.one_of(
                        st.builds(lambda n, s: {"name": n, "score": s}, NAMES, scores_decls()),
                        st.none(),
                        st.text(max_size=2),
                        st.fixed_dictionaries({"name": NAMES}),
                    )
                )
        spec["external"] = draw(st.sampled_from([channels, None]))
    if draw(st.integers(0, 25)) == 0:
        spec[draw(st.sampled_from(["humans", "Mode", "extern"]))] = {}
    return spec


@settings(max_examples=400)
@given(specs())
def test_on_a_generated_corpus_the_crd_accepts_exactly_what_the_verdict_accepts(spec: Any) -> None:
    obj = store(spec)
    assert SERVER.admit(obj).accepted is validate_feedbackstore(obj).valid
