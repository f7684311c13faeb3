"""The verdict as ValidatingAdmissionPolicies: the same problems, judged inside kube-apiserver,
rendered from the rule declarations the CRD's CEL is rendered from (webhook/rules/
declarations.py): each problem's words, limit and field come from its rule; the walk here only
decides in which order a reader meets them, as the verdict's does.

A cluster whose CRDs belong to a platform (no CEL on its FeedbackStore CRD, an open `spec` on its
AgentDeployment CRD) gets the webhook's whole verdict without running a webhook: one policy per
registration entry that judges (FeedbackStores; AgentDeployment.spec.feedback), matching what
that entry matches, with its matchConditions (the UPDATE ratchet: an unchanged spec is not
judged) and its namespace exclusions, read from the registration manifest rather than restated.

Every problem is in one denial: kube-apiserver reports only the first failed validation of a
policy on Deny, so one validation carries `variables.problems` (each problem as the webhook
prints it, in the webhook's order), joined into one line by its messageExpression and bounded
as the webhook bounds its denial: the first problems in full, then `and N more problems`.

The declaration is judged as `dyn`: the policy must hold under any schema for it, typed (a
FeedbackStore CRD) or open (`x-kubernetes-preserve-unknown-fields`), so it tests each value's
type before using it, as the webhook's walk does. Every list is walked only to its limit (the
API's maximum, as the webhook judges only that many items), so a request costs what a
maximal object costs. CEL before 1.33 has no index in comprehensions, no `flatten` and no
`sort`: items are walked by a literal list of indexes, lists of lists are joined and split
again, and unknown keys are ordered by rank (kube-apiserver sends the webhook an object's keys
sorted; CEL iterates a map in no order).

Where CEL cannot say what the webhook says, the policy says less, and tests/webhook/manifests/
test_policy.py shows each difference: no `did you mean` after an unknown field (a fuzzy
match); past UNKNOWN_KEYS_RANKED unknown keys in one object, none named, all counted; the
bound counts bytes, not characters (kube-apiserver drops a message over 5 KiB); a problem
holding PROBLEM_SEPARATOR would count as two.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from webhook import install
from webhook.admission.denial import INVALID_REASON, PROBLEMS_BUDGET, SEPARATOR
from webhook.manifests.cel_rules import literal
from webhook.manifests.crd import PART_OF
from webhook.rules import api, messages
from webhook.rules.declarations import (
    CHANNEL,
    HUMAN,
    ITEM,
    NO_SOURCE,
    RULES,
    SCORE,
    SPEC,
    Check,
    Owner,
    Rule,
    Steps,
    declared,
    declared_at,
)
from webhook.rules.field_errors import GO_ESCAPES, SHOWN_VALUE, json_type_name, required
from webhook.rules.field_path import Path
from webhook.rules.forms import INLINE, STORE, Form
from webhook.text import ELLIPSIS

ACTIONS: Final = install.POLICY_ACTIONS
DEFAULT_ACTION: Final = install.DEFAULT_POLICY_ACTION
# The oldest minor whose policies have every CEL function used here (GA policies, `join`).
MIN_KUBERNETES: Final = (1, 30)
# Unknown keys in one object that are put in order to be named: ranking costs their square.
UNKNOWN_KEYS_RANKED: Final = 32
# Joins one item's problems, and splits them again, to flatten a list of lists; written in CEL
# with escapes, so the manifests hold no control characters.
PROBLEM_SEPARATOR: Final = "\x00\x1f\x00"
_SEPARATOR_CEL: Final = "'" + "".join(f"\\x{ord(c):02x}" for c in PROBLEM_SEPARATOR) + "'"
# Items whose categories one variable judges: each variable is a program of its own, within
# kube-apiserver's per-call cost limit (1,000,000) however many items there are: 8 lists of 64
# categories of 128 characters cost about 420,000 (each repeat found by a traversal).
CATEGORY_CHUNK: Final = 8
# kube-apiserver keeps 4,096 characters of warnings per response; past that it cuts every
# warning to its first 256 (k8s.io/apiserver's warning recorder), which would cut most lines
# (seen on the real server: 20 scores of one name, 15 warnings cut inside their "first
# declared at"). Each warning is kube-apiserver's prefix naming the policy and binding, then a
# problem line; a repeated name with its first declaration is the longest common line, 240
# characters at most (a channel's score name under spec.feedback.external[31], its value cut
# to 64). So as many warnings as fit whole at that length are shown, the last counting the rest.
WARNINGS_TOTAL: Final = 4096
_LONG_LINE: Final = 240


def warning_prefix(policy: str) -> str:
    """What kube-apiserver puts before a Warn validation's message (the binding shares the
    policy's name)."""
    return f"Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{policy}': "


