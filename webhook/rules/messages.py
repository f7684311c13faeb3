"""Every sentence the FeedbackStore rules say to a user.

The words are product: a reviewer reads and changes them here, not in the
logic that decides when to say them. The webhook, the status writer, the CLI
and the CRD's CEL rules share them, so a cluster without the webhook says what
the webhook says. apimachinery's own vocabulary (`Required value`, ...) is in
`field_errors.py`, the DNS name rules' in `metadata.py`.
"""

from typing import Final

from webhook.rules import api
from webhook.text import and_more

MESSAGE_VALID: Final = "feedback store spec is coherent"

# The platform's wording for the cross-field invariants: its CRD's CEL rules say the same.
MSG_NO_SOURCE: Final = (
    "feedback must declare at least one source: human.scores or an external channel"
)
MSG_DUP_HUMAN: Final = "human score names must be unique"
MSG_DUP_ACROSS: Final = (
    "a score name is declared by both human and an external channel; "
    "score names must be unique across all sources"
)
MSG_DUP_EXTERNAL: Final = "each external channel must declare a distinct score name"
MSG_DUP_CHANNEL: Final = "external channel names must be unique"

# Further words of the verdict: what a missing or empty part needs.
MSG_HUMAN_SCORES_REQUIRED: Final = "human.scores is required when human is set"
MSG_HUMAN_SCORES_EMPTY: Final = f"must have at least {api.MIN_HUMAN_SCORES} item"
MSG_CHANNEL_SCORE_REQUIRED: Final = "the score this channel writes"

# The warnings (allowed, but surprising) say only what the platform's gateway does:
# it trims a submitted score name; in Enforce an undeclared name gets 422, Monitor relays it; it
# sends a float value and checks neither dataType nor categories; on read it attributes each
# score to `human`, `external:<channel>` or `unattributed`.
REJECTED: Final = "422"
UNATTRIBUTED: Final = "unattributed"
WARN_MONITOR: Final = (
    f"Monitor relays undeclared score names instead of rejecting them ({REJECTED}); "
    "use only to migrate"
)
WARN_NO_CATEGORIES: Final = (
    f"{api.CATEGORICAL} score declares no categories (the gateway checks no value against them)"
)


def attribution(channel: str | None) -> str:
    """What a score reads as attributed to: `human` (None) or `external:<channel>`."""
    return "human" if channel is None else f"external:{channel}"


def first_declared_at(why: str, first: str) -> str:
    """A duplicate's detail: the rule, then where the name was declared first."""
    return f"{why} (first declared at {first})"


def warn_categories_ignored(data_type: str) -> str:
    return f"no effect: dataType is {data_type}, and the gateway checks no value against categories"


def warn_untrimmed_score(quoted_name: str) -> str:
    """The name last, so that a long one is what a cut to 120 characters shortens."""
    return f"in Enforce this score is lost entirely: no trimmed submission matches {quoted_name}"


def warn_untrimmed_channel(quoted_attribution: str) -> str:
    return f"on read its scores are attributed to {quoted_attribution}, whitespace kept"


def more_problems(count: int) -> str:
    """The tail of a bounded list of problems (a denial, a Condition, the CLI)."""
    return and_more(count, "problem")
