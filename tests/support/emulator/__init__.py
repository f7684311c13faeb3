"""An in-process kube-apiserver emulator for testing code that uses the real ``kubernetes`` client.

Serves, over plain HTTP on 127.0.0.1 (random port), what the FeedbackStore status writer uses:
``agents.ctxmesh.ai/v1beta1`` ``feedbackstores`` (namespaced, ``status`` subresource),
``coordination.k8s.io/v1`` ``leases``, core ``v1`` ``events`` and ``events.k8s.io/v1`` ``events``,
and minimal discovery (``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/GROUP/VERSION``).
Each behaviour names the Kubernetes documentation it imitates in the module that implements it
(store.py, watch.py, fieldmanager.py, patching.py, validation.py, errors.py, faults.py).

Python API (stable; the status-writer tests depend on it)::

    from tests.support.emulator import ApiServerEmulator
    # or the `apiserver` fixture (tests/conftest.py): a started emulator per test

    emu = ApiServerEmulator(bookmark_interval=0.5)  # not started; also: watch_timeout=1800.0,
                                                    # history_limit=10_000 (changes kept for watch)
    emu.start(); emu.url            # "http://127.0.0.1:PORT"   (also a context manager)
    emu.api_client()                # kubernetes.client.ApiClient for emu.url, no auth
    emu.write_kubeconfig(path)      # -> Path of a kubeconfig for --kubeconfig
    emu.restart(downtime=0.0)       # drop every connection/watch, same port; the store survives;
                                    #    watches from before the restart's resourceVersion: 410
    emu.go_down(); emu.come_back()  # the same restart in two steps: refused until come_back()
    emu.stop()

    # direct store access (no HTTP; a write gets a new resourceVersion and a watch event)
    emu.create(namespace, body)     # -> dict; keeps status (HTTP POST drops it); fields owned by
                                    #    manager "emulator-setup" (Update), like a kubectl create
    emu.update(namespace, name, mutate)  # mutate(obj) in place; spec+status; generation moves on
                                         # spec change; -> dict
    emu.delete(namespace, name); emu.get(namespace, name) -> dict | None
    emu.objects(namespace=None) -> list[dict]          # FeedbackStores, sorted by namespace/name
    emu.leases(namespace=None) -> list[dict]
    emu.events(namespace=None) -> list[dict]           # core/v1 and events.k8s.io/v1, by age
    emu.resource_version -> int                        # the current global revision
    emu.compacted_resource_version -> int              # older starts answer 410 Gone
    emu.open_watches -> int                            # watch streams open right now
    (create/update/delete/get/objects take resource=tests.support.emulator.resources.LEASES etc.)

    emu.requests -> list[RecordedRequest]   # .method .path .query(dict) .content_type .status
                                            # .body(bytes) .json() .is_write; status None while
                                            # a watch is still open
    emu.writes() -> list[RecordedRequest]   # POST/PUT/PATCH/DELETE only
    emu.reset_requests()
    ApiServerEmulator.eventually(predicate, timeout=10.0)  # poll until truthy, else AssertionError

    # faults
    emu.faults.drop_watches(clean=False)    # reset every open watch connection (clean=True: end
                                            # the stream as a timeout does); -> how many
    emu.faults.fail_next(n, status=500, method=None, path_contains=None, retry_after=1)
                                            # 500 InternalError, 429 TooManyRequests + Retry-After,
                                            # 503/504 too
    emu.faults.expire_resource_versions()   # compact: older resourceVersions now answer 410
    emu.faults.delay(seconds, method=None, path_contains=None, count=None)
    emu.faults.conflict_next_status_write(n=1, mutate=None)  # a concurrent write lands first
                                            # (new RV, MODIFIED event), the /status write gets 409
    emu.faults.garble_watch_events(n=1, path_contains=None)  # the next n changes a watch carries
                                            # go out as a line that is not JSON, in their place
    emu.faults.clear()

Faithful (tested beside it, tests/support/emulator/test_*.py, with the real client): list with
resourceVersion, resourceVersionMatch (NotOlderThan/Exact, 410 when compacted, 504 when too new) and
limit/continue (a compacted token: 410 Expired with a token for the rest at the latest
revision); watch with ADDED/MODIFIED/DELETED/BOOKMARK/ERROR, 410 Expired, timeoutSeconds,
sendInitialEvents; create/get/update/patch/delete with 201/200/202 answers; metav1.Status errors
(404, 409 Conflict/AlreadyExists, 410, 422 Invalid with causes, 400, 415, 429 + Retry-After,
500, 504); status subresource semantics and generation; optimistic concurrency (PUT on a custom
resource needs metadata.resourceVersion); server-side apply with managedFields, list-map merge by
``type`` for ``status.conditions``, conflicts with FieldManagerConflict causes and ``force``;
merge patch (RFC 7386), JSON patch (RFC 6902) with ``test``, strategic merge 415 on custom
resources; finalizers; MicroTime decoding (six fractional digits) for Leases and Events.

Not imitated (on purpose): authentication/authorization, namespace existence, OpenAPI schema
validation and defaulting of custom resources (the CRD and the webhook do that in a cluster),
admission webhooks, label/field selectors (ignored), ``dryRun`` (refused with 400),
``fieldValidation`` (ignored), protobuf/CBOR/YAML responses (JSON only), per-version conversion,
and the shared storage of core/v1 and events.k8s.io/v1 Events (here two separate resources).
"""

from tests.support.emulator.emulator import ApiServerEmulator
from tests.support.emulator.server import RecordedRequest

__all__ = ["ApiServerEmulator", "RecordedRequest"]
