"""A real single-node cluster for the `node` tests.

The control plane of the `kube` tests (tests/kube/controlplane.py: etcd,
kube-apiserver, kube-controller-manager, now with all its usual controllers)
plus kube-scheduler, a containerd of our own (own root, state, socket and runc
root), a kubelet and kube-proxy (iptables), built by tests/node/build.sh from
the same Kubernetes release. The project's image (tests/node/image.sh) and the
pause image are imported into that containerd, the project's under the name
the manifests use.

The network stays on this machine:

- the node's IP is an address on a bridge with no ports (`fsnode-host`): the
  kubelet refuses a loopback node IP and this kernel has no dummy interfaces;
  kube-apiserver listens on and advertises it, so the `kubernetes` Service has
  an endpoint the pods reach; everything else listens on 127.0.0.1;
- pods live on a second bridge (`fsnode-pods`, CNI bridge + host-local), and a
  mangle-table chain drops any forwarded packet to or from the pod subnet that
  does not stay on that bridge; nothing masquerades to the outside and the
  service range is routed onto the port-less node bridge, never out;
- kube-proxy (iptables) makes ClusterIP Services work.

`stop()` undoes all of it — pods, containers, containerd's and the kubelet's
mounts, the pods' network namespaces, both bridges, kube-proxy's and our
iptables rules, the kernel tunables the kubelet and CNI set — and `start()`
first removes whatever a killed earlier run left (one node per machine, under
a lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from typing import IO

import yaml

from tests.kube import pki as pki_module
from tests.kube.controlplane import ControlPlane, Process, free_port, tail
from tests.node.image_support import NodeUnavailableError, image_name

HERE = pathlib.Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "build.sh"
NODE_NAME = "fsnode"
NODE_BRIDGE = "fsnode-host"
NODE_IP = "10.217.0.1"
NODE_CIDR = "10.217.0.1/24"
POD_BRIDGE = "fsnode-pods"
POD_SUBNET = "10.217.1.0/24"
SERVICE_CIDR = "10.217.2.0/24"
KUBERNETES_SERVICE_IP = "10.217.2.1"
CLUSTER_DNS_IP = "10.217.2.10"
CHAIN = "FSNODE-FORWARD"
CNI_BIN = pathlib.Path("/usr/lib/cni")
# The node's lock and what a killed run left: one node per machine, whatever cache a run
# builds into (a run with its own XDG_CACHE_HOME still takes the lock every other run takes;
# a node needs root, so HOME is root's).
RUN_DIR = pathlib.Path.home() / ".cache" / "feedbackstore-webhook" / "node-run"
SYSCTLS = (
    "net/ipv4/ip_forward",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/bridge/bridge-nf-call-iptables",
    "net/ipv4/conf/all/route_localnet",
)


def prerequisites() -> dict[str, str]:
    """The host tools the node needs, by name; a missing one raises NodeUnavailableError."""
    found: dict[str, str] = {}
    wanted = {
        "containerd": "containerd (Debian: containerd, or docker.io)",
        "ctr": "ctr (Debian: containerd)",
        "runc": "runc (Debian: runc)",
        "iptables": "iptables (Debian: iptables)",
        "ip": "ip (Debian: iproute2)",
    }
    missing = []
    for name, package in wanted.items():
        path = shutil.which(name)
        if path is None:
            missing.append(package)
        else:
            found[name] = path
    missing += [
        f"{CNI_BIN}/{plugin} (Debian: containernetworking-plugins)"
        for plugin in ("bridge", "host-local", "loopback")
        if not (CNI_BIN / plugin).exists()
    ]
    if os.geteuid() != 0:
        missing.append("root (a node creates bridges, mounts and iptables rules)")
    if missing:
        raise NodeUnavailableError("missing: " + ", ".join(missing))
    return found


# What image.sh needs of the machine besides the image's own inputs.
IMAGE_TOOLS = {
    "docker": "docker (Debian: docker.io)",
    "dockerd": "dockerd (Debian: docker.io)",
    "mmdebstrap": "mmdebstrap (Debian: mmdebstrap)",
}


def host_prerequisites() -> None:
    """What the `node` tests need of the machine, checked before anything is built for them
    (the node's binaries and the image take minutes): the node's own tools and root, and
    Docker and mmdebstrap for the image. NodeUnavailableError names what is missing."""
    missing = [package for name, package in IMAGE_TOOLS.items() if shutil.which(name) is None]
    try:
        prerequisites()
    except NodeUnavailableError as error:
        missing.insert(0, str(error).removeprefix("missing: "))
    if missing:
        raise NodeUnavailableError("missing: " + ", ".join(missing))


def sh(*argv: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.strip()}")
    return done


class Node:
    """A control plane and one node on this machine; `start()`, then `stop()` always."""

    def __init__(
        self,
        control_plane_bin: pathlib.Path,
        node_bin: pathlib.Path,
        image_tarball: pathlib.Path,
        workdir: pathlib.Path,
        report: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.tools = prerequisites()
        self.node_bin = node_bin
        self.image_tarball = image_tarball
        self.workdir = workdir
        self.report = report
        self.run_dir = RUN_DIR
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock: IO[str] | None = None
        self.plane = ControlPlane(
            control_plane_bin,
            workdir / "controlplane",
            host=NODE_IP,
            extra_ips=(KUBERNETES_SERVICE_IP,),
            namespace_controller=True,
            controllers="*",
            extra_apiserver_args=(
                f"--service-cluster-ip-range={SERVICE_CIDR}",
                # `kubectl logs`: dial the kubelet at the node IP, never look its name up.
                "--kubelet-preferred-address-types=InternalIP",
            ),
        )
        self.kubeconfig = self.plane.kubeconfig
        self.containerd_dir = workdir / "containerd"
        self.socket = self.containerd_dir / "containerd.sock"
        self.kubelet_dir = workdir / "kubelet"
        self.processes: list[Process] = []
        self.timings: dict[str, float] = {}

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        self._lock = (self.run_dir / "node.lock").open("a")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        self._cleanup_leftovers()
        (self.run_dir / "workdir").write_text(str(self.workdir))
        started = time.monotonic()
        self._network()
        self.plane.start()
        self.report(f"node: control plane up in {time.monotonic() - started:.1f} s")
        self._containerd()
        self._import_images()
        self._scheduler()
        # kube-proxy waits for its Node object (the kubelet registers it) before it serves.
        kube_proxy = self._kube_proxy()
        kubelet_started = time.monotonic()
        self._kubelet()
        self._wait_node_ready()
        self.timings["node_ready_after_kubelet"] = time.monotonic() - kubelet_started
        self._wait(
            "kube-proxy /livez",
            lambda: _http_ok(f"http://127.0.0.1:{self.kube_proxy_healthz}/livez"),
            kube_proxy,
        )
        self.timings["cold_start"] = time.monotonic() - started
        self.report(
            f"node: {NODE_NAME} Ready {self.timings['node_ready_after_kubelet']:.1f} s after "
            f"the kubelet started, {self.timings['cold_start']:.1f} s after the first process"
        )

    def stop(self) -> None:
        try:
            self._drain()
        finally:
            for process in reversed(self.processes):
                process.stop()
            self.processes.clear()
            self.plane.stop()
            self._cleanup(self.workdir)
            (self.run_dir / "workdir").unlink(missing_ok=True)
            if self._lock is not None:
                fcntl.flock(self._lock, fcntl.LOCK_UN)
                self._lock.close()
                self._lock = None

    def kubectl(self, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
        return self.plane.kubectl(*args, **kwargs)  # type: ignore[arg-type]

    def logs(self, lines: int = 30) -> str:
        parts = [self.plane.logs(lines)]
        for process in self.processes:
            parts.append(
                f"--- last {lines} lines of {process.name} ---\n{tail(process.log, lines)}"
            )
        return "\n".join(parts)

    # -- network -----------------------------------------------------------

    def _network(self) -> None:
        ip = self.tools["ip"]
        sh(ip, "link", "add", NODE_BRIDGE, "type", "bridge")
        sh(ip, "addr", "add", NODE_CIDR, "dev", NODE_BRIDGE)
        sh(ip, "link", "set", NODE_BRIDGE, "up")
        # Service addresses without an endpoint go nowhere: onto the port-less bridge.
        sh(ip, "route", "add", SERVICE_CIDR, "dev", NODE_BRIDGE, "src", NODE_IP)
        # The kubelet sets kernel tunables of its own (overcommit, panic on oops), the
        # CNI bridge plugin ip_forward: put the host's values back at the end.
        saved = {}
        for key in SYSCTLS:
            with contextlib.suppress(OSError):
                saved[key] = (pathlib.Path("/proc/sys") / key).read_text().strip()
        (self.run_dir / "sysctls.json").write_text(json.dumps(saved))
        ipt = self.tools["iptables"]
        sh(ipt, "-w", "-t", "mangle", "-N", CHAIN)
        # Forwarded pod traffic stays on the pod bridge (the CNI bridge plugin turns
        # ip_forward on for its gateway): nothing from a pod leaves the machine.
        sh(
            ipt,
            "-w",
            "-t",
            "mangle",
            "-A",
            CHAIN,
            "-i",
            POD_BRIDGE,
            "-o",
            POD_BRIDGE,
            "-j",
            "RETURN",
        )
        sh(ipt, "-w", "-t", "mangle", "-A", CHAIN, "-j", "DROP")
        for flag in ("-s", "-d"):
            sh(ipt, "-w", "-t", "mangle", "-I", "FORWARD", "1", flag, POD_SUBNET, "-j", CHAIN)

    def _cni_config(self) -> pathlib.Path:
        conf_dir = self.workdir / "cni" / "net.d"
        conf_dir.mkdir(parents=True, exist_ok=True)
        config = {
            "cniVersion": "0.4.0",
            "name": "fsnode",
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": POD_BRIDGE,
                    "isGateway": True,
                    "isDefaultGateway": True,
                    "ipMasq": False,
                    "hairpinMode": True,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{"subnet": POD_SUBNET}]],
                        "dataDir": str(self.workdir / "cni" / "ipam"),
                    },
                }
            ],
        }
        (conf_dir / "10-fsnode.conflist").write_text(json.dumps(config, indent=2))
        return conf_dir

    # -- processes ---------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> Process:
        process = Process(name, argv, self.workdir / f"{name}.log")
        process.start()
        self.processes.append(process)
        return process

    def _wait(
        self, what: str, probe: Callable[[], bool], process: Process, timeout: float = 120
    ) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not process.running():
                raise RuntimeError(f"{process.name} exited while starting:\n{tail(process.log)}")
            if probe():
                return
            time.sleep(0.2)
        raise RuntimeError(f"{what} not ready after {timeout:.0f} s:\n{tail(process.log)}")

    def _ctr(
        self, *args: str, check: bool = True, timeout: float = 600
    ) -> subprocess.CompletedProcess[str]:
        return sh(
            self.tools["ctr"],
            "--address",
            str(self.socket),
            "-n",
            "k8s.io",
            *args,
            check=check,
            timeout=timeout,
        )

    def _containerd(self) -> None:
        d = self.containerd_dir
        d.mkdir(parents=True, exist_ok=True)
        pause = (self.node_bin / "pause-image").read_text().strip()
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        config = f"""version = 2
root = "{d / "root"}"
state = "{d / "state"}"
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{d / "containerd.sock.ttrpc"}"
[debug]
  address = "{d / "debug.sock"}"
[metrics]
  address = ""
[plugins."io.containerd.internal.v1.opt"]
  path = "{d / "opt"}"
[{cri}]
  sandbox_image = "{pause}"
  # This VM lacks CAP_SYS_RESOURCE: runc cannot raise oom_score_adj.
  restrict_oom_score_adj = true
  enable_selinux = false
  [{cri}.containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [{cri}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{d / "runc"}"
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{self._cni_config()}"
"""
        (d / "config.toml").write_text(config)
        process = self._spawn(
            "containerd", [self.tools["containerd"], "--config", str(d / "config.toml")]
        )
        self._wait(
            "containerd",
            lambda: self._ctr("version", check=False, timeout=10).returncode == 0,
            process,
        )

    def _import_images(self) -> None:
        started = time.monotonic()
        self._ctr("images", "import", str(self.node_bin / "pause.tar"))
        self._ctr("images", "import", str(self.image_tarball))
        listed = self._ctr("images", "ls", "-q").stdout.split()
        for wanted in ((self.node_bin / "pause-image").read_text().strip(), image_name()):
            assert any(name.endswith(wanted) for name in listed), (wanted, listed)
        self.report(f"node: images imported into containerd in {time.monotonic() - started:.1f} s")

    def _client_kubeconfig(self, user: str, *groups: str) -> pathlib.Path:
        return self.plane.write_kubeconfig(user, self.plane.pki.client(user, *groups))

    def _scheduler(self) -> None:
        kubeconfig = self._client_kubeconfig("system:kube-scheduler", "system:masters")
        port = free_port()
        process = self._spawn(
            "kube-scheduler",
            [
                str(self.node_bin / "kube-scheduler"),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
            ],
        )
        self._wait(
            "kube-scheduler", lambda: _https_ok(f"https://127.0.0.1:{port}/healthz"), process
        )

    def _kube_proxy(self) -> Process:
        kubeconfig = self._client_kubeconfig("system:kube-proxy", "system:masters")
        self.kube_proxy_config = self.workdir / "kube-proxy.yaml"
        self.kube_proxy_healthz = healthz = free_port()
        config = {
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "mode": "iptables",
            "clientConnection": {"kubeconfig": str(kubeconfig)},
            "hostnameOverride": NODE_NAME,
            "bindAddress": "127.0.0.1",
            "healthzBindAddress": f"127.0.0.1:{healthz}",
            "metricsBindAddress": f"127.0.0.1:{free_port()}",
            "clusterCIDR": POD_SUBNET,
            "nodePortAddresses": [f"{NODE_IP}/32"],
            # Leave the host's conntrack sysctls alone.
            "conntrack": {
                "maxPerCore": 0,
                "min": 0,
                "tcpEstablishedTimeout": "0s",
                "tcpCloseWaitTimeout": "0s",
            },
            "iptables": {"localhostNodePorts": False},
        }
        self.kube_proxy_config.write_text(yaml.safe_dump(config))
        return self._spawn(
            "kube-proxy",
            [
                str(self.node_bin / "kube-proxy"),
                f"--config={self.kube_proxy_config}",
            ],
        )

    def _kubelet(self) -> None:
        self.kubelet_dir.mkdir(parents=True, exist_ok=True)
        pair = pki_module.issue(
            self.plane.pki.client_ca,
            f"system:node:{NODE_NAME}",
            organizations=("system:nodes", "system:masters"),
            client=True,
        )
        kubeconfig = self.plane.write_kubeconfig("kubelet", pair)
        resolv = self.workdir / "resolv.conf"
        resolv.write_text("nameserver 127.0.0.1\n")  # no cluster DNS; pods resolve nothing
        self.kubelet_healthz = free_port()
        config = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": NODE_IP,
            "port": free_port(),
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": self.kubelet_healthz,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "cgroupDriver": "cgroupfs",
            "failCgroupV1": False,
            "failSwapOn": False,
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "resolvConf": str(resolv),
            # No cluster DNS runs: an address in the service range that answers nothing
            # (the pods never resolve a name), so the kubelet does not warn on every pod.
            "clusterDNS": [CLUSTER_DNS_IP],
            # A mounted Secret's update reaches the pods within this (default 1 min).
            "syncFrequency": "10s",
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {
                "memory.available": "1Mi",
                "nodefs.available": "1%",
                "imagefs.available": "1%",
                "nodefs.inodesFree": "1%",
            },
            "serializeImagePulls": False,
            "registerNode": True,
            "rotateCertificates": False,
            "serverTLSBootstrap": False,
            "enableServer": True,
            "localStorageCapacityIsolation": True,
        }
        config_file = self.workdir / "kubelet.yaml"
        config_file.write_text(yaml.safe_dump(config))
        process = self._spawn(
            "kubelet",
            [
                str(self.node_bin / "kubelet"),
                f"--config={config_file}",
                f"--kubeconfig={kubeconfig}",
                f"--root-dir={self.kubelet_dir}",
                f"--cert-dir={self.workdir / 'kubelet-pki'}",
                f"--hostname-override={NODE_NAME}",
                f"--node-ip={NODE_IP}",
                "--v=1",
            ],
        )
        self._wait(
            "kubelet /healthz",
            lambda: _http_ok(f"http://127.0.0.1:{self.kubelet_healthz}/healthz"),
            process,
        )

    def _wait_node_ready(self, timeout: float = 120) -> None:
        kubelet = next(p for p in self.processes if p.name == "kubelet")

        def ready() -> bool:
            done = self.kubectl(
                "get",
                "node",
                NODE_NAME,
                "-o",
                "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
            )
            return done.returncode == 0 and done.stdout.strip() == "True"

        self._wait(f"node {NODE_NAME} Ready", ready, kubelet, timeout)

    # -- teardown ----------------------------------------------------------

    def _drain(self) -> None:
        """Every pod gone through the kubelet (CNI DEL, netns and mounts removed)."""
        if not any(p.name == "kubelet" and p.running() for p in self.processes):
            return
        with contextlib.suppress(Exception):
            self.kubectl(
                "delete",
                "deployments,replicasets,daemonsets,statefulsets,jobs",
                "--all",
                "-A",
                "--wait=false",
                timeout=30,
            )
            self.kubectl(
                "delete",
                "pods",
                "--all",
                "-A",
                "--force",
                "--grace-period=0",
                "--wait=false",
                timeout=30,
            )
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                listed = self._ctr("tasks", "ls", "-q", check=False, timeout=10)
                if listed.returncode == 0 and not listed.stdout.strip():
                    break
                time.sleep(0.5)

    def _cleanup_leftovers(self) -> None:
        """What a killed earlier run left: its processes are gone with it, the rest is not."""
        marker = self.run_dir / "workdir"
        old = pathlib.Path(marker.read_text().strip()) if marker.exists() else None
        self._cleanup(old)

    def _cleanup(self, workdir: pathlib.Path | None) -> None:
        ip, ipt = self.tools["ip"], self.tools["iptables"]
        if workdir is not None:
            sock = workdir / "containerd" / "containerd.sock"
            # Containers first (a shim's death leaves its container running): runc's
            # own state for our runtime root names every one.
            runc_root = workdir / "containerd" / "runc" / "k8s.io"
            if runc_root.is_dir():
                listed = sh(
                    self.tools["runc"], "--root", str(runc_root), "list", "-q", check=False
                ).stdout.split()
                for container in listed:
                    sh(
                        self.tools["runc"],
                        "--root",
                        str(runc_root),
                        "delete",
                        "--force",
                        container,
                        check=False,
                    )
            # Containers whose containerd is gone keep their shims: kill the shims of
            # our containerd (found by its address on their command line).
            for pid in _pids_with_arg(str(sock)):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)
            # Network namespaces CRI made for our pods (named in the sandboxes' state).
            for netns in _our_netns(workdir):
                sh("umount", netns, check=False)
                with contextlib.suppress(OSError):
                    os.unlink(netns)
            for mount in sorted(_mounts_under(workdir), key=len, reverse=True):
                sh("umount", "-l", mount, check=False)
            # The unpacked images and pod volumes: hundreds of MB per run.
            for part in ("containerd", "kubelet"):
                shutil.rmtree(workdir / part, ignore_errors=True)
        # The kubelet's pod cgroups (cgroupfs driver), empty once the containers are gone.
        for hierarchy in pathlib.Path("/sys/fs/cgroup").glob("*/kubepods"):
            for directory in sorted(hierarchy.rglob("*"), key=lambda d: len(d.parts), reverse=True):
                if directory.is_dir():
                    with contextlib.suppress(OSError):
                        directory.rmdir()
            with contextlib.suppress(OSError):
                hierarchy.rmdir()
        if (self.node_bin / "kube-proxy").exists():
            sh(str(self.node_bin / "kube-proxy"), "--cleanup", check=False)
        # What kube-proxy --cleanup leaves: the kubelet's KUBE-FIREWALL, canaries, hints.
        for binary in ("iptables", "ip6tables"):
            if shutil.which(binary):
                _remove_kube_chains(binary)
        for bridge in (POD_BRIDGE, NODE_BRIDGE):
            sh(ip, "link", "del", bridge, check=False)
        for flag in ("-s", "-d"):
            while (
                sh(
                    ipt,
                    "-w",
                    "-t",
                    "mangle",
                    "-D",
                    "FORWARD",
                    flag,
                    POD_SUBNET,
                    "-j",
                    CHAIN,
                    check=False,
                ).returncode
                == 0
            ):
                pass
        sh(ipt, "-w", "-t", "mangle", "-F", CHAIN, check=False)
        sh(ipt, "-w", "-t", "mangle", "-X", CHAIN, check=False)
        saved = self.run_dir / "sysctls.json"
        if saved.exists():
            for key, value in json.loads(saved.read_text()).items():
                with contextlib.suppress(OSError):
                    (pathlib.Path("/proc/sys") / key).write_text(value)
            saved.unlink()


def _remove_kube_chains(binary: str) -> None:
    """Every KUBE-* chain in filter, nat and mangle, and every jump to one."""
    for table in ("filter", "nat", "mangle"):
        listed = sh(binary, "-w", "-t", table, "-S", check=False).stdout.splitlines()
        chains = [line.split()[1] for line in listed if line.startswith("-N KUBE-")]
        for line in listed:
            words = shlex.split(line)
            if (
                words[:1] == ["-A"]
                and not words[1].startswith("KUBE-")
                and any(w.startswith("KUBE-") for w in words[2:])
            ):
                sh(binary, "-w", "-t", table, "-D", *words[1:], check=False)
        for chain in chains:
            sh(binary, "-w", "-t", table, "-F", chain, check=False)
        for chain in chains:
            sh(binary, "-w", "-t", table, "-X", chain, check=False)


def _pids_with_arg(arg: str) -> list[int]:
    pids = []
    for proc in pathlib.Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if arg.encode() in argv:
            pids.append(int(proc.name))
    return pids


def _mounts_under(directory: pathlib.Path) -> list[str]:
    prefix = str(directory.resolve()) + "/"
    found = []
    for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].replace("\\040", " ")
        if point.startswith(prefix):
            found.append(point)
    return found


def _our_netns(workdir: pathlib.Path) -> list[str]:
    """The /var/run/netns entries our containerd's sandboxes used (from its state dir)."""
    found: set[str] = set()
    state = workdir / "containerd"
    for path in state.rglob("config.json") if state.exists() else []:
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            spec = json.loads(path.read_text())
            for namespace in spec["linux"]["namespaces"]:
                if namespace.get("type") == "network" and namespace.get("path", "").startswith(
                    ("/var/run/netns/", "/run/netns/")
                ):
                    found.add(namespace["path"])
    return sorted(found)


def _http_ok(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def _https_ok(url: str) -> bool:
    import ssl
    import urllib.request

    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the scheduler's self-signed /healthz, on 127.0.0.1
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False
