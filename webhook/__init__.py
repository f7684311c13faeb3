"""feedbackstore-webhook: one FeedbackStore verdict, at admission, in status and offline."""

__version__ = "0.1.0"
