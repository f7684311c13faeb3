"""The ValidatingAdmissionPolicies: the webhook's verdict, word for word, without a webhook.

Each policy is evaluated offline by cel-python (tests/support/policy_cel.py) on objects as
kube-apiserver hands them to the webhook (keys sorted, as it serialises a map), and its one
denial message must be the webhook's denial message (`invalid_status`, after `is invalid: `),
in both forms. Where CEL cannot say what the webhook says, a test here names the difference.
The real server decides: tests/kube/test_policy_real.py sends the whole corpus.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
from typing import Any

import pytest
import yaml

from tests.support.crd_apiserver import CrdServer
from tests.support.policy_cel import MAX_MESSAGE_BYTES, PolicyProgram
from tests.webhook.manifests.test_cel_rules import CROSS_FIELD_CASES
from webhook import install
from webhook.admission.denial import PROBLEMS_BUDGET, SEPARATOR, invalid_status
from webhook.cli.manifests import POLICY_FILE, REGISTRATION, policy_text
from webhook.manifests import policy
from webhook.manifests.crd import crd_manifest
from webhook.rules import api, messages
from webhook.rules.declarations import RULES
from webhook.rules.forms import INLINE, STORE, Form
from webhook.rules.summary import fit_lines

ROOT = pathlib.Path(__file__).resolve().parents[3]
MANIFESTS = ROOT / "manifests"
REGISTRATION_DOC = yaml.safe_load((MANIFESTS / REGISTRATION).read_text(encoding="utf-8"))
DOCUMENTS = policy.manifests(REGISTRATION_DOC)
_PROGRAMS: dict[tuple[Form, str], PolicyProgram] = {}
HINT = re.compile(r'; did you mean "[^"]*"\?')


def program(form: Form, action: str = "Deny") -> PolicyProgram:
    if (form, action) not in _PROGRAMS:
        documents = policy.manifests(REGISTRATION_DOC, action)
        name = install.JUDGE_ENTRY if form is STORE else install.AGENT_ENTRY
        (found,) = [
            d
            for d in documents
            if d["kind"] == "ValidatingAdmissionPolicy" and d["metadata"]["name"] == name
        ]
        _PROGRAMS[form, action] = PolicyProgram(found)
    return _PROGRAMS[form, action]


def holding(form: Form, spec: Any) -> dict[str, Any]:
    """The object holding `spec` in `form`, as kube-apiserver sends it (keys sorted)."""
    obj: Any = spec
    for key in reversed(form.path.steps):
        obj = {key: obj}
    return json.loads(json.dumps(obj, sort_keys=True))


def webhook_says(form: Form, spec: Any) -> str | None:
    """The webhook's denial after `is invalid: `, None when it allows."""
    verdict = form.verdict(holding(form, spec))
    if verdict.valid:
        return None
    return invalid_status("x", verdict, form)["message"].split(" is invalid: ", 1)[1]


def webhook_says_in_bytes(form: Form, spec: Any) -> str | None:
    """The webhook's denial message, its problems fitted by bytes rather than characters:
    what the policy says (kube-apiserver drops a message over 5 KiB)."""
    verdict = form.verdict(holding(form, spec))
    if verdict.valid:
        return None
    lines = [str(p) for p in verdict.problems]
    kept, _ = fit_lines([line.encode() for line in lines], PROBLEMS_BUDGET, SEPARATOR)
    shown = lines[: len(kept)]
    if verdict.problem_count > len(shown):
        shown.append(messages.more_problems(verdict.problem_count - len(shown)))
    return shown[0] if len(shown) == 1 else f"[{SEPARATOR.join(shown)}]"


def policy_says(form: Form, spec: Any) -> str | None:
    failures = program(form).evaluate(holding(form, spec)).failures
    assert len(failures) <= 1, failures
    return failures[0] if failures else None


def score(name: Any = "thumbs", **fields: Any) -> dict[str, Any]:
    return {"name": name, **fields}


