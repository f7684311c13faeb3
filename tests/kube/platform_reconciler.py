"""A stand-in of the ctxmesh operator's FeedbackStore reconciler, a test peer (not product code).

Every cluster with the FeedbackStore CRD runs the platform's operator, whose reconciler writes
the same `Validated` condition as our status writer. This is its behaviour,
from its public source (a controller-runtime reconciler), on the real kube-apiserver:

- it watches FeedbackStores with no predicates: every event, status changes included, queues
  the object (a work queue as client-go's: a key queued while it is being reconciled is
  reconciled again afterwards, never twice at once; one worker, controller-runtime's default);
- Reconcile GETs the object (404: done), judges the spec, first problem only, in its own words
  (`first_problem`), and sets `Validated` as apimachinery's `meta.SetStatusCondition` does
  (`set_status_condition`); then it UPDATEs (PUT) the status subresource with the whole object
  as its typed client holds it: `status` is `{conditions: [...]}`, each condition reduced to
  metav1.Condition's six fields, any other status field dropped. It writes on every reconcile,
  changed or not (kube-apiserver turns an UPDATE that changes nothing into a no-op);
- 409 Conflict: requeued with per-item exponential backoff (5 ms doubling, controller-runtime's
  default rate limiter); so is any other error; success forgets the key's failures.

Its identity is its own: a ServiceAccount `ctxmesh-system/ctxmesh-operator` with a ClusterRole
granting what it uses and no more (`install_identity`), and a user agent whose first word,
`ctxmesh-operator`, kube-apiserver takes as the field manager of its UPDATEs (controller-runtime
passes no fieldManager; a kubebuilder binary's would be `manager`).

Run it as a process: `python -m tests.kube.platform_reconciler --kubeconfig K --namespace NS`.
One JSON line per reconcile on stderr. Its GETs are live reads, where controller-runtime's
default client reads its informer's cache: a stale cached read only costs a 409, requeued.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import signal
import sys
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes import watch as k8s_watch

from tests.support.logged_process import LoggedProcess

if TYPE_CHECKING:
    from tests.kube.controlplane import ControlPlane

GROUP, VERSION, PLURAL = "agents.ctxmesh.ai", "v1beta1", "feedbackstores"
MANAGER: Final = "ctxmesh-operator"
USER_AGENT: Final = f"{MANAGER}/v0.0.0-test (linux/amd64) kubernetes/test"
SERVICE_ACCOUNT_NAMESPACE: Final = "ctxmesh-system"
USER: Final = f"system:serviceaccount:{SERVICE_ACCOUNT_NAMESPACE}:{MANAGER}"

# The operator's vocabulary, as its source states it.
CONDITION: Final = "Validated"
REASON_VALID, REASON_INVALID = "SpecCoherent", "InvalidSpec"
MESSAGE_VALID: Final = "feedback store spec is coherent"
NO_SOURCES: Final = (
    "the store declares no sources (add human.scores or an external channel) — "
    "it would gate nothing"
)
DUPLICATE: Final = (
    "score name {name} is declared by both {first} and {second} — names must be unique across "
    "the whole store (they are the source-attribution key)"
)
_CONDITION_FIELDS: Final = (
    "type",
    "status",
    "observedGeneration",
    "lastTransitionTime",
    "reason",
    "message",
)
_BACKOFF_BASE, _BACKOFF_CAP = 0.005, 1000.0


# -- the reconciler's pure parts ------------------------------------------------------


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    '"': '\\"',
    "\\": "\\\\",
}


def go_quote(text: str) -> str:
    """Go's `%q` of a string (strconv.Quote): printable characters as they are, the rest escaped."""
    out = []
    for char in text:
        code = ord(char)
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def first_problem(spec: object) -> str:
    """`validateFeedbackStoreSpec`: "" when coherent, else its first problem; it checks a source
    and score names unique across the store (human first, then channels in order), nothing else."""
    human = _dict(spec).get("human")
    scores = _list(_dict(human).get("scores"))
    external = _list(_dict(spec).get("external"))
    if not scores and not external:
        return NO_SOURCES
    seen: dict[str, str] = {}
    sources = [(_dict(score).get("name") or "", "human") for score in scores]
    for channel in external:
        name = _dict(_dict(channel).get("score")).get("name") or ""
        sources.append((name, f"external[{go_quote(str(_dict(channel).get('name') or ''))}]"))
    for name, source in sources:
        if name in seen:
            return DUPLICATE.format(name=go_quote(str(name)), first=seen[name], second=source)
        seen[name] = source
    return ""


