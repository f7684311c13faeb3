"""AdmissionReview in, AdmissionReview out: pure translation around the rules, no I/O."""

from webhook.admission.decision import Decision, Why, decide
from webhook.admission.decode import BadReviewError, BadReviewReason, decode_review
from webhook.admission.envelope import AdmissionRequest, AdmissionReview
from webhook.admission.response import errored_answer, review_answer, subject_name

__all__ = [
    "AdmissionRequest",
    "AdmissionReview",
    "BadReviewError",
    "BadReviewReason",
    "Decision",
    "Why",
    "decide",
    "decode_review",
    "errored_answer",
    "review_answer",
    "subject_name",
]
