"""A client that creates and updates FeedbackStores without pause and counts every failure.

Each worker thread keeps one TLS connection to kube-apiserver (as the admin)
and loops: create a store of its own, then merge-patch it (a label: the webhook
is called for the UPDATE too), then delete it. Every create and update goes
through the validating webhook (failurePolicy: Fail), so a webhook pod that
drops a connection or is gone before kube-apiserver stops sending to it shows
up as a failed request, which is recorded with kube-apiserver's message.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass, field

from tests.kube.controlplane import ControlPlane

GROUP_PATH = "/apis/agents.ctxmesh.ai/v1beta1/namespaces/{ns}/feedbackstores"


@dataclass
class Counts:
    requests: int = 0
    failures: int = 0
    messages: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, ok: bool, message: str = "") -> None:
        with self.lock:
            self.requests += 1
            if not ok:
                self.failures += 1
                if len(self.messages) < 20:
                    self.messages.append(message)


class Load:
    """`threads` clients against `plane` in `namespace`, until `stop()`."""

    def __init__(self, plane: ControlPlane, namespace: str, threads: int = 4) -> None:
        parsed = urllib.parse.urlparse(plane.server)
        self.host, self.port = parsed.hostname or "", parsed.port or 443
        self.context: ssl.SSLContext = plane.ssl_context()
        self.path = GROUP_PATH.format(ns=namespace)
        self.counts = Counts()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(threads)
        ]

    def __enter__(self) -> Load:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> Counts:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        return self.counts

    def _connect(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection(self.host, self.port, context=self.context, timeout=30)

    def _request(
        self,
        connection: http.client.HTTPSConnection,
        method: str,
        path: str,
        body: dict[str, object] | None,
        content_type: str = "application/json",
    ) -> tuple[int, str]:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": content_type} if data is not None else {}
        connection.request(method, path, body=data, headers=headers)
        answer = connection.getresponse()
        return answer.status, answer.read().decode(errors="replace")

    def _run(self, worker: int) -> None:
        connection = self._connect()
        serial = 0
        while not self._stop.is_set():
            serial += 1
            name = f"load-{worker}-{serial}"
            store = {
                "apiVersion": "agents.ctxmesh.ai/v1beta1",
                "kind": "FeedbackStore",
                "metadata": {"name": name},
                "spec": {"human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}]}},
            }
            steps: list[tuple[str, str, dict[str, object] | None, str, tuple[int, ...]]] = [
                ("POST", self.path, store, "application/json", (201,)),
                (
                    "PATCH",
                    f"{self.path}/{name}",
                    {"metadata": {"labels": {"n": str(serial)}}},
                    "application/merge-patch+json",
                    (200,),
                ),
                ("DELETE", f"{self.path}/{name}", None, "application/json", (200, 202)),
            ]
            for method, path, body, content_type, wanted in steps:
                try:
                    status, text = self._request(connection, method, path, body, content_type)
                except (OSError, http.client.HTTPException) as error:
                    # The connection to kube-apiserver itself: not the webhook's doing,
                    # but still a failed request for the client.
                    self.counts.add(False, f"{method} {name}: {error!r}")
                    with contextlib.suppress(OSError):
                        connection.close()
                    connection = self._connect()
                    time.sleep(0.05)
                    break
                ok = status in wanted
                self.counts.add(ok, f"{method} {name}: {status} {text[:600]}")
                if not ok:
                    break
        connection.close()