def rfc3339_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def typed_condition(condition: object) -> dict[str, Any]:
    """A condition as a metav1.Condition holds it: six fields, observedGeneration omitted at 0."""
    kept = {k: v for k, v in _dict(condition).items() if k in _CONDITION_FIELDS}
    for required in ("type", "status", "reason", "message"):
        kept.setdefault(required, "")
    kept.setdefault("lastTransitionTime", None)  # a zero metav1.Time is null
    if not kept.get("observedGeneration"):
        kept.pop("observedGeneration", None)
    return kept


def set_status_condition(conditions: list[dict[str, Any]], new: dict[str, Any]) -> None:
    """apimachinery's `meta.SetStatusCondition`: a new type is appended (lastTransitionTime now);
    an existing one takes status (and lastTransitionTime only when that changes), reason,
    message and observedGeneration; every other condition is kept."""
    existing = next((c for c in conditions if c.get("type") == new["type"]), None)
    if existing is None:
        conditions.append(
            {**new, "lastTransitionTime": new.get("lastTransitionTime") or rfc3339_now()}
        )
        return
    if existing.get("status") != new["status"]:
        existing["status"] = new["status"]
        existing["lastTransitionTime"] = new.get("lastTransitionTime") or rfc3339_now()
    for field in ("reason", "message", "observedGeneration"):
        existing[field] = new.get(field)
    if not existing.get("observedGeneration"):
        existing.pop("observedGeneration", None)


def reconciled(store: dict[str, Any]) -> dict[str, Any]:
    """The object the operator's typed client UPDATEs: status is its conditions only."""
    problem = first_problem(store.get("spec"))
    status, reason, message = (
        ("False", REASON_INVALID, problem) if problem else ("True", REASON_VALID, MESSAGE_VALID)
    )
    conditions = [typed_condition(c) for c in _list(_dict(store.get("status")).get("conditions"))]
    set_status_condition(
        conditions,
        {
            "type": CONDITION,
            "status": status,
            "reason": reason,
            "message": message,
            "observedGeneration": _dict(store.get("metadata")).get("generation") or 0,
        },
    )
    body = {k: v for k, v in store.items() if k != "status"}
    if conditions:
        body["status"] = {"conditions": conditions}
    return body


# -- the controller -------------------------------------------------------------------

Key = tuple[str, str]