WARNINGS_SHOWN: Final = WARNINGS_TOTAL // (
    max(len(warning_prefix(entry)) for entry in install.ENTRIES) + _LONG_LINE
)
# The most lines a denial can show: every line has at least `<path>: Required value`.
_SHORTEST_LINE = len(str(required(api.SPEC)))
_MOST_LINES = PROBLEMS_BUDGET // (_SHORTEST_LINE + len(SEPARATOR)) + 1
# The registration entry each form's policy takes its rules, conditions and scope from.
ENTRIES: Final[Mapping[str, Form]] = {install.JUDGE_ENTRY: STORE, install.AGENT_ENTRY: INLINE}
# The decimal text of every index a problem names, one literal list: `string(i)` for each would
# cost a conversion per item.
_LONGEST_LIST = max(r.bound for r in RULES if r.check is Check.MAX_ITEMS)
DECIMAL_INDEXES: Final = "[" + ", ".join(f"'{index}'" for index in range(_LONGEST_LIST)) + "]"

# ---------------------------------------------------------------- problems as CEL text

# Markers rendered by the rules' own constructors, then replaced by CEL: every word a policy
# says comes from field_errors and messages, never restated here.
_PATH = "\x01path\x01"
_KEY = "\x01key\x01"
_VALUE = "\x01value\x01"
_COUNT = 987_654_321


class _JsonType:
    """A value whose JSON type name is a marker, for `type_invalid`."""


_JsonType.__name__ = "\x01type\x01"
_TYPE = json_type_name(_JsonType())
_MARKERS = re.compile("|".join(map(re.escape, (_PATH, _KEY, f'"{_VALUE}"', _TYPE, str(_COUNT)))))


def _template(text: str, parts: Mapping[str, Iterable[str]]) -> str:
    """CEL for `text`, its markers replaced in turn by the CEL expressions in `parts`."""
    queues = {marker: list(exprs) for marker, exprs in parts.items()}
    pieces: list[str] = []
    last = 0
    for found in _MARKERS.finditer(text):
        if found.start() > last:
            pieces.append(literal(text[last : found.start()]))
        pieces.append(queues[found.group()].pop(0))
        last = found.end()
    if last < len(text):
        pieces.append(literal(text[last:]))
    assert not any(queues.values()), f"unused parts for {text!r}"
    return " + ".join(pieces)


def _escaped(value: str) -> str:
    """CEL escaping `value` as `field_errors.quote` does."""
    for raw, escaped in GO_ESCAPES:
        value = f"{value}.replace({literal(raw)}, {literal(escaped)})"
    return value


def _shown(value: str) -> str:
    """CEL for `format_value` of a string: cut, then quoted."""
    kept = SHOWN_VALUE - len(ELLIPSIS)
    cut = f"(size({value}) > {SHOWN_VALUE} ? {value}.substring(0, {kept}) + '{ELLIPSIS}' : {value})"
    return f"'\"' + {_escaped(cut)} + '\"'"


_JSON_TYPES: tuple[object, ...] = ({}, [], "", 0, 0.5, True)
_CEL_TYPES = ("map", "list", "string", "int", "double", "bool")


def _json_type(value: str) -> str:
    """CEL for `json_type_name(value)` (null last)."""
    text = literal(json_type_name(None))
    for sample, cel_type in reversed(tuple(zip(_JSON_TYPES, _CEL_TYPES, strict=True))):
        text = f"type({value}) == {cel_type} ? {literal(json_type_name(sample))} : {text}"
    return f"({text})"


