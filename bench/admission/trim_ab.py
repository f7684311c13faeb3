"""Does `malloc_trim` after a large review give memory back? Two servers in one run, A/B.

webhook/server/memory.py calls glibc's malloc_trim(0) shortly after a review of 1 MiB or
more. This runs two `serve` processes side by side, both pinned to CPU 0: one as shipped
("trim") and the baseline, the same code with the trim switched off ("no trim",
attack.py's `_NO_TRIM`). Each gets the same sequence of bursts: `--burst` copies of one
hostile review of attack.py (the largest of its kind within the body limit and the bound on
JSON values), back to back on one kept-alive connection, then `--settle` seconds idle
(the trim runs 0.5 s after the last large review), then its RSS is read. The order of the
two servers alternates from one review to the next. Reported per review: RSS after the
burst for both, their ratio trim / no trim, and each one's peak (VmHWM, reset before the
burst); then the same after a second pass over every review, as a pod sees a burst after
hours of them. Run from the repository root:

    python bench/admission/trim_ab.py [--burst 10 --settle 2]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import pathlib
import ssl
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import attack  # noqa: E402
import run as load_bench  # noqa: E402

from webhook.cli.flags import default_of  # noqa: E402
from webhook.server.config import ServerConfig  # noqa: E402


async def burst(port: int, context: ssl.SSLContext, body: bytes, count: int) -> int:
    reader, writer = await attack.connect(port, context)
    status = 0
    for _ in range(count):
        status = await attack.post(reader, writer, body)
    writer.close()
    return status


async def main(args: argparse.Namespace) -> None:
    limit = default_of(ServerConfig, "max_body_bytes")
    bodies = attack.hostile_bodies(limit)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        pair = load_bench.make_certificates(pathlib.Path(tmp))["ecdsa"]
        servers: list[tuple[str, int, int]] = []
        for label in ("trim", "no trim"):
            port = load_bench.free_port()
            command = load_bench.server_command("ours", pair, port, close=False)
            if label == "no trim":
                command[0:1] = [sys.executable, "-c", attack._NO_TRIM]
            log = pathlib.Path(tmp) / f"{label}.log"
            pid = stack.enter_context(load_bench.running(command, load_bench.SERVER_CPU, port, log))
            servers.append((label, port, pid))
        os.sched_setaffinity(0, {int(load_bench.LOAD_CPU)})
        print(f"load average {os.getloadavg()[0]:.1f}; burst {args.burst}, settle {args.settle} s")
        print("RSS at start: " + ", ".join(f"{label} {attack.rss(pid):.1f} MiB"
                                           for label, _, pid in servers))  # fmt: skip
        print("| pass | review | status | RSS after: trim | no trim | trim / no trim "
              "| peak: trim | no trim |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        turn = 0
        for pass_ in (1, 2):
            for name, body in bodies.items():
                after, peak, status = {}, {}, 0
                order = servers if turn % 2 == 0 else servers[::-1]
                turn += 1
                for label, port, pid in order:
                    attack.reset_peak(pid)
                    status = await burst(port, context, body, args.burst)
                    peak[label] = attack.rss(pid, "VmHWM")
                    await asyncio.sleep(args.settle)
                    after[label] = attack.rss(pid)
                trim, no_trim = after["trim"], after["no trim"]
                print(f"| {pass_} | {name} | {status} | {trim:.1f} MiB | {no_trim:.1f} MiB "
                      f"| {trim / no_trim:.2f} | {peak['trim']:.1f} MiB "
                      f"| {peak['no trim']:.1f} MiB |", flush=True)  # fmt: skip
        started = time.monotonic()
        await asyncio.sleep(args.idle)
        print(f"after {time.monotonic() - started:.0f} s more idle: " + ", ".join(
            f"{label} {attack.rss(pid):.1f} MiB" for label, _, pid in servers))  # fmt: skip


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=10, help="copies of each review sent")
    parser.add_argument("--settle", type=float, default=2.0, help="idle seconds before RSS")
    parser.add_argument("--idle", type=float, default=10.0, help="idle seconds at the end")
    asyncio.run(main(parser.parse_args()))
