"""A real control plane for the tests: etcd and kube-apiserver built from upstream source.

`tests/controlplane/build.sh` builds (or reuses) the binaries; this module runs
them on free loopback ports with a throwaway PKI, as envtest does for Go
operators. With `namespace_controller=True` (the tests' shared plane) a
kube-controller-manager runs only the namespace controller, so a deleted
namespace is emptied and removed as in a cluster. Nothing listens beyond
127.0.0.1, and nothing here talks to any other address: kube-apiserver is only
ever asked to call webhooks registered by `url:` on 127.0.0.1.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import pathlib
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from tests.kube import pki as pki_module
from tests.support import build_script
from tests.support.build_script import ToolUnavailableError
from tests.support.kubectl_binary import kubectl

REPO = pathlib.Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "tests" / "controlplane" / "build.sh"
# `.ci/run` sets this so that a missing toolchain fails the run instead of skipping.
REQUIRE_ENV = "FEEDBACKSTORE_REQUIRE_KUBE"
_READY_TIMEOUT = 180.0
CONTROLLER_MANAGER_USER = "kube-controller-manager"


class ControlPlaneUnavailableError(ToolUnavailableError):
    """No Go toolchain to build the binaries with: the `kube` tests cannot run here."""


def binaries(
    report: Callable[[str], None] = lambda line: None, every: float = 30.0
) -> pathlib.Path:
    """The directory holding kube-apiserver, kube-controller-manager and etcd, built on
    first use (minutes; the tests find it built by tests/support/prebuild.py, the
    benchmarks call this). `report` and `every` as for `build_script.run`."""
    try:
        return build_script.run(BUILD_SCRIPT, report, every)
    except ToolUnavailableError as missing:
        raise ControlPlaneUnavailableError(str(missing)) from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def tail(path: pathlib.Path, lines: int = 40) -> str:
    if not path.exists():
        return f"({path.name}: no log)"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join(text)


AUDIT_POLICY = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived"],
    "rules": [{"level": "Metadata"}],
}


@dataclass
class Process:
    name: str
    argv: list[str]
    log: pathlib.Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        handle = self.log.open("ab")
        self.popen = subprocess.Popen(
            self.argv, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        handle.close()

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()
        self.popen = None


@dataclass
class ControlPlane:
    """etcd + kube-apiserver on loopback, with an admin kubeconfig."""

    bin_dir: pathlib.Path
    workdir: pathlib.Path
    etcd_port: int = field(default_factory=free_port)
    etcd_peer_port: int = field(default_factory=free_port)
    apiserver_port: int = field(default_factory=free_port)
    extra_apiserver_args: Sequence[str] = ()
    # kube-controller-manager with only the namespace controller (its own user, so the
    # audit log tells its requests apart).
    namespace_controller: bool = False
    controller_manager_port: int = field(default_factory=free_port)
    # The test node's (tests/node/cluster.py): kube-apiserver listens on and advertises
    # `host` (a non-loopback address, so the `kubernetes` Service gets its endpoint), its
    # certificate names `extra_ips` too, and kube-controller-manager runs `controllers`
    # (with the root CA it publishes to pods) instead of only the namespace controller.
    host: str = "127.0.0.1"
    extra_ips: tuple[str, ...] = ()
    controllers: str = "namespace"

    def __post_init__(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        ips = tuple(ip for ip in (self.host, *self.extra_ips) if ip != "127.0.0.1")
        self.pki = pki_module.make(self.workdir / "pki", ips)
        self.audit_log = self.workdir / "audit.log"
        self.audit_policy = self.workdir / "audit-policy.yaml"
        self.audit_policy.write_text(yaml.safe_dump(AUDIT_POLICY))
        self.kubeconfig = self.write_kubeconfig("admin", self.pki.admin)
        self.etcd = Process("etcd", self._etcd_argv(), self.workdir / "etcd.log")
        self.apiserver = Process(
            "kube-apiserver", self._apiserver_argv(), self.workdir / "kube-apiserver.log"
        )
        self.controller_manager: Process | None = None
        if self.namespace_controller:
            self.controller_manager_kubeconfig = self.write_kubeconfig(
                CONTROLLER_MANAGER_USER, self.pki.client(CONTROLLER_MANAGER_USER, "system:masters")
            )
            self.controller_manager = Process(
                "kube-controller-manager",
                self._controller_manager_argv(),
                self.workdir / "kube-controller-manager.log",
            )

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        self.etcd.start()
        self._wait(self._etcd_healthy, "etcd", self.etcd)
        self.start_apiserver()
        if self.controller_manager is not None:
            self.controller_manager.start()
            self._wait(
                self._controller_manager_healthy,
                "kube-controller-manager /healthz",
                self.controller_manager,
            )

    def start_apiserver(self) -> None:
        self.apiserver.start()
        self._wait(self._apiserver_ready, "kube-apiserver /readyz", self.apiserver)

    def stop_apiserver(self) -> None:
        self.apiserver.stop()

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    def stop(self) -> None:
        if self.controller_manager is not None:
            self.controller_manager.stop()
        self.apiserver.stop()
        self.etcd.stop()

    def logs(self, lines: int = 40) -> str:
        text = (
            f"--- last {lines} lines of etcd ---\n{tail(self.etcd.log, lines)}\n"
            f"--- last {lines} lines of kube-apiserver ---\n{tail(self.apiserver.log, lines)}"
        )
        if self.controller_manager is not None:
            log = tail(self.controller_manager.log, lines)
            text += f"\n--- last {lines} lines of kube-controller-manager ---\n{log}"
        return text

    def _wait(self, probe: Any, what: str, process: Process) -> None:
        deadline = time.monotonic() + _READY_TIMEOUT
        last = ""
        while time.monotonic() < deadline:
            if not process.running():
                raise RuntimeError(f"{process.name} exited while starting\n{self.logs()}")
            ok, last = probe()
            if ok:
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} not ready after {_READY_TIMEOUT:.0f} s: {last}\n{self.logs()}")

    # -- arguments ---------------------------------------------------------

    def _etcd_argv(self) -> list[str]:
        client = f"http://127.0.0.1:{self.etcd_port}"
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        return [
            str(self.bin_dir / "etcd"),
            "--name=test",
            f"--data-dir={self.workdir / 'etcd-data'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=test={peer}",
            "--log-level=warn",
            # A test store is thrown away: fsync buys nothing and costs seconds.
            "--unsafe-no-fsync",
        ]

    def _apiserver_argv(self) -> list[str]:
        p = self.pki
        return [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{self.etcd_port}",
            f"--bind-address={self.host}",
            f"--advertise-address={self.host}",
            # The endpoint reconciler refuses a loopback address, and nothing here
            # dials the `kubernetes` Service anyway (but the test node's pods do).
            *(["--endpoint-reconciler-type=none"] if self.host == "127.0.0.1" else []),
            f"--secure-port={self.apiserver_port}",
            f"--tls-cert-file={p.serving_cert_file}",
            f"--tls-private-key-file={p.serving_key_file}",
            f"--client-ca-file={p.client_ca_file}",
            f"--service-account-key-file={p.service_account_pub_file}",
            f"--service-account-signing-key-file={p.service_account_key_file}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            # Only allocated from, never dialled: the test server calls 127.0.0.1 alone.
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            f"--audit-log-path={self.audit_log}",
            f"--audit-policy-file={self.audit_policy}",
            "--audit-log-mode=blocking",
            f"--cert-dir={self.workdir / 'apiserver-certs'}",
            # A SIGTERM otherwise keeps open watches served for up to a minute;
            # restart tests want a graceful stop that ends in seconds.
            "--shutdown-watch-termination-grace-period=2s",
            *self.extra_apiserver_args,
        ]

    def _controller_manager_argv(self) -> list[str]:
        kubeconfig = self.controller_manager_kubeconfig
        return [
            str(self.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            # Delegated authentication/authorization of its own /healthz and /metrics.
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            # Only what the tests need from a cluster: emptying and removing a deleted
            # namespace. No other controller acts on the tests' objects.
            f"--controllers={self.controllers}",
            *(
                []
                if self.controllers == "namespace"
                else [
                    f"--root-ca-file={self.pki.server_ca_file}",
                    f"--service-account-private-key-file={self.pki.service_account_key_file}",
                ]
            ),
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.controller_manager_port}",
            f"--tls-cert-file={self.pki.serving_cert_file}",
            f"--tls-private-key-file={self.pki.serving_key_file}",
        ]

    # -- probes ------------------------------------------------------------

    def _etcd_healthy(self) -> tuple[bool, str]:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.etcd_port}/health", timeout=2
            ) as response:
                body = response.read().decode()
        except OSError as error:
            return False, str(error)
        return '"health":"true"' in body, body

    def _controller_manager_healthy(self) -> tuple[bool, str]:
        url = f"https://127.0.0.1:{self.controller_manager_port}/healthz"
        try:
            with urllib.request.urlopen(url, timeout=2, context=self._admin_context()) as response:
                return response.status == 200, response.read().decode(errors="replace")
        except (OSError, urllib.error.HTTPError) as error:
            return False, str(error)

    def _apiserver_ready(self) -> tuple[bool, str]:
        try:
            status, body = self.raw("GET", "/readyz")
        except OSError as error:
            return False, str(error)
        return status == 200, body.decode(errors="replace")[-500:]

    # -- clients -----------------------------------------------------------

    @property
    def server(self) -> str:
        return f"https://{self.host}:{self.apiserver_port}"

    def ssl_context(self, client: pki_module.Pair | None = None) -> ssl.SSLContext:
        context = ssl.create_default_context(cadata=self.pki.server_ca.pem.decode())
        pair = client or self.pki.admin
        cert = self.workdir / "pki" / "ctx-client.crt"
        key = self.workdir / "pki" / "ctx-client.key"
        cert.write_bytes(pair.cert)
        key.write_bytes(pair.key)
        context.load_cert_chain(cert, key)
        return context

    def raw(
        self, method: str, path: str, body: bytes | None = None, content_type: str | None = None
    ) -> tuple[int, bytes]:
        """One admin request straight to the server (no client library in between)."""
        request = urllib.request.Request(self.server + path, data=body, method=method)
        if content_type:
            request.add_header("Content-Type", content_type)
        try:
            with urllib.request.urlopen(request, context=self._admin_context(), timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()

    _admin_ctx: ssl.SSLContext | None = None

    def _admin_context(self) -> ssl.SSLContext:
        if self._admin_ctx is None:
            self._admin_ctx = self.ssl_context()
        return self._admin_ctx

    def write_kubeconfig(
        self, name: str, pair: pki_module.Pair | None = None, *, token: str | None = None
    ) -> pathlib.Path:
        """A kubeconfig for this server as `pair`'s user or a bearer `token`."""
        user: dict[str, str] = {}
        if pair is not None:
            user["client-certificate-data"] = base64.b64encode(pair.cert).decode()
            user["client-key-data"] = base64.b64encode(pair.key).decode()
        if token is not None:
            user["token"] = token
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "test",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": base64.b64encode(
                            self.pki.server_ca.pem
                        ).decode(),
                    },
                }
            ],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": "test", "user": name}}],
            "current-context": name,
        }
        path = self.workdir / f"kubeconfig-{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        path.chmod(0o600)
        return path

    def kubectl(
        self,
        *args: str,
        stdin: str | None = None,
        kubeconfig: pathlib.Path | None = None,
        check: bool = False,
        timeout: float = 60.0,
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl (the `test` extra's, never PATH's) against this server."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBE")}
        env["KUBECONFIG"] = str(kubeconfig or self.kubeconfig)
        env["KUBECTL_EXTERNAL_DIFF"] = ""
        env["HOME"] = str(self.workdir)  # kubectl's discovery cache stays in the throwaway dir
        result = subprocess.run(
            [kubectl(), *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {result.returncode}:\n{result.stderr}"
            )
        return result

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision (as kube-apiserver's compactor does); return it."""
        base = f"http://127.0.0.1:{self.etcd_port}/v3"
        head = _post_json(f"{base}/kv/range", {"key": base64.b64encode(b"/").decode()})
        revision = int(head["header"]["revision"])
        _post_json(f"{base}/kv/compaction", {"revision": revision, "physical": True})
        return revision


def _post_json(url: str, payload: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        result: dict[str, Any] = json.loads(response.read())
        return result


@contextlib.contextmanager
def running(bin_dir: pathlib.Path, workdir: pathlib.Path, **kwargs: Any) -> Iterator[ControlPlane]:
    plane = ControlPlane(bin_dir, workdir, **kwargs)
    try:
        plane.start()
        yield plane
    finally:
        plane.stop()
