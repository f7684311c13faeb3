"""Baseline for the status-writer benchmark: the least a writer could do.

One thread, the same official client: one list, then one server-side apply of
the `Validated` condition per object, back to back, with no watch, queue,
Lease or events. Then SAMPLES round trips of a single status apply, timed one
by one: the floor under the latency of reflecting a change.

    python bench/status/baseline.py URL [SAMPLES]

prints one JSON line: {"seconds": ..., "writes": ..., "single_apply_seconds": [...]}.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kubernetes import client

from webhook.kube.timestamps import utc_now
from webhook.status.kubeapi import FeedbackStoreApi
from webhook.status.validated import apply_configuration, plan_status


def apply(api: FeedbackStoreApi, obj: dict[str, Any], condition: dict[str, Any]) -> None:
    meta = obj["metadata"]
    api.apply_status(meta["namespace"], meta["name"], apply_configuration(obj, condition))


def main(url: str, samples: int) -> None:
    api = FeedbackStoreApi(client.ApiClient(client.Configuration(host=url)))
    started = time.perf_counter()
    items = api.list().items
    writes = 0
    for obj in items:
        plan = plan_status(obj, utc_now())
        if plan.needed:
            apply(api, obj, plan.condition)
            writes += 1
    seconds = time.perf_counter() - started
    probe = items[0]
    single = []
    for i in range(samples):
        condition = {**plan_status(probe, utc_now()).condition, "message": f"probe {i}"}
        begun = time.perf_counter()
        apply(api, probe, condition)
        single.append(time.perf_counter() - begun)
    apply(api, probe, plan_status(probe, utc_now()).condition)  # leave it correct
    print(json.dumps({"seconds": seconds, "writes": writes, "single_apply_seconds": single}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100)
