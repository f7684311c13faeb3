"""The status writer: mirrors the one FeedbackStore verdict into `status.conditions`.

Pure planners (`validated`, `usage`, `events`) apart from the thin loop (`writer`, `controller`).
"""