def _said(rule: Rule, path: str, value: str = "", *, below: Steps = (), first: str = "") -> str:
    """CEL for `rule`'s problem at `<path>` (CEL) and the literal steps `below` it: `value` is
    CEL for the bad value (a list's for MAX_ITEMS), `first` for where a name came first."""
    at = Path(_PATH)
    for step in below:
        at = at.child(step)
    if rule.check is Check.TYPE:
        text, parts = rule.problem(at, _JsonType()), {_TYPE: [_json_type(value)]}
    elif rule.check is Check.MAX_ITEMS:
        text, parts = rule.problem(at, _COUNT), {str(_COUNT): [f"string(size({value}))"]}
    elif rule.check in (Check.ENUM, Check.DISTINCT):
        text, parts = rule.problem(at, _VALUE), {f'"{_VALUE}"': [_shown(value)]}
    elif rule.check is Check.UNIQUE:
        text = rule.problem(at, _VALUE, _KEY)
        parts = {f'"{_VALUE}"': [_shown(value)], _KEY: [first]}
    else:
        text, parts = rule.problem(at), {}
    return _template(str(text), {_PATH: [path], **parts})


def _absent(owner: str, name: str) -> str:
    """A field left out or null (the webhook reads a null as absent, as Kubernetes does)."""
    return f"(!has({owner}.{name}) || type({owner}.{name}) == null_type)"


def _reach(obj: str, steps: Steps) -> str:
    """CEL: the declaration `obj` holds a list at `steps`, each object on the way a map."""
    held = [f"type({obj}) == map"]
    for depth, step in enumerate(steps, 1):
        held.append(f"!{_absent(obj, step)}")
        obj = f"{obj}.{step}"
        held.append(f"type({obj}) == {'list' if depth == len(steps) else 'map'}")
    return " && ".join(held)


def _indexes(count: int, items: str, var: str = "i") -> str:
    """CEL for the indexes (named `var`) of `items` the walk judges: its first `count`."""
    return f"[{', '.join(map(str, range(count)))}].filter({var}, {var} < size({items}))"


def _flat(groups: str) -> str:
    """CEL flattening a list of lists of problems: each joined, all joined, split again."""
    sep = _SEPARATOR_CEL
    return f"{groups}.map(g, g.join({sep})).join({sep}).split({sep}).filter(p, p != '')"


def _list(*lists: str) -> str:
    return " + ".join(f"({item})" for item in lists) if lists else "[]"


# ---------------------------------------------------------------- the declarations, as CEL


def _unknown(obj: str, owner: Owner, path: str) -> tuple[str, str]:
    """(problems, unjudged count) of `obj`'s keys not in its owner's known fields: named in
    order up to MAX_UNKNOWN_FIELDS_NAMED when at most UNKNOWN_KEYS_RANKED, the rest counted."""
    rule = declared(owner, (), Check.KNOWN_FIELDS)
    assert isinstance(rule.limit, frozenset)
    known = sorted(rule.limit)
    keys = "[" + ", ".join(literal(name) for name in known) + "]"
    unknown = f"{obj}.filter(k, !(k in {keys}))"
    count = f"(size({obj}) - {' - '.join(f'(has({obj}.{n}) ? 1 : 0)' for n in known)})"
    named = api.MAX_UNKNOWN_FIELDS_NAMED
    ranks = f"[{', '.join(map(str, range(named)))}]"
    key = f"{unknown}.filter(k, size({unknown}.filter(j, j < k)) == r)[0]"
    line = _template(
        str(rule.problem(Path(_PATH).child(_KEY))),
        {_PATH: [path, path], _KEY: ["u", _escaped("u")]},
    )
    problems = (
        f"{count} == 0 || {count} > {UNKNOWN_KEYS_RANKED} ? [] : "
        f"{ranks}.filter(r, r < {count}).map(r, {key}).map(u, {line})"
    )
    unjudged = (
        f"({count} > {UNKNOWN_KEYS_RANKED} ? {count} : {count} > {named} ? {count} - {named} : 0)"
    )
    return problems, unjudged


def _usable(obj: str, owner: Owner) -> str:
    """`obj` is an object with a usable name (the walk's `_name` returns it)."""
    name = f"{obj}.name"
    shortest = declared(owner, ("name",), Check.REQUIRED).bound
    longest = declared(owner, ("name",), Check.MAX_LENGTH).bound
    return (
        f"(type({obj}) == map && !{_absent(obj, 'name')} && type({name}) == string"
        f" && size({name}) >= {shortest} && size({name}) <= {longest})"
    )


