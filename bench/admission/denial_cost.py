"""What a denial costs the webhook beyond a valid review, without HTTP or TLS.

    python bench/admission/denial_cost.py [--rounds 8]

Calls the /validate handler's synchronous core (`AdmissionEndpoint._answer`:
decode, decide, count, log, answer) on the benchmark's small reviews, with
logging configured as `serve` does (queue and listener thread) but written to
/dev/null, and reports CPU time per request of the whole process (so the
listener thread's formatting and writes count): a valid review, an invalid one
with its log line, and the invalid one with the line filtered out by level.
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys
import time

from webhook.observability import logs
from webhook.server.admission_endpoint import AdmissionEndpoint
from webhook.server.config import ServerConfig
from webhook.server.webhook_metrics import WebhookMetrics

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from payloads import payloads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--requests", type=int, default=3000)
    args = parser.parse_args()
    with open(os.devnull, "w") as sink:
        logs.configure("info", sink)
        defaults = ServerConfig(pathlib.Path(), pathlib.Path())  # `serve`'s limits
        endpoint = AdmissionEndpoint(
            WebhookMetrics(), lambda: False, defaults.max_body_bytes, defaults.body_timeout
        )
        bodies = payloads()
        cases = [
            ("valid", logging.INFO, bodies["small-valid"]),
            ("invalid, logged", logging.INFO, bodies["small-invalid"]),
            ("invalid, not logged", logging.WARNING, bodies["small-invalid"]),
        ]
        cpu: dict[str, list[float]] = {label: [] for label, _, _ in cases}
        root = logging.getLogger()
        for _ in range(args.rounds):
            for label, level, body in cases:
                root.setLevel(level)
                started = time.process_time()
                for _ in range(args.requests):
                    endpoint._answer(None, body)  # type: ignore[arg-type]  # read only on refusals
                time.sleep(0.05)  # the listener drains what was queued, on this process's clock
                cpu[label].append((time.process_time() - started) / args.requests * 1e6)
        logs.stop()
    for label, times in cpu.items():
        times.sort()
        print(f"{label:20s} best {times[0]:6.1f} µs, median {times[len(times) // 2]:6.1f} µs")


if __name__ == "__main__":
    main()
