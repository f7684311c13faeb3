"""A child process whose JSON log lines go to a file: the status writer and the platform's stand-in
run this way, so a test reads what each said after the fact and stops or kills it the same way.
"""

from __future__ import annotations

import json
import pathlib
import signal
import subprocess
from typing import Any

# Beside the class: its `signal` method hides the module inside its body.
_TERM = signal.SIGTERM


class LoggedProcess:
    def __init__(
        self,
        command: list[str],
        log_path: pathlib.Path,
        *,
        env: dict[str, str] | None = None,
        cwd: pathlib.Path | None = None,
    ) -> None:
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
        )

    def logs(self) -> list[dict[str, Any]]:
        lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        entries = []
        for line in lines:
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                entries.append({"msg": "(not JSON)", "line": line})
        return entries

    def signal(self, sig: signal.Signals) -> None:
        self.process.send_signal(sig)

    def stop(self, sig: signal.Signals = _TERM, timeout: float = 20.0) -> int:
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        finally:
            self._log.close()

    def kill(self) -> None:
        """SIGKILL: no release of anything held, no goodbye (works on a SIGSTOPped one too)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        self._log.close()