def _name(obj: str, path: str, owner: Owner) -> str:
    """Problems of `<obj>.name` (an object)."""
    name = f"{obj}.name"
    wrong = _said(declared(owner, ("name",), Check.TYPE), f"{path} + '.name'", name)
    too_long = declared(owner, ("name",), Check.MAX_LENGTH)
    return (
        f"{_absent(obj, 'name')} || (type({name}) == string && size({name}) == 0)"
        f" ? [{_said(declared(owner, ('name',), Check.REQUIRED), path, below=('name',))}]"
        f" : type({name}) != string ? [{wrong}]"
        f" : size({name}) > {too_long.bound} ? [{_said(too_long, path, below=('name',))}]"
        " : []"
    )


def _supported(value: str, path: str, owner: Owner, child: str) -> str:
    rule = declared(owner, (child,), Check.ENUM)
    assert isinstance(rule.limit, tuple)
    listed = "[" + ", ".join(map(literal, rule.limit)) + "]"
    at = f"{path} + {literal('.' + child)}"
    unsupported = _said(rule, path, value, below=(child,))
    wrong = _said(declared(owner, (child,), Check.TYPE), at, value)
    return f"type({value}) != string ? [{wrong}] : !({value} in {listed}) ? [{unsupported}] : []"


def _categories(score: str, path: str) -> str:
    """Problems of `<score>.categories` (the ScoreDecl `score` at `path` is an object)."""
    categories = f"{score}.categories"
    at = f"{path} + '.categories'"
    item = f"{categories}[ci]"
    item_at = f"{at} + '[' + {DECIMAL_INDEXES}[ci] + ']'"
    each = ("categories", ITEM)
    repeated = _said(declared(SCORE, each, Check.DISTINCT), item_at, item)
    most = declared(SCORE, ("categories",), Check.MAX_ITEMS)
    listed = (
        f"{_indexes(most.bound, categories, 'ci')}.map(ci,"
        f" type({item}) != string ? {_said(declared(SCORE, each, Check.TYPE), item_at, item)}"
        f" : {categories}.indexOf({item}) < ci ? {repeated} : '').filter(p, p != '')"
    )
    wrong = _said(declared(SCORE, ("categories",), Check.TYPE), at, categories)
    return (
        f"({_absent(score, 'categories')} ? []"
        f" : type({categories}) != list ? [{wrong}]"
        f" : (size({categories}) > {most.bound}"
        f" ? [{_said(most, path, categories, below=('categories',))}] : []) + {listed})"
    )


def _score(score: str, path: str, categories: str) -> tuple[str, str]:
    """(problems, unjudged) of the ScoreDecl `score` at `path`, which must be an object;
    `categories`: CEL for the problems of its categories (a chunk's variable)."""
    unknown, unjudged = _unknown(score, SCORE, path)
    data_type = f"{_absent(score, 'dataType')} ? [] : " + _supported(
        f"{score}.dataType", path, SCORE, "dataType"
    )
    return _list(unknown, _name(score, path, SCORE), data_type, categories), unjudged


def _chunks(count: int) -> range:
    return range(0, count, CATEGORY_CHUNK)


def _chunked(prefix: str, count: int) -> str:
    """CEL for item `i`'s categories' problems, from the variables `<prefix><k>`."""
    listed = ", ".join(f"variables.{prefix}{k}" for k in range(len(_chunks(count))))
    return f"[{listed}][i / {CATEGORY_CHUNK}][i % {CATEGORY_CHUNK}]"


def _keys(rule: Rule) -> str:
    """The variable holding each judged item's key for a UNIQUE rule ('' where unusable):
    `humanNames` for the names in `human.scores`."""
    words = [rule.field[0], *rule.key[:-1]]
    return "variables." + words[0] + "".join(word.capitalize() for word in words[1:]) + "Names"


def _unique_keys(rule: Rule, declaration: str) -> str:
    """CEL for `_keys(rule)`: a UNIQUE rule's key of each judged item, '' where the item has
    no usable one, or where the rule leaves the name to another (`unless`)."""
    items = f"{declaration}.{'.'.join(rule.field)}"
    item = f"{items}[i]"
    usable, key = _usable_key(item, rule)
    if rule.unless is not None and rule.unless.first_in is not None:
        usable = f"{usable} && !({key} in {_keys(rule.unless.first_in)})"
    longest = declared_at(rule.field, Check.MAX_ITEMS).bound
    judged = f"{_indexes(longest, items)}.map(i, {usable} ? {key} : '')"
    return f"{_reach(declaration, rule.field)} ? {judged} : []"


