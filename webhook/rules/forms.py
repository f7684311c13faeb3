"""Where a FeedbackStore declaration stands: in a FeedbackStore, or inline in an agent.

The platform's newest API folds the store into `AgentDeployment.spec.feedback`, with exactly a
store's spec. A form names the kind that carries the declaration and the keys down to it, and
every adapter judges either form with the same rules (`validate_spec`, `changed_fields`), at
paths under the form's own: `spec.human.scores[1].name` in a store is
`spec.feedback.human.scores[1].name` in an agent. No rule is written for one form only.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from webhook.rules import api, inuse
from webhook.rules.field_path import Path
from webhook.rules.verdict import Verdict, validate_feedbackstore, validate_spec

# The agent's served versions: v1alpha1 (deprecated) and the storage version, one spec type.
AGENT_VERSIONS: Final = ("v1alpha1", inuse.AGENT_VERSION)
AGENT_API_VERSIONS: Final = tuple(f"{inuse.AGENT_GROUP}/{v}" for v in AGENT_VERSIONS)
FEEDBACK_FIELD: Final = "feedback"


class Form(NamedTuple):
    """A kind of object holding a FeedbackStore declaration and the keys that lead to it."""

    kind: str
    group: str
    plural: str
    path: Path  # the declaration's field path: the base of every problem's path
    api_versions: tuple[str, ...]

    def declaration(self, obj: object) -> object:
        """The declaration as sent, None when absent (a null is absent: Kubernetes drops it)."""
        for key in self.path.steps:
            if type(obj) is not dict:
                return None
            obj = obj.get(key)
        return obj

    def verdict(self, obj: object) -> Verdict:
        """The one verdict on the object's declaration, at paths under `path`."""
        if type(obj) is not dict:
            return validate_feedbackstore(obj)  # not an object at all, whatever its form
        return validate_spec(self.declaration(obj), self.path)


STORE: Final = Form(api.KIND, api.GROUP, api.PLURAL, api.SPEC, (api.API_VERSION,))
INLINE: Final = Form(
    inuse.AGENT_KIND,
    inuse.AGENT_GROUP,
    inuse.AGENT_PLURAL,
    api.SPEC.child(FEEDBACK_FIELD),
    AGENT_API_VERSIONS,
)
