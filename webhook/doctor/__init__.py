"""`feedbackstore-webhook doctor`: what is wrong with an install, one line per check.

The checks are pure functions over one `Snapshot` of API objects already
fetched; `cluster` is the only module that talks to the API server. So every
verdict can be tested without a cluster, and the cluster tests only prove that
what is fetched is what the checks expect.
"""
