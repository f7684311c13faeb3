"""`feedbackstore-webhook cleanup` end to end against the API-server emulator: its exit codes, its
lines, its refusal while a writer leads, and that a second run and `--dry-run` write nothing.
What the real kube-apiserver does with its writes is tests/kube/test_cleanup_real.py's.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client

from tests.support.emulator import ApiServerEmulator
from tests.support.emulator.resources import LEASES
from tests.support.emulator.samples import (
    APPLY_PATCH,
    GROUP,
    PLURAL,
    VERSION,
    condition,
    feedbackstore,
    status_apply,
)
from webhook.cli.main import main
from webhook.kube.timestamps import micro_time, utc_now

WRITER = "feedbackstore-status-writer"
FINALIZER = "agents.ctxmesh.ai/in-use-protection"


def run(kubeconfig: pathlib.Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["cleanup", "--kubeconfig", str(kubeconfig), *args])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def kubeconfig(apiserver: ApiServerEmulator, tmp_path: pathlib.Path) -> pathlib.Path:
    return apiserver.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def marked(apiserver: ApiServerEmulator) -> None:
    """A store the writer marked: two conditions by its status apply, its finalizer by another."""
    apiserver.create("agents", feedbackstore("support"))
    api = client.CustomObjectsApi(apiserver.api_client())
    conditions = [condition("Stalled", "False"), condition("InUse", "True")]
    api.patch_namespaced_custom_object_status(
        GROUP, VERSION, "agents", PLURAL, "support", status_apply(conditions),
        field_manager=WRITER, force=True, _content_type=APPLY_PATCH,
    )  # fmt: skip
    held = feedbackstore("support", "agents")
    held["metadata"]["finalizers"] = [FINALIZER]
    api.patch_namespaced_custom_object(
        GROUP, VERSION, "agents", PLURAL, "support", held,
        field_manager=WRITER, force=True, _content_type=APPLY_PATCH,
    )  # fmt: skip
    apiserver.reset_requests()


def lease(holder: str, renewed_ago: float, duration: int = 15) -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": WRITER},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "renewTime": micro_time(utc_now() - timedelta(seconds=renewed_ago)),
        },
    }


@pytest.mark.usefixtures("marked")
def test_it_removes_the_marks_once_and_a_second_run_writes_nothing(
    apiserver: ApiServerEmulator, kubeconfig: pathlib.Path
) -> None:
    dry = run(kubeconfig, "--dry-run")
    assert dry == (
        0,
        f"agents/support: would remove finalizer {FINALIZER}; would remove conditions InUse, "
        "Stalled\ndry run, nothing written: 1 of 1 FeedbackStores would change: 1 finalizers "
        "and 2 conditions to remove; 0 left to other field managers\n",
        "",
    )
    assert apiserver.writes() == []

    assert run(kubeconfig) == (
        0,
        f"agents/support: removed finalizer {FINALIZER}; removed conditions InUse, Stalled\n"
        "1 of 1 FeedbackStores changed: 1 finalizers and 2 conditions removed; "
        "0 left to other field managers\n",
        "",
    )
    assert [(w.method, w.path.rsplit("/", 2)[-2:]) for w in apiserver.writes()] == [
        ("PATCH", ["support", "status"]),
        ("PATCH", [PLURAL, "support"]),
    ]
    store = apiserver.get("agents", "support")
    assert "finalizers" not in store["metadata"]
    assert (store.get("status") or {}).get("conditions") in (None, [])

    apiserver.reset_requests()
    assert run(kubeconfig)[:2] == (
        0,
        "0 of 1 FeedbackStores changed: 0 finalizers and 0 conditions removed; "
        "0 left to other field managers\n",
    )
    assert apiserver.writes() == []


@pytest.mark.parametrize(
    ("holder", "renewed_ago", "refused"),
    [
        pytest.param("writer-0_1111", 1.0, True, id="a Lease renewed a second ago refuses"),
        pytest.param("writer-0_1111", 20.0, False, id="a Lease past its duration has lapsed"),
        pytest.param("", 1.0, False, id="a released Lease holds nobody"),
    ],
)
@pytest.mark.usefixtures("marked")
def test_it_refuses_with_exit_2_naming_the_holder_while_a_writer_leads(
    apiserver: ApiServerEmulator,
    kubeconfig: pathlib.Path,
    holder: str,
    renewed_ago: float,
    refused: bool,
) -> None:
    apiserver.create("feedbackstore-system", lease(holder, renewed_ago), resource=LEASES)
    apiserver.reset_requests()
    code, out, err = run(kubeconfig)
    if refused:
        assert (code, out) == (2, "")
        assert err.startswith(
            "cleanup: a status writer is running: Lease "
            "feedbackstore-system/feedbackstore-status-writer is held by writer-0_1111 for "
        ), err
        assert apiserver.writes() == []
    else:
        assert (code, err) == (0, "")
        assert "1 of 1 FeedbackStores changed" in out


@pytest.mark.usefixtures("marked")
def test_waiting_for_the_lease_proceeds_once_it_lapses(
    apiserver: ApiServerEmulator, kubeconfig: pathlib.Path
) -> None:
    apiserver.create("feedbackstore-system", lease("writer-0_1111", 0.0, 2), resource=LEASES)
    code, out, err = run(kubeconfig, "--wait-for-lease", "30")
    assert (code, err) == (0, "")
    assert "1 of 1 FeedbackStores changed" in out


def test_without_a_cluster_it_says_so_with_exit_2(tmp_path: pathlib.Path) -> None:
    code, out, err = run(tmp_path / "missing")
    assert (code, out) == (2, "")
    assert err.startswith("cleanup: cannot load Kubernetes configuration: "), err
