"""The writer's cache keeps what planning reads and nothing it never reads (managedFields)."""

from __future__ import annotations

from typing import Any

from webhook.kube.cache import ObjectCache


def store(name: str, version: str) -> dict[str, Any]:
    return {
        "metadata": {
            "namespace": "ns",
            "name": name,
            "resourceVersion": version,
            "generation": 2,
            "finalizers": ["agents.ctxmesh.ai/in-use-protection"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {}}],
        },
        "spec": {"human": {"scores": [{"name": "thumbs"}]}},
        "status": {"conditions": [{"type": "Validated", "status": "True"}]},
    }


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    kept = {**obj, "metadata": dict(obj["metadata"])}
    del kept["metadata"]["managedFields"]
    return kept


def test_every_way_in_drops_managed_fields_and_keeps_the_rest() -> None:
    cache = ObjectCache()
    listed, watched, written = store("a", "1"), store("b", "2"), store("b", "3")
    expected = [without_managed_fields(o) for o in (listed, watched, written)]
    cache.put(("ns", "a"), listed)
    cache.put(("ns", "b"), watched)
    assert cache.put_if_unchanged(("ns", "b"), "2", written)
    assert cache.get(("ns", "a")) == expected[0]
    assert cache.get(("ns", "b")) == expected[2]


def test_the_object_handed_in_stays_whole_for_its_caller() -> None:
    """A write's answer is cached and then read on by the writer (its finalizers, its owners)."""
    cache = ObjectCache()
    cache.put(("ns", "a"), store("a", "1"))
    answer = store("a", "2")
    assert cache.put_if_unchanged(("ns", "a"), "1", answer)
    assert answer == store("a", "2")
