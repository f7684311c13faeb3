"""The `node` tests: the project's image, built from its Dockerfile, and a real node running it.

`image` runs the image in Docker as the Deployments do; `node` is a single-node
cluster (tests/node/cluster.py: the `kube` tests' control plane plus
kube-scheduler, containerd, a kubelet and kube-proxy built by tests/node/build.sh)
with the image and pause imported into its containerd.

The image, the node's binaries and the control plane are built when the session
starts (tests/support/prebuild.py); a missing prerequisite (docker.io, mmdebstrap,
containerd, iptables, the CNI plugins, a Go toolchain, gcc) skips them with one loud
reason, unless FEEDBACKSTORE_REQUIRE_KUBE=1, which makes it a failure.

Every `node` test is in the xdist group `node` (each module says so in its
`pytestmark`; a test that does not is refused at collection): they share one
image and one node, so they run on one worker.
"""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import pytest

from tests.node.cluster import Node
from tests.node.image_support import Docker, NodeUnavailableError
from tests.support import prebuild

HERE = pathlib.Path(__file__).resolve().parent
GROUP = "node"  # its entry in tests/support/prebuild.py


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A `node` test outside the `node` xdist group would run on another worker, with a
    second node fighting the first over the bridges: refuse it."""
    for item in items:
        if item.get_closest_marker("node") is None:
            continue
        groups = {
            m.args[0] if m.args else m.kwargs.get("name") for m in item.iter_markers("xdist_group")
        }
        if groups != {"node"}:
            raise pytest.UsageError(
                f"{item.nodeid} is marked `node` but its xdist groups are {groups or 'none'}: "
                "add pytest.mark.xdist_group('node') to its module's pytestmark"
            )


@pytest.fixture(scope="session", name="image")
def _image() -> Iterator[tuple[Docker, str]]:
    tarball = prebuild.tool(GROUP, "image")
    docker = Docker()
    try:
        docker.start()
        name = docker.ensure_image(tarball)
    except NodeUnavailableError as missing:
        docker.stop()
        prebuild.skip_group(GROUP, str(missing))
    except BaseException:
        docker.stop()
        raise
    yield docker, name
    docker.stop()


@pytest.fixture(scope="session", name="node")
def _node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Node]:
    try:
        node = Node(
            prebuild.tool(GROUP, "control plane"),
            prebuild.tool(GROUP, "node binaries"),
            prebuild.tool(GROUP, "image"),
            tmp_path_factory.mktemp("node"),
            report=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except NodeUnavailableError as missing:
        prebuild.skip_group(GROUP, str(missing))
    try:
        node.start()
    except BaseException:
        node.stop()
        raise
    yield node
    node.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failing test on the node shows the last lines of every process's log."""
    report = yield
    if report.failed and "node" in getattr(item, "fixturenames", ()):
        node = getattr(item, "funcargs", {}).get("node")
        if isinstance(node, Node):
            report.sections.append(("node logs", node.logs()))
    return report
