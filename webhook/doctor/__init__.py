"""`feedbackstore-webhook doctor`: what is wrong with an install, one line per check.

The checks are pure functions over API objects already fetched (`crd`,
`registration`, `certificates`, `endpoints`, `probe`, `lease`, `stores`), each
returning `CheckResult`s (`result`); `checks` runs them all over one
`Snapshot` (`snapshot`); `cluster` is the only module that talks to the API
server (the official `kubernetes` client), and `render` turns results into
text or JSON. So every verdict can be tested without a cluster, and the
cluster tests only prove that what is fetched is what the checks expect.
"""
