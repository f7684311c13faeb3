"""The status writer at scale, against a real kube-apiserver and etcd, with thousands of stores.

Each test runs the console script scoped to a fresh namespace (`--namespace`) and judges it
by kube-apiserver's audit log: the initial list in pages of 500 (`limit`, then `continue`),
each change of verdict an Event of its own (never patched), and the `--qps` limit held.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client as k8s

from tests.kube.cluster import (
    api_client,
    eventually,
    install_crd,
    new_namespace,
    platform_today_crd,
    shipped_crd,
)
from tests.kube.controlplane import ControlPlane
from tests.kube.status_writer_support import (  # noqa: F401 (fixtures)
    INVALID,
    VALID,
    Audit,
    Audited,
    Stores,
    Writers,
    _audit,
    _stores,
    _writers,
    create_unguarded,
)

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

PAGE = 500


@pytest.fixture(scope="module", autouse=True)
def shipped(control_plane: ControlPlane) -> None:
    install_crd(control_plane, shipped_crd())


@pytest.fixture
def namespace(control_plane: ControlPlane) -> str:
    return new_namespace(control_plane, "scale")


def query(request: Audited) -> dict[str, list[str]]:
    return parse_qs(urlsplit(request.uri).query)


def by(audit: Audit, namespace: str, user: str) -> list[Audited]:
    audit.flush(namespace)
    return [e for e in audit.events(namespace) if e.user == user]


def events_about(plane: ControlPlane, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = k8s.CoreV1Api(api_client(plane)).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}", _preload_content=False
    )
    items: list[dict[str, Any]] = json.loads(listed.data)["items"]
    return items


def test_the_first_list_comes_in_pages_of_500_with_continue_tokens(
    stores: Stores, writers: Writers, audit: Audit, namespace: str
) -> None:
    count = PAGE * 2 + 10
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: stores.create(f"s-{i:04d}", VALID), range(count)))
    writer = writers.start("pages", "--qps", "0")
    listed = writer.wait_log("listed", timeout=60.0)[0]
    assert listed["objects"] == count
    assert listed["requests"] == 3
    assert listed["fullListFallback"] is False

    requests = [e for e in by(audit, namespace, writer.user) if e.resource == "feedbackstores"]
    lists = [e for e in requests if e.verb == "list"]
    assert [(e.code, query(e).get("limit")) for e in lists] == [(200, ["500"])] * 3
    tokens = [query(e).get("continue") for e in lists]
    assert tokens[0] is None, "the first page carries no token"
    assert tokens[1]
    assert tokens[2]
    assert tokens[1] != tokens[2], "each next page the last token"
    assert all("resourceVersion" not in query(e) for e in lists), "a consistent read"
    # (The watch that follows is audited at ResponseComplete only when it ends.)


def test_each_change_of_a_flipping_store_is_an_event_of_its_own(
    control_plane: ControlPlane, stores: Stores, writers: Writers, audit: Audit, namespace: str
) -> None:
    create_unguarded(control_plane, namespace, {"flappy": INVALID})
    writer = writers.start("events")
    stores.wait_condition("flappy", lambda c: c["status"] == "False")

    def warnings() -> list[dict[str, Any]]:
        return [
            e
            for e in events_about(control_plane, namespace, "flappy")
            if e["reason"] == "InvalidSpec"
        ]

    eventually(warnings, what="the first InvalidSpec Event")
    for round_ in range(2):
        stores.set_spec("flappy", VALID)
        stores.wait_condition("flappy", lambda c: c["status"] == "True")
        install_crd(control_plane, platform_today_crd())  # the CEL rules would refuse it
        try:
            stores.set_spec("flappy", INVALID)
        finally:
            install_crd(control_plane, shipped_crd())
        stores.wait_condition("flappy", lambda c: c["status"] == "False")
        expected = round_ + 2
        eventually(
            lambda n=expected: [e["count"] for e in warnings()] == [1] * n,
            what=f"{expected} InvalidSpec Events",
        )

    requests = [e for e in by(audit, namespace, writer.user) if e.resource == "events"]
    # InvalidSpec three times, SpecCoherent twice: each a create, nothing patched.
    assert sorted((e.verb, e.code) for e in requests) == [("create", 201)] * 5
    coherent = [
        e for e in events_about(control_plane, namespace, "flappy") if e["reason"] == "SpecCoherent"
    ]
    assert [e["count"] for e in coherent] == [1, 1]


def test_qps_holds_every_request_but_watches_within_burst_plus_rate(
    control_plane: ControlPlane, writers: Writers, audit: Audit, namespace: str
) -> None:
    qps, burst = 4.0, 4
    create_unguarded(control_plane, namespace, {f"bad-{i:02d}": INVALID for i in range(14)})
    writer = writers.start("qps", "--qps", str(qps), "--burst", str(burst))

    # 1 list, 14 status applies and 14 Events: 29 throttled requests, ~6 s at 4/s.
    def throttled() -> list[Audited]:
        return [
            e
            for e in by(audit, namespace, writer.user)
            if e.verb != "watch" and e.resource in ("feedbackstores", "events")
        ]

    eventually(lambda: len(throttled()) >= 29, timeout=60.0, what="29 throttled requests")
    sent = sorted(e.received for e in throttled())
    span = (sent[-1] - sent[0]).total_seconds()
    assert span >= (len(sent) - burst) / qps - 0.5, f"{len(sent)} requests in {span:.2f} s"
    slack = timedelta(milliseconds=300)  # one audit timestamp is taken after the client waited
    for i, start in enumerate(sent):
        for j in range(i, len(sent)):
            window = (sent[j] - start + slack).total_seconds()
            assert j - i + 1 <= burst + qps * window, (
                f"{j - i + 1} requests within {window:.2f} s at --qps {qps} --burst {burst}"
            )
