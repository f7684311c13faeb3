"""Status writer against the real kube-apiserver: cold start, warm start, memory, requests by kind.

For each size (default 2,000 then 10,000 FeedbackStores, half of them invalid:
a score name declared twice), on a fresh etcd + kube-apiserver in a temp dir
with the CRD as the platform ships it today (no CEL, so invalid stores can be
created):

1. set-up, not measured: the stores are created 8 at a time in 20 namespaces;
2. cold start: the real console script `feedbackstore-webhook status-writer`
   is launched against the server; the time from launch until the server has
   answered the last status write that was due (the audit log's
   `stageTimestamp`), then one list checks that every object carries the
   condition its verdict calls for at its generation; the writer's requests by
   kind from the server's audit log (every request with the writer's user
   agent), and its peak resident memory (VmHWM);
3. warm start: the first writer gets SIGTERM (it releases the Lease), a second
   starts against the now up-to-date cluster; its requests from launch until
   5 s after it holds the Lease (target: zero status writes);
4. baseline, same run, same server, same objects: every condition is removed
   (not measured), then the bench process lists once and applies each
   condition with the same client and the same number of threads as the
   writer's workers: no watch, queue, Lease or Events; writer / baseline is
   the price of everything else.

    python bench/controlplane/writer.py [--objects 2000 10000] [--workers 4]

With more than one size, the cold writer's memory per store above the first size's is printed
last (`--objects 1 1000 4000`: above an all but idle writer).
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import orjson
from kubernetes import client as k8s
from plane import (
    CONSOLE_SCRIPT,
    WRITER_AGENT,
    AuditTail,
    admin,
    code_env,
    count_kinds,
    cpu_seconds,
    create_all,
    create_namespaces,
    list_all,
    list_body,
    load_average,
    proc_status,
    snapshot,
    timestamp,
)

from tests.kube.cluster import (
    GROUP,
    PLURAL,
    VERSION,
    feedbackstore,
    install_crd,
    platform_today_crd,
)
from tests.kube.controlplane import ControlPlane, binaries, running
from tests.support.status_writer import expected_condition, up_to_date
from webhook.install import FIELD_MANAGER
from webhook.kube.timestamps import utc_now
from webhook.status.kubeapi import APPLY_PATCH
from webhook.status.validated import apply_configuration, plan_status

NAMESPACES = [f"team-{i:02d}" for i in range(20)]
LEASE_NAMESPACE = "bench"
VALID = {"human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}]}}
INVALID = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
WARM_OBSERVATION = 5.0
# What a writer sends while it works through its queue (status applies and the Events after).
WRITING_KINDS = ("feedbackstores/status", "events")
DEADLINE = 900.0  # seconds any one wait may take before the run is declared failed
# Fewer status writes answered 200 than stores, and none for this long: ask the server (a list).
QUIET_SECONDS = 15.0


def stores(count: int) -> list[dict[str, Any]]:
    return [
        feedbackstore(
            f"store-{i:05d}",
            INVALID if i % 2 else VALID,
            namespace=NAMESPACES[i % len(NAMESPACES)],
        )
        for i in range(count)
    ]


def launch(
    plane: ControlPlane, workdir: pathlib.Path, name: str, workers: int, env: dict[str, str],
    log_level: str,
) -> subprocess.Popen[bytes]:  # fmt: skip
    env = {**env, "POD_NAME": name}
    with (workdir / f"{name}.log").open("wb") as log:
        return subprocess.Popen(
            [CONSOLE_SCRIPT, "status-writer", "--kubeconfig", str(plane.kubeconfig),
             "--lease-namespace", LEASE_NAMESPACE, "--metrics-port", "0",
             "--metrics-host", "127.0.0.1", "--workers", str(workers),
             "--log-level", log_level],
            stderr=log, stdout=subprocess.DEVNULL, env=env,
        )  # fmt: skip


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(60)


def is_status_write(event: dict[str, Any]) -> bool:
    ref = event.get("objectRef") or {}
    return event["verb"] == "patch" and ref.get("subresource") == "status"


def ok(event: dict[str, Any]) -> bool:
    return (event.get("responseStatus") or {}).get("code") == 200


class WriterRequests:
    """The writer's requests as the server logged them, gathered as the log grows."""

    def __init__(self, tail: AuditTail) -> None:
        self.tail = tail
        self.events: list[dict[str, Any]] = []
        self.others = 0

    def poll(self) -> None:
        for event in self.tail.new():
            if event.get("userAgent", "").startswith(WRITER_AGENT):
                self.events.append(event)
            else:
                self.others += 1

    def writes_ok(self) -> list[dict[str, Any]]:
        return [e for e in self.events if is_status_write(e) and ok(e)]

    def lease_won(self) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["verb"] in ("create", "update")
            and (e.get("objectRef") or {}).get("resource") == "leases"
            and (e.get("responseStatus") or {}).get("code") in (200, 201)
        ]

    def first_list(self) -> dict[str, Any] | None:
        return next((e for e in self.events if e["verb"] == "list"), None)


