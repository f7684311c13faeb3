"""What the tests stand on, shared by more than one package's tests.

The stand-ins for kube-apiserver, each with its own tests beside it: the API-server emulator
(`emulator/`, what a controller's client sees), what the server does with a FeedbackStore
under our CRD before any webhook runs (`crd_apiserver.py`), what it checks in a webhook's
answer and kubectl then prints (`admission_apiserver.py`), and a server answering exactly what
a test scripts, for the client plumbing on its own (`scripted_apiserver.py`). Beside them, the
pieces several folders use: the one poll loop (`waiting.py`), AdmissionReviews in
kube-apiserver's full shape, TLS material and running webhooks, rule builders, the status writer's
objects and oracle, and the real tools the tests run (kubectl, helm, the GitOps health tool,
promtool's inputs), with the tests of how the harness finds them and of how the `kube` and
`node` suites skip.
"""