class WorkQueue:
    """client-go's queue: deduplicated, a key never processed twice at once, rate-limited adds."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: collections.deque[Key] = collections.deque()
        self._dirty: set[Key] = set()
        self._processing: set[Key] = set()
        self._failures: collections.Counter[Key] = collections.Counter()
        self._closed = False

    def add(self, key: Key) -> None:
        with self._cond:
            if key in self._dirty or self._closed:
                return
            self._dirty.add(key)
            if key not in self._processing:
                self._queue.append(key)
                self._cond.notify()

    def add_rate_limited(self, key: Key) -> None:
        with self._cond:
            delay = min(_BACKOFF_BASE * 2 ** self._failures[key], _BACKOFF_CAP)
            self._failures[key] += 1
        timer = threading.Timer(delay, self.add, (key,))
        timer.daemon = True
        timer.start()

    def forget(self, key: Key) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def get(self) -> Key | None:
        with self._cond:
            while not self._queue and not self._closed:
                self._cond.wait()
            if self._closed:
                return None
            key = self._queue.popleft()
            self._dirty.discard(key)
            self._processing.add(key)
            return key

    def done(self, key: Key) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


def log(msg: str, **fields: Any) -> None:
    line = {"time": datetime.now(UTC).isoformat(timespec="milliseconds"), "msg": msg, **fields}
    print(json.dumps(line), file=sys.stderr, flush=True)


class Reconciler:
    def __init__(self, api: k8s.CustomObjectsApi, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.queue = WorkQueue()
        self.stopped = threading.Event()

    def watch(self) -> None:
        """List, then watch from the list's resourceVersion and resume from the last event's
        when the server ends a watch, as an informer does; after an error (410 included), list
        again: every object is queued once more, as an informer's relist does."""
        version = None
        while not self.stopped.is_set():
            try:
                if version is None:
                    listed = self.api.list_namespaced_custom_object(
                        GROUP, VERSION, self.namespace, PLURAL
                    )
                    for item in listed["items"]:
                        self.queue.add((self.namespace, item["metadata"]["name"]))
                    version = listed["metadata"]["resourceVersion"]
                stream = k8s_watch.Watch().stream(
                    self.api.list_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    self.namespace,
                    PLURAL,
                    resource_version=version,
                    timeout_seconds=300,
                )
                for event in stream:
                    obj = event["object"]
                    if event["type"] == "ERROR":
                        raise RuntimeError(f"watch error: {obj}")
                    version = obj["metadata"]["resourceVersion"]
                    self.queue.add((self.namespace, obj["metadata"]["name"]))
            except Exception as error:  # a stand-in: list again after any failure
                log("watch failed; listing again", error=str(error)[:200])
                version = None
                self.stopped.wait(0.5)

    def work(self) -> None:
        while (key := self.queue.get()) is not None:
            try:
                outcome = self.reconcile(key)
            except Exception as error:
                outcome = f"error: {error}"[:200]
            finally:
                self.queue.done(key)
            if outcome in ("updated", "gone"):
                self.queue.forget(key)
            else:
                self.queue.add_rate_limited(key)
            log("reconciled", namespace=key[0], name=key[1], outcome=outcome)

    def reconcile(self, key: Key) -> str:
        try:
            store = self.api.get_namespaced_custom_object(GROUP, VERSION, key[0], PLURAL, key[1])
        except k8s.ApiException as error:
            if error.status == 404:
                return "gone"
            raise
        try:
            self.api.replace_namespaced_custom_object_status(
                GROUP, VERSION, key[0], PLURAL, key[1], reconciled(store)
            )
        except k8s.ApiException as error:
            if error.status == 409:
                return "conflict"
            raise
        return "updated"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    args = parser.parse_args(argv)
    client = k8s_config.new_client_from_config(config_file=args.kubeconfig)
    client.user_agent = USER_AGENT
    reconciler = Reconciler(k8s.CustomObjectsApi(client), args.namespace)

    def stop(*_: object) -> None:
        reconciler.stopped.set()
        reconciler.queue.close()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=reconciler.watch, name="watch", daemon=True).start()
    log("platform reconciler started", namespace=args.namespace, manager=MANAGER)
    reconciler.work()
    log("platform reconciler stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# -- in the kube tests: its identity and its process ------------------------------------


def cluster_role() -> dict[str, Any]:
    """What the stand-in calls, and nothing else (the operator's own role grants more)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": f"{MANAGER}-feedbackstores"},
        "rules": [
            {"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "verbs": ["update"]},
        ],
    }


def install_identity(plane: ControlPlane) -> pathlib.Path:
    """Its ServiceAccount, role and binding on `plane`; a kubeconfig with a token of its own."""
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{MANAGER}-feedbackstores"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": f"{MANAGER}-feedbackstores",
        },
        "subjects": [
            {"kind": "ServiceAccount", "name": MANAGER, "namespace": SERVICE_ACCOUNT_NAMESPACE}
        ],
    }
    account = {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": MANAGER, "namespace": SERVICE_ACCOUNT_NAMESPACE},
    }
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": SERVICE_ACCOUNT_NAMESPACE},
    }
    documents = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [namespace, account, cluster_role(), binding],
    }
    plane.kubectl(
        "apply",
        "--server-side",
        "--field-manager=kube-tests",
        "-f",
        "-",
        stdin=json.dumps(documents),
        check=True,
    )
    core = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(plane.kubeconfig)))
    request = {
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    }
    token = core.create_namespaced_service_account_token(
        MANAGER, SERVICE_ACCOUNT_NAMESPACE, request
    ).status.token
    kubeconfig: pathlib.Path = plane.write_kubeconfig(MANAGER, token=token)
    return kubeconfig


class PlatformProcess(LoggedProcess):
    """The stand-in as a child process on `kubeconfig`, watching `namespace`."""

    def __init__(self, kubeconfig: pathlib.Path, namespace: str, log_path: pathlib.Path) -> None:
        super().__init__(
            [
                sys.executable,
                "-m",
                "tests.kube.platform_reconciler",
                "--kubeconfig",
                str(kubeconfig),
                "--namespace",
                namespace,
            ],
            log_path,
            cwd=pathlib.Path(__file__).resolve().parents[2],
        )
