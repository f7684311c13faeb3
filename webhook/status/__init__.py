"""The status writer: mirrors the one FeedbackStore verdict into `status.conditions`.

Pure planners (`validated` for the `Validated` condition, `usage` for in-use
protection's `InUse` condition and finalizer, the Event rules in `events`)
are kept apart from the thin loop that runs them (`writer`, assembled in
`controller`) on the plumbing of `webhook.kube`, so each decision can be
tested as a table and the loop against an API server.
"""