def wait_for(
    check: Any, what: str, process: subprocess.Popen[bytes], interval: float = 0.2
) -> None:
    deadline = time.monotonic() + DEADLINE
    while not check():
        if process.poll() is not None:
            raise RuntimeError(f"status writer exited ({process.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {DEADLINE:.0f} s")
        time.sleep(interval)


def stale(plane: ControlPlane) -> tuple[int, int]:
    items, size = list_all(plane)
    # Pinned by name from the specs as created: the server's copy carries the CRD's defaults.
    pins = {obj["metadata"]["name"]: expected_condition(obj) for obj in stores(len(items))}
    return sum(1 for obj in items if not up_to_date(obj, pins)), size


def cold_start(plane: ControlPlane, workdir: pathlib.Path, tail: AuditTail, count: int,
               workers: int, env: dict[str, str], log_level: str,
               ) -> tuple[dict[str, Any], subprocess.Popen[bytes]]:  # fmt: skip
    tail.skip_to_end()
    seen = WriterRequests(tail)
    launched = time.time()
    process = launch(plane, workdir, "writer-cold", workers, env, log_level)

    quiet = {"writes": 0, "since": time.monotonic()}

    def all_written() -> bool:
        """Every store written with a 200, or, once the writes stop, every store up to date: a
        write whose client gave up (the fence's timeout) may still be applied while the audit log
        says 504 (seen on kube-apiserver v1.37.2), and the writer then finds that store up to date
        and rightly writes it no more, so its 200s never reach `count`."""
        seen.poll()
        written = len(seen.writes_ok())
        if written >= count:
            return True
        if written != quiet["writes"]:
            quiet.update(writes=written, since=time.monotonic())
            return False
        if time.monotonic() - quiet["since"] < QUIET_SECONDS:
            return False
        quiet["since"] = time.monotonic()
        return stale(plane)[0] == 0

    wait_for(all_written, "every status written", process)
    writes = [e for e in seen.events if is_status_write(e)]
    last_write = max(timestamp(e["stageTimestamp"]) for e in writes)
    left, list_bytes = stale(plane)
    done = last_write
    if left:  # every write answered but some object still wrong: time it by polling
        wait_for(lambda: stale(plane)[0] == 0, "every condition correct", process, 1.0)
        done = time.time()
    time.sleep(3.0)  # stragglers: Events, Lease renewals, duplicate writes would show up here
    memory = proc_status(process.pid)
    seen.poll()
    first = seen.first_list()
    assert first is not None
    listed = timestamp(first["requestReceivedTimestamp"])
    leading = min(timestamp(e["stageTimestamp"]) for e in seen.lease_won())
    first_write = min(timestamp(e["requestReceivedTimestamp"]) for e in seen.writes_ok())
    return {
        "seconds": done - launched,
        "process_start_seconds": listed - launched,
        "from_first_list_seconds": done - listed,
        "list_to_leading_seconds": leading - listed,
        "writing_seconds": done - first_write,
        "cpu_seconds": cpu_seconds(process.pid),
        "observed_seconds": time.time() - launched,
        "requests": count_kinds(seen.events),
        "status_writes_ok": len(seen.writes_ok()),
        "status_writes_not_ok": sum(1 for e in writes if not ok(e)),
        "peak_rss_mib": memory["VmHWM"] / 1024,
        "rss_mib": memory["VmRSS"] / 1024,
        "list_bytes": list_bytes,
        "seen": seen,
    }, process


