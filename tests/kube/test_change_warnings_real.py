"""Change-impact warnings (what a change does to the store's readers) as a kubectl user sees them,
on the real kube-apiserver.

The webhook is registered by url for CREATE and UPDATE; each change below is
made from the same stored store (one store per change), by `kubectl apply`,
`kubectl apply --server-side` or `kubectl patch`, and prints its warnings. An
invalid UPDATE is still refused (with the CRD ctxmesh ships today, so the
webhook is the one that refuses it), and a store in use, as the real status
writer marks it, names its agents. Texts are what kubectl printed.
"""

from __future__ import annotations

import copy
import pathlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.kube.cluster import eventually, install_crd, platform_today_crd, shipped_crd
from tests.kube.controlplane import ControlPlane
from tests.kube.inuse_support import Agents, agent_crd_installed
from tests.kube.kubectl_support import (  # noqa: F401 (fixtures)
    CHANGES_BLOCK,
    MONITOR_WARNING,
    User,
    _server,
    _user,
    _webhook,
    console,
    failed,
    matches_docs,
    succeeded,
)
from tests.kube.status_writer_support import Stores, WriterProcess
from tests.support.reviews import valid_spec

pytestmark = [pytest.mark.kube, pytest.mark.xdist_group("kube")]

GROUP_KIND = "feedbackstore.agents.ctxmesh.ai"


@pytest.fixture(scope="module", autouse=True)
def crds(control_plane: ControlPlane) -> Iterator[None]:
    install_crd(control_plane, shipped_crd())
    with agent_crd_installed(control_plane):
        yield


# How the docs' block shows the stored store its commands change.
STORED = (
    "# stored: human scores thumbs (BOOLEAN) and tone (CATEGORICAL), "
    "channel csat-webhook writing csat; mode Enforce"
)


def store(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": name},
        "spec": spec,
    }


def remove_tone(spec: dict[str, Any]) -> None:
    del spec["human"]["scores"][1]


def rename_thumbs(spec: dict[str, Any]) -> None:
    spec["human"]["scores"][0]["name"] = "thumb"


def retype_thumbs(spec: dict[str, Any]) -> None:
    spec["human"]["scores"][0]["dataType"] = "NUMERIC"


def csat_to_human(spec: dict[str, Any]) -> None:
    del spec["external"]
    spec["human"]["scores"].append({"name": "csat", "dataType": "NUMERIC"})


def thumbs_to_a_channel(spec: dict[str, Any]) -> None:
    del spec["human"]["scores"][0]
    spec["external"].append(
        {"name": "thumbs-api", "score": {"name": "thumbs", "dataType": "BOOLEAN"}}
    )


def remove_channel(spec: dict[str, Any]) -> None:
    del spec["external"]


def rename_channel(spec: dict[str, Any]) -> None:
    spec["external"][0]["name"] = "csat-v2"


def to_monitor(spec: dict[str, Any]) -> None:
    spec["mode"] = "Monitor"


def reorder(spec: dict[str, Any]) -> None:
    spec["human"]["scores"].reverse()


# (store name, the change, the warnings kubectl prints)
CHANGES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "removed",
        remove_tone,
        'Warning: score "tone" removed from human: the gateway rejects "tone" (422) from now on\n',
    ),
    (
        "renamed",
        rename_thumbs,
        'Warning: score "thumbs" renamed to "thumb" in human: the gateway rejects "thumbs" (422) '
        "from now on\n",
    ),
    (
        "retyped",
        retype_thumbs,
        'Warning: score "thumbs" dataType BOOLEAN -> NUMERIC: the gateway checks no dataType; it '
        "reads as NUMERIC in Langfuse\n",
    ),
    (
        "to-human",
        csat_to_human,
        'Warning: score "csat" moved from channel "csat-webhook" to human: its scores read as '
        "human from now on\n",
    ),
    (
        "to-channel",
        thumbs_to_a_channel,
        'Warning: score "thumbs" moved from human to channel "thumbs-api": its scores read as '
        '"external:thumbs-api" from now on\n',
    ),
    (
        "no-channel",
        remove_channel,
        'Warning: channel "csat-webhook" removed with score "csat": the gateway rejects "csat" '
        "(422) from now on\n",
    ),
    (
        "channel-renamed",
        rename_channel,
        'Warning: channel "csat-webhook" renamed to "csat-v2": score "csat" reads as '
        '"external:csat-v2" from now on\n',
    ),
    (
        "monitor",
        to_monitor,
        "Warning: mode Enforce -> Monitor: the gateway relays undeclared score names, read as "
        "unattributed\n" + MONITOR_WARNING,
    ),
    ("reordered", reorder, ""),
]


