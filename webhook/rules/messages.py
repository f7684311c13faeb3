"""Every sentence the rules say to a user, in one place.

The field errors' own vocabulary (`Required value`, `Duplicate value`, ...) is
apimachinery's and lives in `field_errors.py`; these are the platform's words
for what the FeedbackStore rules find (SPEC §1), shared by the webhook, the
status writer, the CLI and the CRD's CEL rules.
"""

from typing import Final

MESSAGE_VALID: Final = "feedback store spec is coherent"

# The platform's wording for the cross-field invariants (SPEC §1).
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