def cache_footprint(body: bytes) -> dict[str, float]:
    """Python heap held by a list's items as the writer decodes them (orjson), in MiB, with
    and without `metadata.managedFields` (which the writer never reads)."""
    gc.collect()
    tracemalloc.start()
    items = orjson.loads(body)["items"]
    whole = tracemalloc.get_traced_memory()[0]
    for item in items:
        item["metadata"].pop("managedFields", None)
    gc.collect()
    stripped = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del items
    return {"items_mib": whole / 2**20, "without_managed_fields_mib": stripped / 2**20}


def lease_holder(plane: ControlPlane) -> str:
    api = k8s.CustomObjectsApi(admin(plane))
    try:
        lease = api.get_namespaced_custom_object(
            "coordination.k8s.io", "v1", LEASE_NAMESPACE, "leases", "feedbackstore-status-writer"
        )
    except k8s.ApiException:
        return ""
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def warm_start(plane: ControlPlane, workdir: pathlib.Path, tail: AuditTail,
               workers: int, env: dict[str, str], log_level: str) -> dict[str, Any]:  # fmt: skip
    seen = WriterRequests(tail)
    launched = time.time()
    process = launch(plane, workdir, "writer-warm", workers, env, log_level)
    wait_for(lambda: lease_holder(plane).startswith("writer-warm_"), "leading", process)
    leading = time.time() - launched
    time.sleep(WARM_OBSERVATION)
    seen.poll()
    memory = proc_status(process.pid)
    code = stop(process)
    return {
        "seconds_to_leader": leading,
        "observed_seconds": time.time() - launched,
        "requests": count_kinds(seen.events),
        "status_writes": sum(1 for e in seen.events if is_status_write(e)),
        "peak_rss_mib": memory["VmHWM"] / 1024,
        "exit": code,
    }


def apply_status(
    api: k8s.CustomObjectsApi,
    obj: dict[str, Any],
    body: dict[str, Any],
    content_type: str = APPLY_PATCH,
    manager: str = FIELD_MANAGER,
) -> None:
    meta = obj["metadata"]
    response = api.patch_namespaced_custom_object_status(
        GROUP, VERSION, meta["namespace"], PLURAL, meta["name"], body,
        field_manager=manager, force=True if content_type == APPLY_PATCH else None,
        _content_type=content_type, _preload_content=False,
    )  # fmt: skip
    response.drain_conn()
    response.release_conn()


def clear_conditions(plane: ControlPlane, threads: int) -> None:
    """Drop every condition with a merge patch (the writer's managed fields go with them)."""
    api = k8s.CustomObjectsApi(admin(plane))
    items, _ = list_all(plane)
    body = {"status": {"conditions": None}}

    def clear(obj: dict[str, Any]) -> None:
        apply_status(api, obj, body, "application/merge-patch+json", "bench-clear")

    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(clear, items):
            pass
    left = sum(1 for obj in list_all(plane)[0] if (obj.get("status") or {}).get("conditions"))
    assert left == 0, f"{left} conditions survived clearing"


