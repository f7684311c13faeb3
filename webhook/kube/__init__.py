"""Kubernetes plumbing that knows nothing about FeedbackStores, reused by composition.

List-watch (`informer`), work queue, Lease elector (`leader`), pager, rate limit, raw JSON calls.
"""
