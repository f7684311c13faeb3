"""The cross-field invariants of SPEC §1 as CEL `x-kubernetes-validations`.

Per-field limits live in the OpenAPI schema; what a schema cannot say (at
least one source, names unique across lists) is written here once, with the
platform's messages from `limits`, so a cluster without the webhook still
refuses the same objects.

Each rule sits on the narrowest node that can see everything it compares, so
kube-apiserver reports it at the most precise path it can (`spec.human.scores`
rather than `spec`). Rules use only `rule` and `message` (no `fieldPath`,
`reason` or `messageExpression`, which need Kubernetes 1.27/1.28), so the
CRD is accepted unchanged from Kubernetes 1.25 on.

kube-apiserver skips CEL when the object already has a blocking schema error
(required, enum, too long, too many, wrong type), so a rule may assume that
required fields are present and that every list and string respects its
bound. Optional fields (`human`, `external`) are guarded with `has(...) ? rule :
true` rather than `!has(...) || rule`: the two mean the same in CEL, but the
conditional never evaluates the side it does not take in any engine, while
cel-python evaluates both sides of `||` and, inside a comprehension, lets the
resulting errors compound until it runs out of memory.

Every list a rule iterates and every string it compares is bounded by
`maxItems`/`maxLength` in the schema: kube-apiserver estimates each rule's
worst-case cost from those bounds and rejects the CRD when the estimate
exceeds its per-rule limit (tests/test_crd_cel.py derives every path a rule
reads from its text and checks the bound).
"""

from __future__ import annotations

from dataclasses import dataclass

from webhook.rules import limits


@dataclass(frozen=True, slots=True)
class CelRule:
    """One `x-kubernetes-validations` entry and where in the spec schema it is attached.

    `at` is a path of property names below `spec` ("" for spec itself).
    """

    at: str
    rule: str
    message: str

    def validation(self) -> dict[str, str]:
        return {"rule": self.rule, "message": self.message}


NO_SOURCE = CelRule(
    at="",
    rule=(
        "(has(self.human) && size(self.human.scores) > 0)"
        " || (has(self.external) && size(self.external) > 0)"
    ),
    message=limits.MSG_NO_SOURCE,
)

DUPLICATE_HUMAN = CelRule(
    at="human.scores",
    rule="self.all(x, self.exists_one(y, y.name == x.name))",
    message=limits.MSG_DUP_HUMAN,
)

DUPLICATE_ACROSS = CelRule(
    at="",
    rule=(
        "has(self.human) && has(self.external)"
        " ? self.external.all(c, !self.human.scores.exists(s, s.name == c.score.name))"
        " : true"
    ),
    message=limits.MSG_DUP_ACROSS,
)

# A name also declared by a human score is already reported by DUPLICATE_ACROSS
# (the verdict reports each later occurrence once, with that reason), so this
# rule only counts names that no human score declares.
DUPLICATE_EXTERNAL = CelRule(
    at="",
    rule=(
        "has(self.external) ? self.external.all(c,"
        " (has(self.human) ? self.human.scores.exists(s, s.name == c.score.name) : false)"
        " || self.external.exists_one(d, d.score.name == c.score.name)) : true"
    ),
    message=limits.MSG_DUP_EXTERNAL,
)

DUPLICATE_CHANNEL = CelRule(
    at="external",
    rule="self.all(c, self.exists_one(d, d.name == c.name))",
    message=limits.MSG_DUP_CHANNEL,
)

SPEC_RULES: tuple[CelRule, ...] = (
    NO_SOURCE,
    DUPLICATE_HUMAN,
    DUPLICATE_ACROSS,
    DUPLICATE_EXTERNAL,
    DUPLICATE_CHANNEL,
)
