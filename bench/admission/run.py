"""Load benchmark of the admission webhook against the floor, side by side in one invocation.

Each scenario starts the floor (bench/admission/floor.py: asyncio, stdlib
json), a reference "fast floor" (uvloop, orjson) and the real server
(`feedbackstore-webhook serve`) on CPU 0 (taskset), then drives them in turn
with Debian's wrk on CPU 1, posting a real AdmissionReview over HTTPS, for a
few rounds; each server's best round is reported: req/s, p99 latency, server
CPU time per request, the ratio to the floor, and resident memory after the
last round. Also: a new TLS connection per request (full handshakes) with
ECDSA P-256 and RSA-2048 keys. wrk is installed with apt-get when absent.

Run from the repository root:  python bench/admission/run.py [--rounds 3 --duration 5]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass

HERE = pathlib.Path(__file__).resolve().parent
SERVER_CPU, LOAD_CPU = "0", "1"
PAYLOADS = ("small-valid", "small-invalid", "maximal")


@dataclass(frozen=True)
class Result:
    rps: float
    p99_ms: float
    rss_mib: float
    errors: int
    # Server CPU time per answered request: steadier than req/s when other
    # processes share the machine, and 1e6 / cpu_us is the req/s one free core would give.
    cpu_us: float


def ensure_wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    print("wrk not found: installing Debian's wrk with apt-get", flush=True)
    if subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=False).returncode:
        subprocess.run(["apt-get", "update", "-qq"], check=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], check=True)
    return shutil.which("wrk") or sys.exit("wrk is still not installed")


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_certificates(out: pathlib.Path) -> dict[str, tuple[pathlib.Path, pathlib.Path]]:
    from webhook.certs.defaults import KeyType
    from webhook.certs.files import write_bundle
    from webhook.certs.issue import issue_bundle

    pairs = {}
    for key_type in (KeyType.ECDSA, KeyType.RSA):
        files = write_bundle(
            out / key_type.value, issue_bundle(["localhost", "127.0.0.1"], key_type=key_type)
        )
        pairs[key_type.value] = (files.cert, files.key)
    return pairs


# Where `--baseline REV` was checked out (a git worktree in the run's temporary directory).
baseline_tree: pathlib.Path | None = None


def server_command(
    kind: str, pair: tuple[pathlib.Path, pathlib.Path], port: int, *, close: bool
) -> list[str]:
    cert, key = pair
    if kind in ("floor", "fast floor"):
        command = [sys.executable, str(HERE / "floor.py"), str(cert), str(key), str(port)]
        # The real server issues no session tickets; neither does the floor when
        # new connections are measured, so both pay full handshakes.
        return command + ["--fast"] * (kind == "fast floor") + ["--no-resume"] * close
    if kind == "baseline":
        # The same interpreter and dependencies, the code of the `--baseline` checkout
        # (-P: the working directory, this checkout, must not come first on sys.path).
        script = ["env", f"PYTHONPATH={baseline_tree}", sys.executable, "-P", "-c",
                  "import sys; from webhook.cli.main import main; sys.exit(main())"]  # fmt: skip
    else:
        script = [str(pathlib.Path(sys.executable).parent / "feedbackstore-webhook")]
    return [
        *script, "serve", "--tls-cert-file", str(cert), "--tls-private-key-file", str(key),
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip


@contextlib.contextmanager
def running(command: list[str], cpus: str, port: int, log: pathlib.Path) -> Iterator[int]:
    with log.open("ab") as sink:
        process = subprocess.Popen(["taskset", "-c", cpus, *command], stdout=sink, stderr=sink)
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"server did not start: {command} (see {log})")
            time.sleep(0.1)
        time.sleep(0.5)  # settled
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def family(pid: int) -> list[int]:
    """The server process and its children (a baseline revision that had
    `serve --workers` runs several)."""
    pids = [pid]
    with contextlib.suppress(OSError):
        children = pathlib.Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(c) for c in children]
    return pids


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) used so far by the server and its children."""
    ticks = 0
    for each in family(pid):
        with contextlib.suppress(OSError):
            fields = pathlib.Path(f"/proc/{each}/stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    """Resident memory of the process and its children, in MiB."""
    total = 0
    for each in family(pid):
        with contextlib.suppress(OSError):
            for line in pathlib.Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def load(wrk: str, cpus: str, port: int, body: pathlib.Path, seconds: float,
         connections: int, close: bool) -> dict[str, int]:  # fmt: skip
    env = {**os.environ, "BENCH_BODY": str(body), "BENCH_CLOSE": "1" if close else "0"}
    command = ["taskset", "-c", cpus, wrk, "-t1", f"-c{connections}", f"-d{seconds:g}s",
               "--timeout", "10s", "-s", str(HERE / "post.lua"),
               f"https://127.0.0.1:{port}/validate"]  # fmt: skip
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


@dataclass(frozen=True)
class Server:
    """One server of a scenario: a label for the report and what to run."""

    label: str
    kind: str


def measure_round(args: argparse.Namespace, wrk: str, port: int, pid: int, body: pathlib.Path,
                  close: bool, load_cpus: str) -> Result:  # fmt: skip
    load(wrk, load_cpus, port, body, args.warmup, args.connections, close)
    cpu_before = cpu_seconds(pid)
    figures = load(wrk, load_cpus, port, body, args.duration, args.connections, close)
    cpu = cpu_seconds(pid) - cpu_before
    errors = sum(v for k, v in figures.items() if k.endswith(("errors", "timeouts")))
    return Result(
        rps=figures["requests"] / (figures["duration_us"] / 1e6),
        p99_ms=figures["p99_us"] / 1000,
        rss_mib=rss_mib(pid),
        errors=errors,
        cpu_us=cpu / max(figures["requests"], 1) * 1e6,
    )


def scenario(args: argparse.Namespace, wrk: str, servers: list[Server],
             pair: tuple[pathlib.Path, pathlib.Path], body: pathlib.Path, *,
             close: bool = False) -> dict[str, Result]:  # fmt: skip
    """Start every server, then load them in turn for `--rounds` rounds; each one's best round.

    Alternating rounds (in a rotating order) and keeping the best spreads bursts
    of other work on the machine over all servers instead of letting one of them
    take the whole hit.
    Memory is read after the last round; errors are summed over all rounds.
    """
    best: dict[str, Result] = {}
    with contextlib.ExitStack() as stack:
        started = []
        for server in servers:
            port = free_port()
            command = server_command(server.kind, pair, port, close=close)
            log = args.work / f"{server.label.replace(' ', '-')}.log"
            pid = stack.enter_context(running(command, SERVER_CPU, port, log))
            started.append((server, port, pid))
        for round_ in range(args.rounds):
            # Each round starts with the next server, so none is always measured first.
            shift = round_ % len(started)
            for server, port, pid in started[shift:] + started[:shift]:
                result = measure_round(args, wrk, port, pid, body, close, LOAD_CPU)
                previous = best.get(server.label)
                errors = result.errors + (previous.errors if previous else 0)
                kept = result if previous is None or result.rps > previous.rps else previous
                best[server.label] = Result(kept.rps, kept.p99_ms, result.rss_mib, errors,
                                            kept.cpu_us)  # fmt: skip
    return best


def report(name: str, base_name: str, base: Result, ours: Result,
           label: str = "ours") -> dict[str, object]:  # fmt: skip
    """One line: both figures, ours as a ratio of the base by req/s and by CPU per request."""
    ratio = ours.rps / base.rps
    cpu_ratio = base.cpu_us / ours.cpu_us
    print(f"{name:<26} {base_name:>10} {base.rps:6.0f} req/s p99 {base.p99_ms:6.2f} ms "
          f"cpu {base.cpu_us:5.0f} us | {label} {ours.rps:6.0f} req/s p99 {ours.p99_ms:6.2f} ms "
          f"cpu {ours.cpu_us:5.0f} us rss {ours.rss_mib:5.1f} MiB | ratio {ratio:6.1%} "
          f"cpu ratio {cpu_ratio:6.1%} | errors {base.errors}/{ours.errors}",
          flush=True)  # fmt: skip
    return {"scenario": name, "base": base_name, "base_result": base.__dict__,
            "ours": ours.__dict__, "label": label, "ratio": ratio,
            "cpu_ratio": cpu_ratio}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per server; best is kept")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before each")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--json", type=pathlib.Path, help="also write the results here")
    parser.add_argument(
        "--keep-alive-only",
        action="store_true",
        help="only the three keep-alive scenarios (no new connections)",
    )
    parser.add_argument(
        "--payload",
        action="append",
        choices=PAYLOADS,
        help="only this keep-alive payload (repeatable; default: all three)",
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also serve this git revision's code (a worktree, same virtualenv) beside ours, "
        "instead of the fast floor, and report ours against it: an A/B in one run",
    )
    args = parser.parse_args()
    wrk = ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="admission-bench-") as work:
        args.work = pathlib.Path(work)
        subprocess.run([sys.executable, str(HERE / "payloads.py"), work], check=True)
        pairs = make_certificates(args.work / "certs")
        body = {name: args.work / f"{name}.json" for name in ("small-valid", "small-invalid",
                                                              "maximal")}  # fmt: skip
        print(f"server on CPU {SERVER_CPU}, wrk on CPU {LOAD_CPU}, {args.connections} connections, "
              f"best of {args.rounds} rounds of {args.duration:g} s; "
              f"load average before: {load_average()}", flush=True)  # fmt: skip
        results = []
        floors = [Server("floor", "floor"), Server("fast floor", "fast floor")]
        if args.baseline:
            global baseline_tree  # read by server_command
            baseline_tree = args.work / "baseline"
            subprocess.run(["git", "worktree", "add", "--detach", "-q", str(baseline_tree),
                            args.baseline], check=True)  # fmt: skip
            floors[1] = Server("baseline", "baseline")
        ours = Server("ours", "ours")
        for payload in args.payload or PAYLOADS:
            got = scenario(args, wrk, [*floors, ours], pairs["ecdsa"], body[payload])
            for floor in floors:
                results.append(report(f"keep-alive {payload}", floor.label, got[floor.label],
                                      got["ours"]))  # fmt: skip
            if args.baseline:
                results.append(report(f"keep-alive {payload}", "floor", got["floor"],
                                      got["baseline"], label="baseline"))  # fmt: skip
        for key in () if args.keep_alive_only else ("ecdsa", "rsa"):
            got = scenario(args, wrk, [floors[0], ours], pairs[key], body["small-valid"],
                           close=True)  # fmt: skip
            results.append(report(f"new connection {key}", "floor", got["floor"], got["ours"]))
    print(
        f"load average after: {load_average()} (other work on the machine skews req/s; "
        "the CPU-per-request ratio is steadier)",
        flush=True,
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    if baseline_tree is not None:  # its directory went with the temporary one
        subprocess.run(["git", "worktree", "prune"], check=False)


if __name__ == "__main__":
    main()
