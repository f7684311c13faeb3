"""The status writer: mirrors the one FeedbackStore verdict into `status.conditions`.

Pure decisions (`condition`, `events`, `backoff`, `timestamps`, the Lease rules
in `leader`) are kept apart from the thin adapters that talk to the API server
(`kubeapi`, `watch`, `writer`), so each decision can be tested as a table and
each adapter against an API server.
"""
