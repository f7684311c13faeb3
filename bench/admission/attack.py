"""Hostile reviews against `serve`: their time, others' latency meanwhile, memory.

For each hostile AdmissionReview, the largest the server decodes (within the body limit,
`--max-body-bytes`, and the bound on JSON values; "both bounds": as many distinct strings as
the bound on values allows, each as long as fills the body), and one refused before decoding:
- **answer**: the time from sending it to reading the answer, on a kept-alive
  connection (median of `--repeat`), beside **parse**, what `orjson.loads` alone
  takes on the same body in this process (the goal: answer <= 100 ms + parse), and
  **decode + verdict**, the server's work on it (decode_review, then decide) in this
  process, best of 3;
- **others p99**: while one client sends the hostile review back to back for
  `--duration` seconds, four others send the small valid review of
  bench/admission/payloads.py; the p99 of their latencies (goal: <= 1 s);
- **peak RSS** of the server while this happened (VmHWM, reset before each
  payload through /proc/PID/clear_refs) and **RSS after**, 2 s after the burst
  (goal: peak <= 128 MiB, and back down after).
Then idle connections: RSS with `--idle` open TLS connections, and after they close.
Then connection floods, each held for the server's whole idle timeout (`--idle-timeout`,
given to `serve`): 300 slowloris (a request head that stops halfway), 1,000 idle TCP (no
handshake begun) and 300 silent TLS (handshake done, no request) connections, while a
client opens a new connection for one small valid review every 0.1 s: how many of those
succeeded within the registration's 5 s, their p99, and how many flood connections the
server closed to make room. `--floods-only` runs these alone.

The server runs pinned to CPU 0 with its defaults (plus any `serve` flags given),
the clients on CPU 1. Run from the repository root:

    python bench/admission/attack.py [--duration 5 --repeat 5] [--max-body-bytes N ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import itertools
import json
import os
import pathlib
import ssl
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import orjson

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import payloads as payload_files  # noqa: E402
import run as load_bench  # noqa: E402

from webhook.admission import decide  # noqa: E402
from webhook.admission.decode import (  # noqa: E402
    MAX_JSON_VALUES,
    BadReviewError,
    decode_review,
    json_values,
)
from webhook.cli.flags import default_of  # noqa: E402
from webhook.server.config import ServerConfig  # noqa: E402

Spec = dict[str, Any]


def largest(fits: Callable[[int], bool], low: int = 1) -> int:
    """The largest n >= `low` with fits(n), for a `fits` true at `low` and monotone."""
    high = max(2 * low, 1)
    while fits(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(middle) else (low, middle)
    return low


def within(body: bytes, limit: int) -> bool:
    return len(body) <= limit and json_values(body) <= MAX_JSON_VALUES


def as_review(spec: Spec) -> bytes:
    return orjson.dumps(payload_files.review(payload_files.store(spec, "hostile", applied=False)))


def fill(make: Callable[[int], Spec], limit: int, *, padded: bool = False) -> bytes:
    """The largest review of `make(n)` (a spec from a count) the server decodes: its body within
    `limit` bytes and MAX_JSON_VALUES values; `padded`: `make`'s spec as it is, with an
    annotation of n bytes filling the body instead."""

    def body(count: int) -> bytes:
        obj = payload_files.store(make(0 if padded else count), "hostile", applied=False)
        if padded:
            obj["metadata"]["annotations"] = {"padding": "x" * count}
        return orjson.dumps(payload_files.review(obj))

    return body(largest(lambda count: within(body(count), limit)))


def fill_both(make: Callable[[list[str]], Spec], limit: int) -> bytes:
    """The largest review of `make(strings)` in both bounds at once: as many distinct strings
    as MAX_JSON_VALUES allows, then each lengthened until the body reaches `limit`."""

    def strings(count: int, extra: int) -> list[str]:
        each, longer = divmod(extra, count)  # hex digits, then x: all distinct
        return [f"{i:x}" + "x" * (each + (i < longer)) for i in range(count)]

    count = largest(lambda n: within(as_review(make(strings(n, 0))), limit))
    extra = largest(lambda e: within(as_review(make(strings(count, e))), limit), low=0)
    return as_review(make(strings(count, extra)))


def worst_within_limits(_: int) -> Spec:
    """Every item at its limit and wrong twice over: the most a verdict can judge."""
    scores = [{"name": "same", "dataType": "CATEGORICAL", "categories": [0] * 64, "x": 1}] * 64
    channels = [{"name": "same", "score": {"name": "same", "categories": [0] * 64}}] * 32
    return {"mode": "Enforce", "human": {"scores": scores}, "external": channels}


HOSTILE: dict[str, Callable[[int], Spec]] = {
    "external: [{}, ...]": lambda n: {"external": [{}] * n},
    "human.scores: [{}, ...]": lambda n: {"human": {"scores": [{}] * n}},
    "categories: [0, ...]": lambda n: {"human": {"scores": [{"name": "a", "categories": [0] * n}]}},
    "unknown keys in spec": lambda n: {f"k{i}": 0 for i in range(n)},
    '[{"a":1}, ...] in spec': lambda n: {"external": [{"a": 1}] * n},
    "two-letter strings": lambda n: {
        "human": {"scores": [{"name": "a", "categories": [f"{i % 256:02x}" for i in range(n)]}]}
    },
    "floats": lambda n: {"human": {"scores": [{"name": "a", "categories": [0.5] * n}]}},
}

# The largest reviews within both bounds: about MAX_JSON_VALUES values and the whole body.
BOTH_BOUNDS: dict[str, Callable[[list[str]], Spec]] = {
    "both bounds: distinct categories": lambda strings: {
        "human": {"scores": [{"name": "a", "categories": strings}]}
    },
    "both bounds: distinct unknown keys": lambda strings: dict.fromkeys(strings, 0),
}


def hostile_bodies(limit: int) -> dict[str, bytes]:
    """Every hostile review, by name: the largest of each kind the server decodes, then one
    it refuses before decoding (over the bound on values, within the body limit)."""
    bodies = {"worst within the limits": fill(worst_within_limits, limit, padded=True)}
    bodies.update({name: fill(make, limit) for name, make in HOSTILE.items()})
    bodies.update({name: fill_both(make, limit) for name, make in BOTH_BOUNDS.items()})
    flood = b'{"request":{"object":{"spec":{"external":[' + b"{}," * (limit // 3 - 20) + b"{}]}}}}"
    bodies["refused: too many values, [{}, ...]"] = flood
    return bodies


_NO_TRIM = """\
import sys
from webhook.cli.main import main
from webhook.server import memory