def channel(name: Any = "csat", score_name: Any = "csat") -> dict[str, Any]:
    return {"name": name, "score": {"name": score_name}}


MANY = [score(f"s{i}", dataType="PERCENT") for i in range(api.MAX_HUMAN_SCORES)]

# Every rule and limit of the verdict, at least once; the corpora of the CRD and of the verdict
# go to the real server.
CASES = [
    ("a valid store", {"human": {"scores": [score()]}, "mode": "Monitor"}),
    ("no source at all", {}),
    ("an empty human list and no channel", {"human": {"scores": []}, "external": []}),
    ("human without scores", {"human": {}}),
    ("a spec that is no object", "thumbs"),
    ("a human that is a list", {"human": [1]}),
    ("scores that are a string", {"human": {"scores": "thumbs"}}),
    ("a null score and a numeric one", {"human": {"scores": [None, 7]}}),
    (
        "names missing, empty, numeric and too long",
        {"human": {"scores": [{}, score(""), score(3), score("n" * 129)]}},
    ),
    (
        "modes and data types outside their enums, long values cut",
        {
            "mode": "x" * 100,
            "human": {"scores": [score(dataType='QU"OTE\n'), score("b", dataType=1)]},
        },
    ),
    (
        "categories: not a list, too many, repeated and not strings",
        {
            "human": {
                "scores": [
                    score("a", categories="x"),
                    score("b", categories=[str(i) for i in range(65)]),
                    score("c", dataType="CATEGORICAL", categories=["x", "y", "x", 1, "x"]),
                ]
            }
        },
    ),
    ("a repeated human score name", {"human": {"scores": [score("a"), score("b"), score("a")]}}),
    (
        "every cross-source duplicate",
        {
            "human": {"scores": [score("a"), score("b")]},
            "external": [
                channel("c", "b"),
                channel("c", "z"),
                channel("d", "z"),
                channel("e", "a"),
            ],
        },
    ),
    ("channels that are no objects", {"external": ["csat", channel(), None]}),
    ("a channel without its score", {"external": [{"name": "csat"}, {"name": "n", "score": 1}]}),
    (
        "unknown fields everywhere, without a close known name",
        {
            "zeta": 1,
            "alpha": None,
            "human": {"scores": [score(qq=1)], "xx": 2},
            "external": [{"name": "c", "score": {"name": "d", "zz": 1}, "yy": 3}],
        },
    ),
    ("nine unknown fields: eight named, one counted", {f"k{i}": i for i in range(9)}),
    (
        "too many scores and channels",
        {
            "human": {"scores": [score(f"s{i}") for i in range(65)]},
            "external": [channel(f"c{i}", f"x{i}") for i in range(33)],
        },
    ),
    ("more problems than a message holds", {"human": {"scores": MANY}}),
]


@pytest.mark.parametrize("form", [STORE, INLINE], ids=["as a FeedbackStore", "as spec.feedback"])
@pytest.mark.parametrize(("name", "spec"), CASES, ids=[name for name, _ in CASES])
def test_the_policy_says_what_the_webhook_says(form: Form, name: str, spec: Any) -> None:
    assert policy_says(form, spec) == webhook_says(form, spec)


def test_more_problems_than_fit_end_with_the_webhooks_count() -> None:
    said = policy_says(STORE, {"human": {"scores": MANY}})
    assert said is not None
    assert said.endswith(" more problems]")
    assert len(said) < PROBLEMS_BUDGET + 64


# ---------------------------------------------------------------- where CEL says less


def test_an_unknown_field_gets_no_did_you_mean() -> None:
    spec = {"human": {"scores": [score()]}, "modes": "Enforce"}
    webhook = webhook_says(STORE, spec)
    assert webhook is not None
    assert '; did you mean "spec.mode"?' in webhook
    assert policy_says(STORE, spec) == HINT.sub("", webhook)