def changed(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    spec = valid_spec()
    change(spec)
    return spec


@pytest.mark.parametrize("server_side", [False, True], ids=["apply", "apply --server-side"])
def test_each_change_applied_prints_what_it_does(
    user: User, webhook: None, server_side: bool
) -> None:
    apply = "kubectl apply --server-side -f -" if server_side else "kubectl apply -f -"
    done = "serverside-applied" if server_side else "configured"
    for name, change, warnings in CHANGES:
        created = user.run(apply, store(name, valid_spec()))
        assert created.printed == succeeded(
            f"{GROUP_KIND}/{name} {'serverside-applied' if server_side else 'created'}\n"
        )
        again = user.run(apply, store(name, valid_spec()))
        unchanged = "serverside-applied" if server_side else "unchanged"
        assert again.printed == succeeded(f"{GROUP_KIND}/{name} {unchanged}\n"), "no change"
        step = user.run(apply, store(name, changed(change)))
        assert step.printed == succeeded(f"{GROUP_KIND}/{name} {done}\n", warnings), name


def json_patch(op: str, path: str, value: str | None = None) -> str:
    body = f'{{"op":"{op}","path":"{path}"' + (f',"value":"{value}"' if value else "") + "}"
    return f"kubectl patch fs support-feedback --type=json -p '[{body}]'"


def merge_patch(spec: str) -> str:
    return f"""kubectl patch fs support-feedback --type=merge -p '{{"spec":{spec}}}'"""


PATCHED = f"{GROUP_KIND}/support-feedback patched\n"
# (command, the warnings it prints), one after the other on the same store
SEQUENCE = [
    (
        json_patch("remove", "/spec/human/scores/1"),
        'Warning: score "tone" removed from human: the gateway rejects "tone" (422) from now on\n',
    ),
    (
        json_patch("replace", "/spec/human/scores/0/name", "thumb"),
        'Warning: score "thumbs" renamed to "thumb" in human: the gateway rejects "thumbs" (422) '
        "from now on\n",
    ),
    (
        json_patch("replace", "/spec/human/scores/0/dataType", "NUMERIC"),
        'Warning: score "thumb" dataType BOOLEAN -> NUMERIC: the gateway checks no dataType; it '
        "reads as NUMERIC in Langfuse\n",
    ),
    (
        json_patch("replace", "/spec/external/0/name", "csat-v2"),
        'Warning: channel "csat-webhook" renamed to "csat-v2": score "csat" reads as '
        '"external:csat-v2" from now on\n',
    ),
    (
        merge_patch('{"mode":"Monitor"}'),
        "Warning: mode Enforce -> Monitor: the gateway relays undeclared score names, read as "
        "unattributed\n" + MONITOR_WARNING,
    ),
    (
        merge_patch('{"mode":"Enforce","external":null}'),
        "Warning: mode Monitor -> Enforce: the gateway rejects undeclared score names (422) from "
        "now on\n"
        'Warning: channel "csat-v2" removed with score "csat": the gateway rejects "csat" '
        "(422) from now on\n",
    ),
]


def test_one_change_after_another_as_the_docs_show(user: User, webhook: None) -> None:
    created = user.run("kubectl apply -f -", store("support-feedback", valid_spec()))
    assert created.printed == succeeded(f"{GROUP_KIND}/support-feedback created\n")
    steps = []
    for command, warnings in SEQUENCE:
        step = user.run(command)
        assert step.printed == succeeded(PATCHED, warnings), command
        steps.append(step)
    labelled = user.run("kubectl label fs support-feedback team=support")
    assert labelled.printed == succeeded(f"{GROUP_KIND}/support-feedback labeled\n")
    shown = console([CHANGES_BLOCK, STORED, *steps, "# spec unchanged: nothing to say", labelled])
    assert matches_docs(shown)


def test_an_invalid_update_is_still_refused_and_told_what_it_would_change(
    control_plane: ControlPlane, user: User, webhook: None
) -> None:
    """With the CRD ctxmesh ships today (no CEL rules) the webhook is the one that refuses."""
    edit = (
        '[{"op":"remove","path":"/spec/human/scores/1"},'
        '{"op":"add","path":"/spec/human/scores/-","value":{"name":"thumbs"}}]'
    )
    install_crd(control_plane, platform_today_crd())
    try:
        user.run("kubectl apply -f -", store("support-feedback", valid_spec()))
        step = user.run(f"kubectl patch fs support-feedback --type=json -p '{edit}'")
    finally:
        install_crd(control_plane, shipped_crd())
    assert step.printed == failed(
        'Warning: score "tone" removed from human: the gateway rejects "tone" (422) from now on\n'
        'The FeedbackStore "support-feedback" is invalid: spec.human.scores[1].name: '
        'Duplicate value: "thumbs": human score names must be unique '
        "(first declared at spec.human.scores[0].name)\n"
    )
    stored = user.run("kubectl get fs support-feedback -o jsonpath={.spec.human.scores[*].name}")
    assert stored.stdout == "thumbs tone", "nothing was written"


def test_a_store_in_use_names_its_agents(
    control_plane: ControlPlane, user: User, webhook: None, tmp_path: pathlib.Path
) -> None:
    """The real status writer marks the store InUse; each warning then counts its agents."""
    user.run("kubectl apply -f -", store("support-feedback", valid_spec()))
    writer = WriterProcess(control_plane, tmp_path, "changes", user.namespace)
    try:
        writer.started().wait_log("in-use protection on: watching AgentDeployments")
        agents = Agents(control_plane, user.namespace)
        agents.create("support-agent", "support-feedback")
        agents.create("billing-agent", "support-feedback")
        stores = Stores(control_plane, user.namespace)
        eventually(
            lambda: (
                (c := stores.condition("support-feedback", "InUse"))
                and "billing-agent" in c["message"]
            ),
            what="InUse names both agents",
        )
    finally:
        writer.kill()
    spec = valid_spec()
    remove_tone(spec)
    step = user.run("kubectl apply -f -", store("support-feedback", spec))
    assert step.printed == succeeded(
        f"{GROUP_KIND}/support-feedback configured\n",
        'Warning: FeedbackStore "support-feedback" is in use by 2 AgentDeployments: '
        "billing-agent, support-agent\n"
        'Warning: score "tone" removed from human: the gateway rejects "tone" (422) from now on; '
        "used by 2 AgentDeployments\n",
    )
    print(step.console())


def test_reordering_alone_is_no_change(user: User, webhook: None) -> None:
    spec = copy.deepcopy(valid_spec())
    user.run("kubectl apply -f -", store("order", spec))
    reorder(spec)
    step = user.run("kubectl apply -f -", store("order", spec))
    assert step.printed == succeeded(f"{GROUP_KIND}/order configured\n")
