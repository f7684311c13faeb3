"""Running one of the suite's cached build scripts (tests/*/build.sh, tests/node/image.sh)
where its progress shows.

Every script keeps one convention: everything but the result's path goes to stderr, the
path is the last line of stdout, and exit 3 means "cannot be built on this machine" (no Go
toolchain, no C compiler), which is a skip, not a failure. A cold build runs for minutes
and go is silent while it compiles, so the caller gets each stderr line as it comes and,
whenever the script has said nothing for a while, a line with the time it has run.
"""

from __future__ import annotations

import pathlib
import queue
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO

CANNOT_BUILD_HERE = 3  # every script's exit code for a missing toolchain


class ToolUnavailableError(Exception):
    """The script cannot build its tool on this machine (exit 3); the message is its stderr."""


def run(
    script: pathlib.Path, report: Callable[[str], None] = lambda line: None, every: float = 30.0
) -> pathlib.Path:
    """The path `script` prints last, built first if need be.

    `report` is handed each line the script writes to stderr and, every `every` seconds
    that it says nothing (go build compiling, or a second caller waiting on the first
    one's lock), a line `<folder>/<script>: still running after N min SS s`.
    """
    label = f"{script.parent.name}/{script.name}"
    started = time.monotonic()
    with subprocess.Popen(
        ["bash", str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as build:
        assert build.stdout is not None
        assert build.stderr is not None
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_forward, args=(build.stderr, lines), daemon=True).start()
        stderr: list[str] = []
        while (line := _next(lines, every, started, label, report)) is not None:
            stderr.append(line)
            report(line)
        stdout = build.stdout.read()
        returncode = build.wait()
    if returncode == CANNOT_BUILD_HERE:
        raise ToolUnavailableError("\n".join(stderr))
    if returncode != 0:
        tail_of_log = "\n".join(stderr)[-4000:]
        raise RuntimeError(f"{script} failed (exit {returncode}):\n{tail_of_log}")
    return pathlib.Path(stdout.strip().splitlines()[-1])


def _forward(stream: IO[str], lines: queue.Queue[str | None]) -> None:
    for line in stream:
        lines.put(line.rstrip("\n"))
    lines.put(None)


def _next(
    lines: queue.Queue[str | None],
    every: float,
    started: float,
    label: str,
    report: Callable[[str], None],
) -> str | None:
    """The script's next stderr line (None at its end), reporting the time run while it waits."""
    while True:
        try:
            return lines.get(timeout=every)
        except queue.Empty:
            minutes, seconds = divmod(int(time.monotonic() - started), 60)
            report(f"{label}: still running after {minutes} min {seconds:02d} s")
