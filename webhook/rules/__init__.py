"""The FeedbackStore rules: a pure core with no I/O, shared by every adapter."""

from webhook.rules.field_errors import ErrorType, FieldWarning, Problem
from webhook.rules.verdict import Verdict, validate_feedbackstore, validate_spec

__all__ = [
    "ErrorType",
    "FieldWarning",
    "Problem",
    "Verdict",
    "validate_feedbackstore",
    "validate_spec",
]
