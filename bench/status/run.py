"""Status-writer benchmark: 2,000 FeedbackStores (10% invalid) in the API-server emulator.

Measures, with the real console script in its own process against the
emulator in this one:
1. cold start: time from launch to every object carrying the right condition,
   and the requests it took (target: one list + one write per object);
2. warm start: a second writer against the now up-to-date cluster (target: one
   list, zero writes);
3. change latency: 100 single-object spec changes, one at a time, each timed
   until its condition shows the new generation (target: p99 <= 1 s);
and, in the same run, two baselines to compare against: a one-thread
"list + apply each" loop (bench/status/baseline.py) and the round trip of a
single status apply.

    python bench/status/run.py [--objects 2000] [--changes 100] [--workers 4]
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.support.emulator import ApiServerEmulator  # noqa: E402
from tests.support.status_writer import fs, up_to_date  # noqa: E402

SCRIPT = str(Path(sys.executable).with_name("feedbackstore-webhook"))
NAMESPACES = [f"team-{i:02d}" for i in range(20)]
VALID = {"human": {"scores": [{"name": "thumbs", "dataType": "BOOLEAN"}]}}
INVALID = {"human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}


def seed(emu: ApiServerEmulator, count: int) -> None:
    for i in range(count):
        spec = INVALID if i % 10 == 0 else VALID
        body = fs(f"store-{i:05d}", copy.deepcopy(spec))
        emu.create(NAMESPACES[i % len(NAMESPACES)], body)


def request_counts(emu: ApiServerEmulator) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for r in emu.requests:
        if "/leases" in r.path:
            counts["lease"] += 1
        elif r.path.endswith("/events"):
            counts["event"] += 1
        elif r.method == "PATCH" and r.path.endswith("/status"):
            counts["status_write"] += 1
        elif r.method == "GET" and r.query.get("watch") == "true":
            counts["watch"] += 1
        elif r.method == "GET" and r.path.endswith("/feedbackstores"):
            counts["list"] += 1
        else:
            counts[f"other {r.method} {r.path}"] += 1
    return dict(counts)


def all_correct(emu: ApiServerEmulator) -> bool:
    return all(up_to_date(o) for o in emu.objects())


def successful_writes(emu: ApiServerEmulator) -> int:
    return sum(
        1
        for r in emu.requests
        if r.method == "PATCH" and r.path.endswith("/status") and r.status == 200
    )


def first_list_seen(emu: ApiServerEmulator) -> bool:
    return any(r.path.endswith("/feedbackstores") and "watch" not in r.query for r in emu.requests)


def launch(
    emu: ApiServerEmulator, workdir: Path, name: str, workers: int, log_level: str = "warning"
) -> subprocess.Popen[bytes]:
    kubeconfig = emu.write_kubeconfig(workdir / "kubeconfig")
    log = (workdir / f"{name}.log").open("wb")
    return subprocess.Popen(
        [
            SCRIPT,
            "status-writer",
            "--kubeconfig",
            str(kubeconfig),
            "--lease-namespace",
            "bench",
            "--metrics-port",
            "0",
            "--metrics-host",
            "127.0.0.1",
            "--workers",
            str(workers),
            "--log-level",
            log_level,
        ],
        stderr=log,
        env={"PATH": str(Path(sys.executable).parent), "POD_NAME": name},
    )


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    return process.wait(30)


def cold_start(emu: ApiServerEmulator, workdir: Path, count: int, workers: int) -> dict[str, Any]:
    emu.reset_requests()
    started = time.perf_counter()
    process = launch(emu, workdir, "writer-cold", workers)
    emu.eventually(lambda: first_list_seen(emu), timeout=60, interval=0.01)
    listed = time.perf_counter()
    # Poll cheaply (a request count) first, then check every object once.
    emu.eventually(lambda: successful_writes(emu) >= count, timeout=600, interval=0.02)
    emu.eventually(lambda: all_correct(emu), timeout=60, interval=0.05)
    done = time.perf_counter()
    time.sleep(1.0)  # let stragglers (duplicate writes, events) show up in the counts
    return {
        "process": process,
        "seconds": done - started,
        "process_start_seconds": listed - started,
        "from_first_list_seconds": done - listed,
        "requests": request_counts(emu),
    }


def warm_start(
    emu: ApiServerEmulator, workdir: Path, workers: int, log_level: str
) -> dict[str, Any]:
    emu.reset_requests()
    started = time.perf_counter()
    process = launch(emu, workdir, "writer-warm", workers, log_level)

    def led() -> bool:
        leases = emu.leases("bench")
        holder = leases[0]["spec"].get("holderIdentity", "") if leases else ""
        return str(holder).startswith("writer-warm")

    emu.eventually(led, timeout=60, interval=0.05)
    to_leader = time.perf_counter() - started
    time.sleep(3.0)  # every cached object is reconciled within milliseconds of leading
    return {"process": process, "seconds_to_leader": to_leader, "requests": request_counts(emu)}


def reflected(emu: ApiServerEmulator, namespace: str, name: str, generation: int) -> bool:
    obj = emu.get(namespace, name)
    return obj is not None and obj["metadata"]["generation"] == generation and up_to_date(obj)


def flip(obj: dict[str, Any]) -> None:
    obj["spec"] = copy.deepcopy(INVALID if obj["spec"] == VALID else VALID)


def change_latency(
    emu: ApiServerEmulator, changes: int, rng: random.Random
) -> list[tuple[float, str]]:
    """Seconds from a spec change to its condition (and which object), one change at a time."""
    targets = [o["metadata"] for o in emu.objects()]
    latencies = []
    for _ in range(changes):
        target = rng.choice(targets)
        namespace, name = target["namespace"], target["name"]
        started = time.perf_counter()
        generation = emu.update(namespace, name, flip)["metadata"]["generation"]
        emu.eventually(
            lambda n=namespace, m=name, g=generation: reflected(emu, n, m, g),
            timeout=30,
            interval=0.002,
        )
        at = datetime.fromtimestamp(time.time() - (time.perf_counter() - started), UTC)
        latencies.append((time.perf_counter() - started, f"{namespace}/{name} at {at:%H:%M:%S.%f}"))
        time.sleep(0.05)
    return latencies


def baseline(emu: ApiServerEmulator, count: int, samples: int) -> dict[str, Any]:
    """Clear every condition, then run bench/status/baseline.py in its own process."""
    for obj in emu.objects():
        meta = obj["metadata"]
        emu.update(meta["namespace"], meta["name"], lambda o: o.pop("status", None))
    output = subprocess.run(
        [sys.executable, str(ROOT / "bench/status/baseline.py"), emu.url, str(samples)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, Any] = json.loads(output.stdout)
    assert result["writes"] == count, result
    assert all_correct(emu)
    return result


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--changes", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--writer-log-level", default="warning")
    parser.add_argument("--keep-logs", metavar="DIR", help="copy the writers' logs here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with ApiServerEmulator(bookmark_interval=1.0) as emu, tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        seed(emu, args.objects)
        invalid = sum(1 for o in emu.objects() if o["spec"] == INVALID)
        cold = cold_start(emu, workdir, args.objects, args.workers)
        assert stop(cold["process"]) == 0
        warm = warm_start(emu, workdir, args.workers, args.writer_log_level)
        changed = change_latency(emu, args.changes, rng)
        latencies = [seconds for seconds, _ in changed]
        assert stop(warm["process"]) == 0
        if args.keep_logs:
            for log in workdir.glob("*.log"):
                shutil.copy(log, args.keep_logs)
        base = baseline(emu, args.objects, args.changes)

    single = base["single_apply_seconds"]
    report = {
        "objects": args.objects,
        "invalid": invalid,
        "workers": args.workers,
        "cold_start_seconds": round(cold["seconds"], 3),
        "cold_start_process_start_seconds": round(cold["process_start_seconds"], 3),
        "cold_start_from_first_list_seconds": round(cold["from_first_list_seconds"], 3),
        "cold_start_requests": cold["requests"],
        "baseline_list_and_apply_seconds": round(base["seconds"], 3),
        "cold_from_first_list_vs_baseline": round(
            cold["from_first_list_seconds"] / base["seconds"], 2
        ),
        "warm_start_seconds_to_leader": round(warm["seconds_to_leader"], 3),
        "warm_start_requests": warm["requests"],
        "change_latency_ms": {
            "p50": ms(statistics.median(latencies)),
            "p95": ms(percentile(latencies, 0.95)),
            "p99": ms(percentile(latencies, 0.99)),
            "max": ms(max(latencies)),
        },
        "slowest_changes": [
            {"index": changed.index(c), "object": c[1], "ms": ms(c[0])}
            for c in sorted(changed, reverse=True)[:3]
        ],
        "baseline_single_apply_ms": {
            "p50": ms(statistics.median(single)),
            "p99": ms(percentile(single, 0.99)),
        },
        "change_p99_vs_single_apply_p99": round(
            percentile(latencies, 0.99) / percentile(single, 0.99), 2
        ),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