def _usable_key(item: str, rule: Rule, *, reached: bool = False) -> tuple[str, str]:
    """(CEL: `item` holds a usable key of `rule`, CEL for the key); `reached`: the walk is
    known to have passed the objects on the way to it."""
    held = []
    obj = item
    for step in rule.key[:-1]:
        if not reached:
            held.append(f"type({obj}) == map && !{_absent(obj, step)}")
        obj = f"{obj}.{step}"
    name = declared_at((*rule.field, ITEM, *rule.key), Check.MAX_LENGTH)
    assert name.field == ("name",), name
    return " && ".join([*held, _usable(obj, name.owner)]), f"{obj}.name"


def _again(rules: Iterable[Rule], item: str, item_at: str, list_at: Callable[[Rule], str]) -> str:
    """CEL for the problem of item `i` (`item`, at `item_at`) under the first of the UNIQUE
    `rules` it breaks: its key declared before, in its list or in the rule's `first_in`."""
    said = "[]"
    for rule in reversed(tuple(rules)):
        if rule.first_in is not None:
            usable, key = _usable_key(item, rule, reached=True)
            theirs = _keys(rule.first_in)
            broken = f"{usable} && {key} in {theirs}"
            first_list, index = rule.first_in, f"{theirs}.indexOf({key})"
        else:
            names = _keys(rule)
            broken = f"{names}[i] != '' && {names}.indexOf({names}[i]) < i"
            first_list, index = rule, f"{names}.indexOf({names}[i])"
        first = (
            f"{list_at(first_list)} + '[' + {DECIMAL_INDEXES}[{index}]"
            f" + {literal('].' + '.'.join(first_list.key))}"
        )
        value = f"{item}.{'.'.join(rule.key)}"
        problem = _said(rule, item_at, value, below=rule.key, first=first)
        said = f"{broken} ? [{problem}] : {said}"
    return said


def _unique(field: Steps, head: str) -> list[Rule]:
    """The UNIQUE rules on the list at `field` whose key starts at `head`, in their order."""
    return [r for r in RULES if r.check is Check.UNIQUE and r.field == field and r.key[0] == head]


