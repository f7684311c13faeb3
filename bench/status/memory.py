"""The status writer's Python heap per store, by the line that allocated what it still holds.

The writer (the same `StatusController` the console script runs) runs in this process under
tracemalloc; the API-server emulator runs in a child process, so every traced byte is the
writer's. N FeedbackStores in 20 namespaces, every other one invalid (as
`bench/controlplane/writer.py` seeds them), no condition yet; the writer starts unthrottled and
converges, then, once every write's echo has come back through the watch:

1. the heap it holds, per store, by the line that allocated it (the top lines);
2. the peak of its heap while it converged (the list and the writes), per store;
3. one cached store's size, part by part (`sys.getsizeof` of each container and leaf).

    python bench/status/memory.py [--objects 2000] [--top 15]

The real server's objects are larger (its `managedFields`, its defaults): the real figures come
from `bench/controlplane/writer.py`; this one says where the bytes are.
"""

from __future__ import annotations

import argparse
import gc
import pathlib
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from kubernetes import config as kube_config  # noqa: E402

from tests.support.status_writer import NS, fast_settings  # noqa: E402
from webhook.status.controller import StatusController  # noqa: E402

NAMESPACES = [f"team-{i:02d}" for i in range(20)]
DEADLINE = 600.0

# The child: seeds the emulator, writes a kubeconfig, serves until its stdin closes.
EMULATOR = """
import sys
from tests.support.emulator import ApiServerEmulator
from tests.support.stores import INVALID, VALID, fs
count, kubeconfig, namespaces = int(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
emu = ApiServerEmulator().start()
for i in range(count):
    emu.create(namespaces[i % len(namespaces)], fs(f"store-{i:05d}", INVALID if i % 2 else VALID))
emu.write_kubeconfig(kubeconfig)
print("ready", flush=True)
sys.stdin.read()
emu.stop()
"""


def converged(controller: StatusController, count: int) -> bool:
    """Every store cached with our Validated condition at its generation."""
    keys = controller.cache.snapshot()
    if len(keys) < count:
        return False
    for key in keys:
        obj = controller.cache.get(key) or {}
        generation = obj.get("metadata", {}).get("generation")
        conditions = (obj.get("status") or {}).get("conditions") or []
        validated = [c for c in conditions if c.get("type") == "Validated"]
        if not validated or validated[0].get("observedGeneration") != generation:
            return False
    return True


def deep_size(value: object) -> int:
    """Bytes of a decoded JSON value: each container and each leaf (shared ones counted anew)."""
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        return size + sum(deep_size(k) + deep_size(v) for k, v in value.items())
    if isinstance(value, list):
        return size + sum(deep_size(item) for item in value)
    return size


def parts(obj: dict[str, Any]) -> dict[str, int]:
    metadata = obj.get("metadata") or {}
    sizes = {f"metadata.{name}": deep_size(value) for name, value in metadata.items()}
    sizes["metadata (its dict)"] = sys.getsizeof(metadata)
    for name, value in obj.items():
        if name != "metadata":
            sizes[name] = deep_size(value)
    sizes["(the object's dict)"] = sys.getsizeof(obj)
    return sizes


def where(frame: tracemalloc.Frame) -> str:
    path = pathlib.Path(frame.filename)
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path.name
    return f"{shown}:{frame.lineno}"


def held_by_line(
    after: tracemalloc.Snapshot, before: tracemalloc.Snapshot, count: int, top: int
) -> None:
    """What the writer allocated since before it started and still holds, by line."""
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    stats = after.filter_traces(ignore).compare_to(before.filter_traces(ignore), "lineno")
    total = sum(stat.size_diff for stat in stats)
    print("\n| held, by the line that allocated it | per store | blocks |\n|---|---|---|")
    for stat in sorted(stats, key=lambda stat: -stat.size_diff)[:top]:
        line, size = where(stat.traceback[0]), stat.size_diff / count
        print(f"| `{line}` | {size:.0f} B | {stat.count_diff:,} |")
    print(f"| **all** | **{total / count / 1024:.2f} KiB** | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=2000)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        kubeconfig = pathlib.Path(tmp) / "kubeconfig"
        seed = [str(args.objects), str(kubeconfig), ",".join(NAMESPACES)]
        child = subprocess.Popen(
            [sys.executable, "-c", EMULATOR, *seed],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT,
        )  # fmt: skip
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == b"ready", "the emulator did not start"
            measure(kubeconfig, args.objects, args.top)
        finally:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(30)


def measure(kubeconfig: pathlib.Path, count: int, top: int) -> None:
    api_client = kube_config.new_client_from_config(str(kubeconfig))
    settings = fast_settings(qps=0.0, workers=4, lease_namespace=NS, resync_seconds=3600.0)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    controller = StatusController(api_client, settings)
    controller.start()
    started = time.monotonic()
    try:
        while not converged(controller, count):
            if time.monotonic() - started > DEADLINE:
                raise RuntimeError("not converged")
            time.sleep(0.5)
        seconds = time.monotonic() - started
        time.sleep(3.0)  # the last writes' echoes through the watch
        gc.collect()
        peak = tracemalloc.get_traced_memory()[1]
        after = tracemalloc.take_snapshot()
        baseline = sum(stat.size for stat in before.statistics("filename"))
        print(f"{count:,} stores, converged in {seconds:.1f} s (unthrottled, emulator)")
        print(f"peak heap while converging: {(peak - baseline) / count / 1024:.2f} KiB per store")
        held_by_line(after, before, count, top)
        key = next(k for k in controller.cache.snapshot() if int(k[1][-5:]) % 2)
        sizes = parts(controller.cache.get(key) or {})
        print(f"\n| one cached invalid store, {key[0]}/{key[1]} | bytes |\n|---|---|")
        for name, size in sorted(sizes.items(), key=lambda item: -item[1]):
            print(f"| {name} | {size} |")
        print(f"| **all** | **{sum(sizes.values())}** |")
        encoded = orjson.dumps(controller.cache.get(key))
        print(f"| as JSON (orjson) | {len(encoded)} ({sys.getsizeof(encoded)} as bytes) |")
    finally:
        controller.stop()
        tracemalloc.stop()
        api_client.close()


if __name__ == "__main__":
    main()