def baseline(plane: ControlPlane, workers: int) -> dict[str, Any]:
    """One list, then every due condition applied by `workers` threads: the least a writer does."""
    api = k8s.CustomObjectsApi(admin(plane))
    started = time.perf_counter()
    response = api.list_cluster_custom_object(GROUP, VERSION, PLURAL, _preload_content=False)
    items = json.loads(response.data)["items"]
    response.drain_conn()
    response.release_conn()
    listed = time.perf_counter()

    def write(obj: dict[str, Any]) -> int:
        plan = plan_status(obj, utc_now())
        if not plan.needed:
            return 0
        apply_status(api, obj, apply_configuration(obj, plan.condition))
        return 1

    with ThreadPoolExecutor(workers) as pool:
        writes = sum(pool.map(write, items))
    seconds = time.perf_counter() - started
    left, _ = stale(plane)
    assert left == 0, f"baseline left {left} objects stale"
    return {"seconds": seconds, "writing_seconds": seconds - (listed - started), "writes": writes}


def keep_logs(keep: pathlib.Path, count: int, workdir: pathlib.Path, plane: ControlPlane) -> None:
    """Copies the writers' logs (as far as they got) and the server's audit log."""
    keep.mkdir(parents=True, exist_ok=True)
    for log in workdir.glob("writer-*.log"):
        (keep / f"{count}-{log.name}").write_bytes(log.read_bytes())
    (keep / f"{count}-audit.log").write_bytes(plane.audit_log.read_bytes())


def run_size(bin_dir: pathlib.Path, count: int, workers: int, keep: pathlib.Path | None,
             env: dict[str, str], log_level: str) -> dict[str, Any]:  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as tmp:
        workdir = pathlib.Path(tmp)
        with running(bin_dir, workdir / "plane") as plane:
            install_crd(plane, platform_today_crd())
            create_namespaces(plane, [LEASE_NAMESPACE, *NAMESPACES])
            begun = time.perf_counter()
            create_all(plane, stores(count))
            seeded = time.perf_counter() - begun
            tail = AuditTail(plane.audit_log)
            load_before = load_average()
            try:
                cold, process = cold_start(plane, workdir, tail, count, workers, env, log_level)
                cold_exit = stop(process)
                cold["seen"].poll()  # its Lease release, and its watch ending
                cold["requests_with_shutdown"] = count_kinds(cold.pop("seen").events)
                cold["exit"] = cold_exit
                warm = warm_start(plane, workdir, tail, workers, env, log_level)
                footprint = cache_footprint(list_body(plane))
                clear_conditions(plane, 8)
                base = baseline(plane, workers)
                load_after = load_average()
            finally:  # a run that fails is the one whose logs are wanted most
                if keep is not None:
                    keep_logs(keep, count, workdir, plane)
    return {
        "objects": count,
        "invalid": count // 2,
        "workers": workers,
        "seed_seconds": seeded,
        "cold": cold,
        "warm": warm,
        "footprint": footprint,
        "baseline": base,
        "load_before": load_before,
        "load_after": load_after,
    }