class _Walk:
    """The CEL of one form: its declaration at `variables.declaration`, paths under the form's."""

    def __init__(self, form: Form) -> None:
        self.form = form
        self.root = literal(str(form.path))
        self.decl = "variables.declaration"

    def at(self, *steps: str) -> str:
        return literal(str(form_path(self.form, *steps)))

    def list_at(self, rule: Rule) -> str:
        return self.at(*rule.field)

    def declaration(self) -> str:
        steps = [str(step) for step in self.form.path.steps]
        held = " && ".join(f"has(object.{'.'.join(steps[: n + 1])})" for n in range(len(steps)))
        return f"{held} ? dyn(object.{'.'.join(steps)}) : dyn(null)"

    def keys(self) -> list[dict[str, str]]:
        """A variable per UNIQUE rule with a list of its own keys (`first_in` reads another's)."""
        return [
            {
                "name": _keys(rule).removeprefix("variables."),
                "expression": _unique_keys(rule, self.decl),
            }
            for rule in RULES
            if rule.check is Check.UNIQUE and rule.first_in is None
        ]

    def top(self) -> tuple[str, str]:
        d = self.decl
        unknown, unjudged = _unknown(d, SPEC, self.root)
        mode = f"{_absent(d, 'mode')} ? [] : " + _supported(f"{d}.mode", self.root, SPEC, "mode")
        problems = (
            f"type({d}) == null_type ? [{_said(NO_SOURCE, self.root)}]"
            f" : type({d}) != map ? [{_said(declared(SPEC, (), Check.TYPE), self.root, d)}]"
            f" : {_list(unknown, mode)}"
        )
        return problems, f"type({d}) == map ? {unjudged} : 0"

    def human(self) -> tuple[str, str]:
        d, h = self.decl, f"{self.decl}.human"
        scores = f"{h}.scores"
        path = self.at("human")
        unknown, unjudged = _unknown(h, HUMAN, path)
        at = self.at("human", "scores")
        score = f"{scores}[i]"
        score_at = f"{at} + '[' + {DECIMAL_INDEXES}[i] + ']'"
        most = declared(HUMAN, ("scores",), Check.MAX_ITEMS)
        score_problems, score_unjudged = _score(
            score, score_at, _chunked("humanCategories", most.bound)
        )
        again = _again(_unique(("human", "scores"), "name"), score, score_at, self.list_at)
        wrong = _said(declared(SCORE, (), Check.TYPE), score_at, score)
        items = _flat(
            f"{_indexes(most.bound, scores)}.map(i, type({score}) != map"
            f" ? [{wrong}] : {_list(score_problems, again)})"
        )
        missing = _said(declared(HUMAN, ("scores",), Check.REQUIRED), at)
        empty = _said(declared(HUMAN, ("scores",), Check.MIN_ITEMS), at)
        no_list = _said(declared(HUMAN, ("scores",), Check.TYPE), at, scores)
        listed = (
            f"{_absent(h, 'scores')} ? [{missing}]"
            f" : type({scores}) != list ? [{no_list}]"
            f" : size({scores}) == 0 ? [{empty}]"
            f" : (size({scores}) > {most.bound} ? [{_said(most, at, scores)}] : []) + {items}"
        )
        problems = (
            f"type({d}) != map || {_absent(d, 'human')} ? []"
            f" : type({h}) != map ? [{_said(declared(HUMAN, (), Check.TYPE), path, h)}]"
            f" : {_list(unknown, listed)}"
        )
        judged = (
            f"{_absent(h, 'scores')} || type({scores}) != list ? 0"
            f" : {_indexes(most.bound, scores)}.map(i,"
            f" type({score}) == map ? {score_unjudged} : 0).sum()"
        )
        count = (
            f"type({d}) != map || {_absent(d, 'human')} || type({h}) != map ? 0"
            f" : {unjudged} + ({judged})"
        )
        return problems, count

    def human_categories(self, first: int) -> str:
        """The categories' problems of the human scores from `first`, one list per score."""
        d = self.decl
        scores = f"{d}.human.scores"
        score = f"{scores}[i]"
        at = f"{self.at('human', 'scores')} + '[' + {DECIMAL_INDEXES}[i] + ']'"
        indexes = ", ".join(map(str, range(first, first + CATEGORY_CHUNK)))
        return (
            f"{_reach(d, ('human', 'scores'))}"
            f" ? [{indexes}].filter(i, i < size({scores})).map(i,"
            f" type({score}) == map ? {_categories(score, at)} : []) : []"
        )

    def external_categories(self, first: int) -> str:
        """The categories' problems of the channels' scores from `first`, one list each."""
        d = self.decl
        channels = f"{d}.external"
        channel = f"{channels}[i]"
        score = f"{channel}.score"
        at = f"{self.at('external')} + '[' + {DECIMAL_INDEXES}[i] + '].score'"
        indexes = ", ".join(map(str, range(first, first + CATEGORY_CHUNK)))
        return (
            f"{_reach(d, ('external',))}"
            f" ? [{indexes}].filter(i, i < size({channels})).map(i, type({channel}) == map"
            f" && !{_absent(channel, 'score')} && type({score}) == map"
            f" ? {_categories(score, at)} : []) : []"
        )

    def external(self) -> tuple[str, str]:
        d = self.decl
        channels = f"{d}.external"
        at = self.at("external")
        channel = f"{channels}[i]"
        channel_at = f"{at} + '[' + {DECIMAL_INDEXES}[i] + ']'"
        unknown, unjudged = _unknown(channel, CHANNEL, channel_at)
        most = declared(SPEC, ("external",), Check.MAX_ITEMS)
        again = _again(_unique(("external",), "name"), channel, channel_at, self.list_at)
        score = f"{channel}.score"
        score_at = f"{channel_at} + '.score'"
        score_problems, score_unjudged = _score(
            score, score_at, _chunked("externalCategories", most.bound)
        )
        score_dup = _again(_unique(("external",), "score"), channel, channel_at, self.list_at)
        score_required = _said(
            declared(CHANNEL, ("score",), Check.REQUIRED), channel_at, below=("score",)
        )
        scored = (
            f"{_absent(channel, 'score')} ? [{score_required}]"
            f" : type({score}) != map ? [{_said(declared(SCORE, (), Check.TYPE), score_at, score)}]"
            f" : {_list(score_problems, score_dup)}"
        )
        wrong = _said(declared(CHANNEL, (), Check.TYPE), channel_at, channel)
        items = _flat(
            f"{_indexes(most.bound, channels)}.map(i, type({channel}) != map"
            f" ? [{wrong}]"
            f" : {_list(unknown, _name(channel, channel_at, CHANNEL), again, scored)})"
        )
        no_list = _said(declared(SPEC, ("external",), Check.TYPE), at, channels)
        problems = (
            f"type({d}) != map || {_absent(d, 'external')} ? []"
            f" : type({channels}) != list ? [{no_list}]"
            f" : (size({channels}) > {most.bound} ? [{_said(most, at, channels)}] : []) + {items}"
        )
        scored_unjudged = (
            f"!{_absent(channel, 'score')} && type({score}) == map ? {score_unjudged} : 0"
        )
        count = (
            f"type({d}) != map || {_absent(d, 'external')} || type({channels}) != list ? 0"
            f" : {_indexes(most.bound, channels)}.map(i,"
            f" type({channel}) == map ? {unjudged} + ({scored_unjudged}) : 0).sum()"
        )
        return problems, count

    def no_source(self) -> str:
        """NO_SOURCE: each of its sources absent, null or an empty list (a source of the wrong
        type is a problem of its own, not a missing one)."""
        d = self.decl
        empty = [_empty(d, steps) for steps in NO_SOURCE.sources]
        return f"type({d}) == map && {' && '.join(empty)} ? [{_said(NO_SOURCE, self.root)}] : []"


