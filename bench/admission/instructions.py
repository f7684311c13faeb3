"""Instructions per review of the real server, ours against a git revision's, under callgrind.

    python bench/admission/instructions.py --baseline REV [--payload small-valid] [--requests 400]

On a shared machine req/s and CPU time move by tens of percent with the other
work on it; the number of instructions the server's event-loop thread runs per
review does not (two runs agree within 0.5 %). Each server (`serve`, TLS, the
same certificate, PYTHONHASHSEED=0) runs under valgrind's callgrind with
instrumentation off; a client in another process warms it up, then
instrumentation is switched on for exactly `--requests` reviews over the
keep-alive connections the warm-up opened (no TLS handshake is counted) and off
again. The thread's count over the requests answered is the figure; the log
listener's thread is not counted (a valid review logs nothing). Instructions
are not time: native code (orjson, OpenSSL) runs other instructions under
valgrind than on the CPU, so a ratio here is checked against
bench/admission/run.py's on a quiet machine before it is relied on.
valgrind is installed with apt-get when absent.
"""

from __future__ import annotations

import argparse
import http.client
import pathlib
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from run import PAYLOADS, free_port, make_certificates  # noqa: E402


def ensure_valgrind() -> None:
    if shutil.which("valgrind") and shutil.which("callgrind_control"):
        return
    print("valgrind not found: installing Debian's valgrind with apt-get", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", "valgrind"], check=True)


def connect(port: int, ca: pathlib.Path, count: int) -> list[http.client.HTTPSConnection]:
    """`count` HTTPS connections to the server (each opens with its first request)."""
    context = ssl.create_default_context(cafile=str(ca))
    return [http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=300)
            for _ in range(count)]  # fmt: skip


def post_reviews(connections: list[http.client.HTTPSConnection], body: bytes, count: int, *,
                 retry: bool = False) -> int:  # fmt: skip
    """POST `body` `count` times, spread over `connections` and kept alive; the 200s. With
    `retry`, a request that fails on its connection (a server under valgrind on a loaded machine
    may pass its 10 s handshake deadline) goes again on a new one."""
    answered = [0] * len(connections)
    failures: list[BaseException] = []

    def client(slot: int) -> None:
        try:
            post(slot)
        except Exception as error:  # raised again in the caller's thread
            failures.append(error)

    def post(slot: int) -> None:
        connection, retries = connections[slot], 20
        while answered[slot] < count // len(connections):
            try:
                connection.request("POST", "/validate", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                if not retry or not retries:
                    raise
                retries -= 1
                connection.close()  # the next request opens a new connection
                continue
            if response.status != 200:
                raise RuntimeError(f"answered {response.status}: {response.read()[:200]!r}")
            answered[slot] += 1

    threads = [threading.Thread(target=client, args=(slot,)) for slot in range(len(connections))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return sum(answered)


def instructions_per_review(tree: pathlib.Path | None, work: pathlib.Path, label: str,
                            body: bytes, args: argparse.Namespace) -> float:  # fmt: skip
    """Run one server under callgrind and count its main thread over `args.requests` reviews."""
    cert, key = make_certificates(work / "certs")["ecdsa"]
    ca = cert.parent / "ca.crt"
    port = free_port()
    out = work / f"callgrind.{label}"
    code = "import sys; from webhook.cli.main import main; sys.exit(main())"
    # -P and PYTHONPATH: the code of `tree` (or of this checkout), the same virtualenv.
    env = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree or ROOT)}
    command = ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--instr-atstart=no",
               f"--callgrind-out-file={out}", sys.executable, "-P", "-c", code, "serve",
               "--tls-cert-file", str(cert), "--tls-private-key-file", str(key),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    with (work / f"{label}.log").open("wb") as log:
        server = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    try:
        # Imports under valgrind take a minute on a quiet machine, several at load 30.
        deadline = time.monotonic() + 900
        while True:
            try:
                post_reviews(connect(port, ca, 1), body, 1)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log = (work / f"{label}.log").read_text(errors="replace")[-2000:]
                    raise SystemExit(f"{label} did not start; its output ends:\n{log}") from None
                time.sleep(0.5)
        # The measured reviews go over connections the warm-up opened: no handshake is counted.
        connections = connect(port, ca, args.connections)
        post_reviews(connections, body, args.warmup, retry=True)
        control = ["callgrind_control", "-i"]
        subprocess.run([*control, "on", str(server.pid)], check=True, capture_output=True)
        answered = post_reviews(connections, body, args.requests)
        subprocess.run([*control, "off", str(server.pid)], check=True, capture_output=True)
    finally:
        server.terminate()
        server.wait(120)
    if answered != args.requests // args.connections * args.connections:
        raise SystemExit(f"{label}: only {answered} of {args.requests} reviews answered 200")
    # One file per thread and dump; the main thread's is `<out>-01`. The sum of its parts.
    total = 0
    for part in out.parent.glob(f"{out.name}*-01"):
        for line in part.read_text().splitlines():
            if line.startswith(("totals:", "summary:")):
                total = max(total, int(line.split()[1]))
    return total / answered


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", required=True)
    parser.add_argument("--payload", action="append", choices=PAYLOADS)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each server, in turn")
    args = parser.parse_args()
    ensure_valgrind()
    with tempfile.TemporaryDirectory(prefix="admission-instructions-") as name:
        work = pathlib.Path(name)
        subprocess.run([sys.executable, str(HERE / "payloads.py"), name], check=True)
        baseline = work / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(baseline),
                        args.baseline], check=True)  # fmt: skip
        try:
            for payload in args.payload or PAYLOADS:
                body = (work / f"{payload}.json").read_bytes()
                counts: dict[str, list[float]] = {"baseline": [], "ours": []}
                for round_ in range(args.rounds):
                    for label, tree in (("baseline", baseline), ("ours", None)):
                        run = work / f"{payload}-{label}-{round_}"
                        run.mkdir()
                        counts[label].append(instructions_per_review(tree, run, label, body, args))
                base, ours = min(counts["baseline"]), min(counts["ours"])
                print(f"{payload:<14} baseline {args.baseline} "
                      f"{' / '.join(f'{c:,.0f}' for c in counts['baseline'])} | ours "
                      f"{' / '.join(f'{c:,.0f}' for c in counts['ours'])} instructions per review"
                      f" | ours / baseline {ours / base:.3f} (speed ratio {base / ours:.3f})",
                      flush=True)  # fmt: skip
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], check=False)


if __name__ == "__main__":
    main()