def report(result: dict[str, Any]) -> None:
    cold, warm, base = result["cold"], result["warm"], result["baseline"]
    foot = result["footprint"]
    after_list, writing = cold["from_first_list_seconds"], cold["writing_seconds"]
    writer_requests = sum(
        n for kind, n in cold["requests"].items() if kind.split()[1] in WRITING_KINDS
    )
    rate = writer_requests / writing
    base_rate = base["writes"] / base["writing_seconds"]
    rows = [
        ("objects (invalid)", f"{result['objects']:,} ({result['invalid']:,})"),
        ("set-up: created 8 at a time", f"{result['seed_seconds']:.1f} s"),
        ("cold start: launch → every condition correct", f"{cold['seconds']:.2f} s"),
        ("  of which start-up (until its list arrives)", f"{cold['process_start_seconds']:.2f} s"),
        ("  of which list → last write answered", f"{after_list:.2f} s"),
        ("  of which list → holding the Lease", f"{cold['list_to_leading_seconds']:.2f} s"),
        ("  first write sent → last write answered", f"{cold['writing_seconds']:.2f} s"),
        ("baseline: list + apply each, same threads", f"{base['seconds']:.2f} s"),
        ("  of which first write → last write", f"{base['writing_seconds']:.2f} s"),
        ("  baseline writes", f"{base['writes']:,}"),
        ("ratio writer / baseline, list → done", f"{after_list / base['seconds']:.2f}"),
        ("ratio writer / baseline, writing", f"{writing / base['writing_seconds']:.2f}"),
        ("writer requests/s while writing (baseline)", f"{rate:.0f} ({base_rate:.0f})"),
        ("cold writer CPU time (user + system)", f"{cold['cpu_seconds']:.2f} s"),
        ("cold start requests (until 3 s after done)", json.dumps(cold["requests"])),
        ("  status writes answered other than 200", str(cold["status_writes_not_ok"])),
        ("  observed for", f"{cold['observed_seconds']:.1f} s"),
        ("cold writer incl. its shutdown", json.dumps(cold["requests_with_shutdown"])),
        ("cold writer peak RSS (VmHWM)", f"{cold['peak_rss_mib']:.1f} MiB"),
        ("cold writer RSS when done", f"{cold['rss_mib']:.1f} MiB"),
        ("list body (the bench's own list)", f"{cold['list_bytes'] / 2**20:.1f} MiB"),
        ("warm start requests", json.dumps(warm["requests"])),
        ("  status writes", str(warm["status_writes"])),
        ("  launch → holding the Lease", f"{warm['seconds_to_leader']:.2f} s"),
        ("  observed for", f"{warm['observed_seconds']:.1f} s"),
        ("warm writer peak RSS", f"{warm['peak_rss_mib']:.1f} MiB"),
        ("decoded list items, all conditions set", f"{foot['items_mib']:.1f} MiB"),
        ("  the same without managedFields", f"{foot['without_managed_fields_mib']:.1f} MiB"),
        ("exit codes (cold, warm)", f"{cold['exit']}, {warm['exit']}"),
        ("load average before / after", f"{result['load_before']} / {result['load_after']}"),
    ]
    print(f"\n| {result['objects']:,} FeedbackStores | |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    sys.stdout.flush()


def per_store(results: list[dict[str, Any]]) -> None:
    """The cold writer's memory per store, above the smallest size run (`--objects 1 ...`: an
    all but idle writer): peak (VmHWM) and when done (VmRSS)."""
    base = results[0]
    print(f"\n| per store above {base['objects']:,} | peak | when done |\n|---|---|---|")
    for result in results[1:]:
        stores = result["objects"] - base["objects"]
        peak, done = (
            (result["cold"][name] - base["cold"][name]) * 1024 / stores
            for name in ("peak_rss_mib", "rss_mib")
        )
        print(f"| {result['objects']:,} stores | {peak:.1f} KiB | {done:.1f} KiB |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, nargs="+", default=[2000, 10000])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--keep", type=pathlib.Path, help="copy writer logs and audit logs here")
    parser.add_argument(
        "--writer-log-level", default="warning", help="the writers' --log-level (info: each write)"
    )
    parser.add_argument("--json", type=pathlib.Path, help="also write the raw results here")
    parser.add_argument("--ref", default="HEAD", help="commit whose writer is measured")
    parser.add_argument(
        "--working-tree", action="store_true", help="measure the working tree as it is instead"
    )
    args = parser.parse_args()
    bin_dir = binaries()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-writer-code-") as code:
        source = None if args.working_tree else pathlib.Path(code)
        commit = "working tree" if source is None else snapshot(pathlib.Path(code), args.ref)
        print(f"status writer code: {commit}")
        for count in args.objects:
            env = code_env(source)
            result = run_size(bin_dir, count, args.workers, args.keep, env, args.writer_log_level)
            result["code"] = commit
            report(result)
            results.append(result)
    if len(results) > 1:
        per_store(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