def _empty(obj: str, steps: Steps) -> str:
    """CEL: `<obj>.<steps>` is absent or null, or a list without items (maps on the way)."""
    step, rest = steps[0], steps[1:]
    held = f"{obj}.{step}"
    if rest:
        return f"({_absent(obj, step)} || (type({held}) == map && {_empty(held, rest)}))"
    return f"({_absent(obj, step)} || (type({held}) == list && size({held}) == 0))"


def form_path(form: Form, *steps: str) -> Path:
    path = form.path
    for step in steps:
        path = path.child(step)
    return path


def _more(count: str) -> str:
    """CEL for `messages.more_problems(count)`."""
    one = literal(messages.more_problems(1))
    many = _template(messages.more_problems(_COUNT), {str(_COUNT): [f"string({count})"]})
    return f"({count} == 1 ? {one} : {many})"


def variables(form: Form) -> list[dict[str, str]]:
    """The policy's variables, each using only those before it."""
    walk = _Walk(form)
    top, top_unjudged = walk.top()
    human, human_unjudged = walk.human()
    external, external_unjudged = walk.external()
    budget = PROBLEMS_BUDGET
    rest = f"variables.total - {WARNINGS_SHOWN - 1}"
    cut = f"variables.problems[0].substring(0, {budget - len(ELLIPSIS)}) + '{ELLIPSIS}'"
    short_cut = f"variables.problems[0].substring(0, {budget // 4 - len(ELLIPSIS)}) + '{ELLIPSIS}'"
    most = f"[{', '.join(map(str, range(_MOST_LINES)))}]"
    sep = len(SEPARATOR)
    fits = (
        f"{most}.filter(k, k < size(variables.sizes)).filter(k, {most}.filter(j, j <= k)"
        f".map(j, variables.sizes[j] + {sep}).sum() - {sep} <= {budget}).size()"
    )
    return [
        {"name": "declaration", "expression": walk.declaration()},
        *walk.keys(),
        *(
            {"name": f"humanCategories{k}", "expression": walk.human_categories(first)}
            for k, first in enumerate(_chunks(declared(HUMAN, ("scores",), Check.MAX_ITEMS).bound))
        ),
        *(
            {"name": f"externalCategories{k}", "expression": walk.external_categories(first)}
            for k, first in enumerate(_chunks(declared(SPEC, ("external",), Check.MAX_ITEMS).bound))
        ),
        {
            "name": "problems",
            "expression": _list(top, human, external, walk.no_source()),
        },
        {
            "name": "unjudged",
            "expression": f"({top_unjudged}) + ({human_unjudged}) + ({external_unjudged})",
        },
        {"name": "total", "expression": "size(variables.problems) + variables.unjudged"},
        # Bytes, not characters: kube-apiserver drops a message over 5 KiB.
        {
            "name": "sizes",
            "expression": f"{most}.filter(k, k < size(variables.problems))"
            ".map(k, size(bytes(variables.problems[k])))",
        },
        {"name": "fitting", "expression": fits},
        {
            "name": "shown",
            "expression": "size(variables.problems) == 0 ? []"
            f" : variables.fitting > 0 ? {most}.filter(k, k < variables.fitting)"
            ".map(k, variables.problems[k])"
            f" : size(bytes({cut})) <= {budget} ? [{cut}] : [{short_cut}]",
        },
        {
            "name": "lines",
            "expression": "variables.shown + (variables.total > size(variables.shown)"
            f" ? [{_more('variables.total - size(variables.shown)')}] : [])",
        },
        {
            "name": "warnings",
            "expression": f"variables.total <= {WARNINGS_SHOWN} ? variables.problems"
            f" : {_indexes(WARNINGS_SHOWN - 1, 'variables.problems')}"
            f".map(i, variables.problems[i]) + [{_more(rest)}]",
        },
    ]


