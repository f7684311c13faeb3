"""The writer's cache keeps what planning reads and nothing it never reads (managedFields)."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import orjson

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


def test_a_get_is_the_callers_own_changing_it_changes_nothing_cached() -> None:
    cache = ObjectCache()
    cache.put(("ns", "a"), store("a", "1"))
    read = cache.get(("ns", "a"))
    assert read is not None
    read["spec"]["human"]["scores"].clear()
    read["metadata"]["resourceVersion"] = "9"
    assert cache.get(("ns", "a")) == without_managed_fields(store("a", "1"))
    assert not cache.put_if_unchanged(("ns", "a"), "9", store("a", "10"))


def test_the_cache_holds_an_object_in_about_its_jsons_length() -> None:
    """Decoded, an object is several times its JSON (dicts, strings); a cache of every object of
    a kind, for as long as its owner runs, keeps the JSON."""
    count = 500
    encoded = [orjson.dumps(store(f"s-{i:04d}", str(i))) for i in range(count)]
    kept = sum(len(orjson.dumps(without_managed_fields(orjson.loads(e)))) for e in encoded)
    keys = [("ns", f"s-{i:04d}") for i in range(count)]
    cache = ObjectCache()
    gc.collect()
    tracemalloc.start()
    try:
        for key, body in zip(keys, encoded, strict=True):
            cache.put(key, orjson.loads(body))  # decoded, then let go
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Per object besides its JSON: a bytes object's header, a slot in the cache's table.
    assert held <= kept + 150 * count, f"{held / count:.0f} B per object, JSON {kept / count:.0f}"
