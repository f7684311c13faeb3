"""The doctor lists FeedbackStores through the one pager, and so survives an expired token."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client as k8s

from tests.support.emulator import ApiServerEmulator
from tests.support.status_writer import NS, VALID, fs
from webhook.doctor import cluster


def test_an_expired_continue_token_falls_back_to_one_full_list(
    apiserver: ApiServerEmulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"store-{index}" for index in range(5)]
    for name in names:
        apiserver.create(NS, fs(name, VALID))
    monkeypatch.setattr(cluster, "PAGE_SIZE", 2)
    custom = k8s.CustomObjectsApi(apiserver.api_client())
    listed = custom.list_namespaced_custom_object
    asked: list[tuple[Any, Any]] = []

    def list_compacting_after_the_first_page(*args: Any, **kwargs: Any) -> Any:
        if len(asked) == 1:  # a write, then compaction: the first page's token is too old
            apiserver.update(NS, names[0], lambda o: o["spec"].update(mode="Monitor"))
            apiserver.faults.expire_resource_versions()
        asked.append((kwargs.get("limit"), kwargs.get("_continue")))
        return listed(*args, **kwargs)

    monkeypatch.setattr(
        custom, "list_namespaced_custom_object", list_compacting_after_the_first_page
    )
    stores = cluster._listed(custom, cluster._STORES, NS)
    assert isinstance(stores, list)
    assert sorted(store["metadata"]["name"] for store in stores) == names
    assert len(asked) == 3
    assert asked[0] == (2, None)
    assert asked[1][0] == 2
    assert asked[1][1], "the second page asks after the first page's token"
    assert asked[2] == (None, None), "the fallback is one full list, without limit or token"