def test_past_the_ranked_unknown_keys_none_is_named_but_all_are_counted() -> None:
    count = policy.UNKNOWN_KEYS_RANKED + 1
    spec = {"human": {"scores": [score()]}, **{f"k{i:02d}": i for i in range(count)}}
    webhook = webhook_says(STORE, spec)
    assert webhook is not None
    assert webhook.startswith("[spec.k00: Forbidden: unknown field")
    assert policy_says(STORE, spec) == messages.more_problems(count)


def test_the_bound_counts_bytes_where_the_webhook_counts_characters() -> None:
    """Repeated categories of 4-byte characters: the webhook's 4056 characters would be over
    5 KiB, which kube-apiserver drops; the policy shows fewer problems, then the count."""
    wide = "\N{GRINNING FACE}" * 64
    repeated = {"dataType": "CATEGORICAL", "categories": [wide, wide]}
    spec = {"human": {"scores": [score(f"s{i}", **repeated) for i in range(64)]}}
    webhook = webhook_says(STORE, spec)
    said = policy_says(STORE, spec)
    assert webhook is not None
    assert said is not None
    assert len(webhook.encode()) > MAX_MESSAGE_BYTES
    assert len(said.encode()) <= PROBLEMS_BUDGET + 64
    assert said == webhook_says_in_bytes(STORE, spec)
    assert webhook.startswith(said.rsplit(", and ", 1)[0] + ", ")
    assert said.endswith(" more problems]")


# ---------------------------------------------------------------- one source with the CRD


CRD_SERVER = CrdServer.from_crd(crd_manifest())
# The platform's words: the cross-field rules' (what the CRD's CEL says).
PLATFORM = tuple(rule.words for rule in RULES if rule.cross_field)


@pytest.mark.parametrize(
    ("name", "spec"),
    [(name, spec) for name, spec, _ in CROSS_FIELD_CASES],
    ids=[name for name, _, _ in CROSS_FIELD_CASES],
)
def test_the_policy_breaks_the_crds_cel_rules_where_the_crd_does(name: str, spec: Any) -> None:
    """Each cross-field rule the CRD's CEL finds broken, the policy reports (and no other): both
    are rendered from the same declarations (tests/webhook/rules/test_declarations.py), and
    here the two renderings are seen to agree on the CRD's corpus."""
    crd = CRD_SERVER.admit({"apiVersion": api.API_VERSION, "kind": api.KIND, "spec": spec})
    assert crd.cel_ran
    problems = program(STORE).evaluate(holding(STORE, spec)).variables["problems"]
    said = {m for m in PLATFORM if any(m in str(p) for p in problems)}
    assert said == crd.cel_messages


# ---------------------------------------------------------------- scope and actions