memory.Trimmer.after = lambda self, body_bytes: None
sys.exit(main(sys.argv[1:]))
"""


def rss(pid: int, field: str = "VmRSS") -> float:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def reset_peak(pid: int) -> None:
    pathlib.Path(f"/proc/{pid}/clear_refs").write_text("5")


async def post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, body: bytes) -> int:
    writer.write(b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body)  # fmt: skip
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))  # fmt: skip
    await reader.readexactly(length)
    return int(head.split(b" ")[1])


async def connect(port: int, context: ssl.SSLContext) -> tuple[Any, Any]:
    return await asyncio.open_connection("127.0.0.1", port, ssl=context)


async def timed(port: int, context: ssl.SSLContext, body: bytes, repeat: int) -> tuple[float, int]:
    reader, writer = await connect(port, context)
    times, status = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        status = await post(reader, writer, body)
        times.append(time.perf_counter() - started)
    writer.close()
    return statistics.median(times), status


async def during(port: int, context: ssl.SSLContext, hostile: bytes, ordinary: bytes,
                 seconds: float) -> list[float]:  # fmt: skip
    stop = time.monotonic() + seconds
    latencies: list[float] = []

    async def attacker() -> None:
        reader, writer = await connect(port, context)
        while time.monotonic() < stop:
            await post(reader, writer, hostile)
        writer.close()

    async def user() -> None:
        reader, writer = await connect(port, context)
        while time.monotonic() < stop:
            started = time.perf_counter()
            await post(reader, writer, ordinary)
            latencies.append(time.perf_counter() - started)
            await asyncio.sleep(0.05)
        writer.close()

    await asyncio.gather(attacker(), *(user() for _ in range(4)))
    return latencies


async def idle(port: int, context: ssl.SSLContext, count: int, pid: int) -> tuple[float, float]:
    connections = []
    for _ in range(count):
        try:
            connections.append(await connect(port, context))
        except (OSError, ssl.SSLError):
            break
    await asyncio.sleep(1)
    held = rss(pid)
    for _, writer in connections:
        writer.close()
    await asyncio.sleep(3)
    return held, rss(pid)


# What kube-apiserver waits for a review before failing the call (the registration's
# timeoutSeconds).
REVIEW_DEADLINE = 5.0
SLOWLORIS_HEAD = b"POST /validate HTTP/1.1\r\nHost: localhost\r\nContent-Ty"


async def tcp_silent(port: int, _: ssl.SSLContext) -> tuple[Any, Any]:
    return await asyncio.open_connection("127.0.0.1", port)


async def tls_silent(port: int, context: ssl.SSLContext) -> tuple[Any, Any]:
    return await connect(port, context)


async def slowloris(port: int, context: ssl.SSLContext) -> tuple[Any, Any]:
    reader, writer = await connect(port, context)
    writer.write(SLOWLORIS_HEAD)
    return reader, writer


FLOODS: dict[str, tuple[int, Callable[[int, ssl.SSLContext], Any]]] = {
    "slowloris (head stops halfway)": (300, slowloris),
    "idle TCP (no handshake begun)": (1000, tcp_silent),
    "silent TLS (no request)": (300, tls_silent),
}


async def flood(port: int, context: ssl.SSLContext, ordinary: bytes, count: int,
                opener: Callable[[int, ssl.SSLContext], Any], seconds: float,
                pid: int) -> str:  # fmt: skip
    """Hold `count` connections of a kind for `seconds` while reviews come on new connections;
    one table row."""
    reset_peak(pid)
    closed = 0

    async def held() -> None:
        nonlocal closed
        try:
            reader, writer = await opener(port, context)
        except (OSError, ssl.SSLError):
            closed += 1
            return
        with contextlib.suppress(OSError, ssl.SSLError, TimeoutError):
            # Short of the server's idle timeout, so only a close to make room is counted.
            await asyncio.wait_for(reader.read(1), seconds - 0.5)
            closed += 1
        writer.close()

    async def review() -> float | None:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(REVIEW_DEADLINE):
                reader, writer = await connect(port, context)
                status = await post(reader, writer, ordinary)
                writer.close()
        except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError):
            return None
        return time.perf_counter() - started if status == 200 else None

    holders = [asyncio.create_task(held()) for _ in range(count)]
    await asyncio.sleep(1)  # all opened, the table full
    reviews = []
    stop = time.monotonic() + seconds - 1
    while time.monotonic() < stop:
        reviews.append(asyncio.create_task(review()))
        await asyncio.sleep(0.1)
    results = await asyncio.gather(*reviews)
    await asyncio.gather(*holders)
    times = sorted(result for result in results if result is not None)
    p99 = statistics.quantiles(times, n=100)[98] if len(times) > 1 else float("nan")
    return (f"| {count:,} | {len(times)} / {len(results)} | {p99 * 1000:.0f} ms "
            f"| {closed:,} | {rss(pid, 'VmHWM'):.1f} MiB |")  # fmt: skip


async def floods(port: int, context: ssl.SSLContext, ordinary: bytes, seconds: float,
                 pid: int) -> None:  # fmt: skip
    print(f"\nconnection floods held {seconds:g} s (the idle timeout), a review on a new "
          "connection every 0.1 s:")  # fmt: skip
    print("| flood | connections | reviews answered / sent | p99 | flood closed to make room "
          "| peak RSS |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for name, (count, opener) in FLOODS.items():
        row = await flood(port, context, ordinary, count, opener, seconds, pid)
        print(f"| {name} {row}")
        await asyncio.sleep(2)


def best_time(run: Callable[[], object]) -> float:
    times = []
    for _ in range(3):
        started = time.perf_counter()
        with contextlib.suppress(BadReviewError):
            run()
        times.append(time.perf_counter() - started)
    return min(times)


def judge(body: bytes) -> object:
    """What the server does with a body, in this process: decode it, then decide."""
    return decide(decode_review(body).request)


async def main(args: argparse.Namespace, serve_flags: list[str]) -> None:
    limit = default_of(ServerConfig, "max_body_bytes")
    idle_timeout = default_of(ServerConfig, "idle_timeout")
    for flag, value in itertools.pairwise(serve_flags):
        if flag == "--max-body-bytes":
            limit = int(value)
        if flag == "--idle-timeout":
            idle_timeout = float(value)
    ordinary = payload_files.payloads()["small-valid"]
    bodies = hostile_bodies(limit)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with tempfile.TemporaryDirectory() as tmp:
        pair = load_bench.make_certificates(pathlib.Path(tmp))["ecdsa"]
        port = load_bench.free_port()
        command = load_bench.server_command("ours", pair, port, close=False) + serve_flags
        if args.no_trim:  # the A/B of webhook/server/memory.py: the same server, never trimming
            command[0:1] = [sys.executable, "-c", _NO_TRIM]
        log = pathlib.Path(tmp) / "serve.log"
        with load_bench.running(command, load_bench.SERVER_CPU, port, log) as pid:
            os.sched_setaffinity(0, {int(load_bench.LOAD_CPU)})
            print(f"body limit {limit} bytes; server {pid} RSS at start {rss(pid):.1f} MiB")
            if args.floods_only:
                await floods(port, context, ordinary, idle_timeout, pid)
                return
            print(
                "| review | body | values | status | answer | parse | decode + verdict "
                "| others p99 (n) | peak RSS | RSS after |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|")
            for name, body in bodies.items():
                reset_peak(pid)
                answer, status = await timed(port, context, body, args.repeat)
                latencies = await during(port, context, body, ordinary, args.duration)
                peak = rss(pid, "VmHWM")
                await asyncio.sleep(2)
                p99 = statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else 0.0
                parse = best_time(functools.partial(orjson.loads, body))
                judged = best_time(functools.partial(judge, body))
                print(f"| {name} | {len(body) / 2**20:.2f} MiB | {json_values(body):,} | {status} "
                      f"| {answer * 1000:.0f} ms | {parse * 1000:.0f} ms | {judged * 1000:.0f} ms "
                      f"| {p99 * 1000:.0f} ms ({len(latencies)}) "
                      f"| {peak:.1f} MiB | {rss(pid):.1f} MiB |")  # fmt: skip
            held, after = await idle(port, context, args.idle, pid)
            print(f"\n{args.idle} idle TLS connections: RSS {held:.1f} MiB; after they close "
                  f"{after:.1f} MiB")  # fmt: skip
            await floods(port, context, ordinary, idle_timeout, pid)
            print(json.dumps({"bad requests": [line for line in log.read_text().splitlines()
                                               if "bad request" in line][-1:]}))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--no-trim", action="store_true", help="serve without malloc_trim")
    parser.add_argument("--floods-only", action="store_true", help="only the connection floods")
    known, serve_flags = parser.parse_known_args()
    asyncio.run(main(known, [flag for flag in serve_flags if flag != "--"]))
