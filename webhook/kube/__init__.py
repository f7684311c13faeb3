"""Kubernetes plumbing that knows nothing about FeedbackStores.

List and watch with event handlers (`informer`), a work queue with per-key
backoff (`workqueue`), a Lease elector (`leader`), a pager with its
expired-token fallback (`pager`), the client-side rate limit (`ratelimit`),
the one reader of raw JSON answers (`client`), and accessors of an object's
conditions and finalizers (`objects`). Reused by composition: handlers and
parameters.
"""