@pytest.mark.parametrize("entry", [install.JUDGE_ENTRY, install.AGENT_ENTRY])
def test_each_policy_matches_what_its_registration_entry_sends_the_webhook(entry: str) -> None:
    (registered,) = [e for e in REGISTRATION_DOC["webhooks"] if e["name"] == entry]
    (found,) = [d for d in DOCUMENTS if d["kind"] == "ValidatingAdmissionPolicy"
                and d["metadata"]["name"] == entry]  # fmt: skip
    spec = found["spec"]
    assert spec["matchConstraints"]["resourceRules"] == registered["rules"]
    assert spec["matchConstraints"]["namespaceSelector"] == registered["namespaceSelector"]
    assert spec["matchConditions"] == registered["matchConditions"]
    excluded = spec["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]["values"]
    assert install.NAMESPACE in excluded
    assert "kube-system" in excluded


@pytest.mark.parametrize("action", install.POLICY_ACTIONS)
def test_the_bindings_take_the_action_asked_for(action: str) -> None:
    bindings = [
        d
        for d in policy.manifests(REGISTRATION_DOC, action)
        if d["kind"] == "ValidatingAdmissionPolicyBinding"
    ]
    assert [b["spec"]["validationActions"] for b in bindings] == [[action], [action]]
    assert {b["spec"]["policyName"] for b in bindings} == {
        install.JUDGE_ENTRY,
        install.AGENT_ENTRY,
    }


def test_under_warn_each_problem_is_a_failure_of_its_own() -> None:
    spec = {"human": {"scores": [score("a"), score("a")]}, "mode": "X"}
    failures = program(STORE, "Warn").evaluate(holding(STORE, spec)).failures
    verdict = STORE.verdict(holding(STORE, spec))
    assert failures == tuple(str(p) for p in verdict.problems)


def test_under_warn_past_the_warnings_shown_the_rest_are_counted() -> None:
    failures = program(STORE, "Warn").evaluate(holding(STORE, {"human": {"scores": MANY}}))
    assert len(failures.failures) == policy.WARNINGS_SHOWN
    rest = api.MAX_HUMAN_SCORES - (policy.WARNINGS_SHOWN - 1)
    assert failures.failures[-1] == messages.more_problems(rest)


# kube-apiserver's warning recorder (k8s.io/apiserver): 4,096 characters of warnings per
# response, else each warning cut to 256; and what it puts before each, as seen on v1.37.2.
KUBE_WARNINGS_TOTAL = 4096
KUBE_PREFIX = "Validation failed for ValidatingAdmissionPolicy '{0}' with binding '{0}': "


@pytest.mark.parametrize(
    ("form", "entry"),
    [(STORE, install.JUDGE_ENTRY), (INLINE, install.AGENT_ENTRY)],
    ids=["a FeedbackStore", "an AgentDeployment"],
)
def test_under_warn_the_warnings_shown_fit_kube_apiservers_budget_whole(
    form: Form, entry: str
) -> None:
    """Past its budget kube-apiserver cuts every warning, so the policy shows no more than fit
    whole, at their longest: every channel repeats a score name of the longest length, each
    line giving where it was first declared."""
    name = "n" * api.MAX_NAME_LENGTH
    channels = [
        {"name": f"channel-{index}", "score": score(name)}
        for index in range(api.MAX_EXTERNAL_CHANNELS)
    ]
    failures = program(form, "Warn").evaluate(holding(form, {"external": channels}))
    sent = [KUBE_PREFIX.format(entry) + failure for failure in failures.failures]
    assert len(sent) == policy.WARNINGS_SHOWN
    assert sum(map(len, sent)) <= KUBE_WARNINGS_TOTAL


# ---------------------------------------------------------------- the committed component


def test_the_committed_policies_are_what_the_command_prints_today() -> None:
    committed = MANIFESTS / "policy" / POLICY_FILE
    assert committed.read_text(encoding="utf-8") == policy_text(MANIFESTS, "Deny"), (
        f"manifests/policy is stale: run feedbackstore-webhook manifests policy --out {committed}"
    )


def test_the_component_lists_the_policies() -> None:
    kustomization = yaml.safe_load((MANIFESTS / "policy" / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Component"
    assert kustomization["resources"] == [POLICY_FILE]


def test_manifests_policy_check_reports_a_stale_file_and_writes_nothing(
    tmp_path: pathlib.Path,
) -> None:
    target = tmp_path / POLICY_FILE
    target.write_text(policy_text(MANIFESTS, "Deny").replace("Deny", "Warn"), encoding="utf-8")
    before = target.read_text(encoding="utf-8")
    result = _cli("manifests", "policy", "--manifests", str(MANIFESTS), "--out", str(target),
                  "--check")  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert target.read_text(encoding="utf-8") == before
    printed = _cli("manifests", "policy", "--manifests", str(MANIFESTS), "--action", "Warn")
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == policy_text(MANIFESTS, "Warn")


def test_manifests_policy_without_a_registration_is_a_usage_error(tmp_path: pathlib.Path) -> None:
    result = _cli("manifests", "policy", "--manifests", str(tmp_path))
    assert result.returncode == 2
    assert "cannot read the registration" in result.stderr


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webhook.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