def validations(form: Form, action: str) -> list[dict[str, str]]:
    """One validation saying every problem (Deny reports only a policy's first failed one),
    or under Warn one per problem, so that kubectl prints each as a warning."""
    static = f"the {form.kind}'s {form.path} is invalid"
    if action == "Warn":
        return [
            {
                "expression": f"size(variables.warnings) <= {index}",
                "messageExpression": f"variables.warnings[{index}]",
                "message": static,
                "reason": INVALID_REASON,
            }
            for index in range(WARNINGS_SHOWN)
        ]
    joined = (
        "size(variables.lines) == 1 ? variables.lines[0]"
        f" : '[' + variables.lines.join({literal(SEPARATOR)}) + ']'"
    )
    return [
        {
            "expression": "variables.total == 0",
            "messageExpression": joined,
            "message": static,
            "reason": INVALID_REASON,
        }
    ]


def policy_name(entry: str) -> str:
    return entry


def policy(entry: Mapping[str, Any], form: Form, action: str) -> dict[str, Any]:
    """The policy judging what `entry` (a registration's webhook entry) sends to the webhook."""
    constraints: dict[str, Any] = {
        "resourceRules": [dict(rule) for rule in entry["rules"]],
        "namespaceSelector": entry["namespaceSelector"],
        "matchPolicy": entry.get("matchPolicy", "Equivalent"),
    }
    spec: dict[str, Any] = {
        # A CEL error (a hostile object over the cost limits) refuses, as a verdict would.
        "failurePolicy": "Fail",
        "matchConstraints": constraints,
    }
    if entry.get("matchConditions"):
        spec["matchConditions"] = [dict(condition) for condition in entry["matchConditions"]]
    spec["variables"] = variables(form)
    spec["validations"] = validations(form, action)
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": policy_name(entry["name"]), "labels": _labels()},
        "spec": spec,
    }


def binding(entry: Mapping[str, Any], action: str) -> dict[str, Any]:
    name = policy_name(entry["name"])
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name, "labels": _labels()},
        "spec": {"policyName": name, "validationActions": [action]},
    }


def _labels() -> dict[str, str]:
    return {install.PART_OF_LABEL: PART_OF, install.COMPONENT_LABEL: "policy"}


def manifests(
    registration: Mapping[str, Any], action: str = DEFAULT_ACTION
) -> list[dict[str, Any]]:
    """The policies and their bindings for the judging entries of `registration` (the shipped
    ValidatingWebhookConfiguration), in the registration's order."""
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}: one of {', '.join(ACTIONS)}")
    found: list[dict[str, Any]] = []
    for entry in registration["webhooks"]:
        form = ENTRIES.get(entry["name"])
        if form is not None:
            found += [policy(entry, form, action), binding(entry, action)]
    if len(found) != 2 * len(ENTRIES):
        raise ValueError(f"the registration lacks an entry of {sorted(ENTRIES)}")
    return found
