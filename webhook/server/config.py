"""Everything `serve` can be told, with the defaults a cluster deployment wants."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from webhook import install


@dataclass(frozen=True, slots=True)
class ServerConfig:
    cert_file: pathlib.Path
    key_file: pathlib.Path
    host: str | None = None
    port: int = install.PORT
    # The largest review a write that can succeed produces: an UPDATE carries the stored
    # object and the new one, each at most etcd's 1.5 MiB as kube-apiserver encodes it,
    # plus the envelope; measured at 3,130,352 bytes on the real server
    # (tests/kube/test_registration_limits_real.py). 4 MiB leaves the envelope (userInfo
    # with many groups) room; a larger review is of a write etcd would refuse anyway.
    max_body_bytes: int = 4 * 1024 * 1024
    # Connections open at once. At the cap a newcomer takes the slot of the connection idle
    # longest (an unfinished TLS handshake or request head, a keep-alive with no request); it is
    # refused only when every slot holds a request being answered. kube-apiserver keeps a few
    # per replica; each idle one costs tens of KiB.
    max_connections: int = 256
    # PEM CA bundle: the webhook port then requires a client certificate it signed
    # (only kube-apiserver, configured with that certificate, gets past TLS).
    client_ca_file: pathlib.Path | None = None
    # A second TLS port with /healthz, /readyz and /metrics only, never asking for a
    # client certificate: the kubelet's probes have none. None: no such port.
    probe_port: int | None = None
    # A connection with no complete request for this long is closed: idle
    # keep-alive and slowly dripped headers alike. Longer than the 90 s Go's
    # HTTP client (kube-apiserver) keeps idle connections, so the client closes
    # first and never sends a request on a connection the server is closing.
    idle_timeout: float = 120.0
    # A request body not received in full within this time is answered 408.
    body_timeout: float = 10.0
    # A client that does not finish its TLS handshake within this time is dropped.
    handshake_timeout: float = 10.0
    # After SIGTERM: keep serving (not ready) this long so endpoints and
    # load balancers stop sending, then stop accepting.
    shutdown_delay: float = 2.0
    # Then wait at most this long for requests in flight before closing.
    shutdown_timeout: float = 10.0
    cert_poll_interval: float = 1.0
    log_level: str = "info"
