"""Structured logs: one JSON object per line, fields passed with `extra=`.

`log.info("condition written", extra={"namespace": ns, "object": name})` becomes
`{"time": ..., "level": "info", "logger": ..., "msg": "condition written",
"namespace": ..., "object": ...}`. Whole objects are never logged at info level.
(`extra` keys may not shadow LogRecord attributes such as `name`.)
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from webhook.status.timestamps import micro_time

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD: Final = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime"}
)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": micro_time(datetime.fromtimestamp(record.created, UTC)),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                entry[key] = value
        if record.exc_info and record.exc_info[0] is not None:
            entry["error"] = f"{record.exc_info[0].__name__}: {record.exc_info[1]}"
        return json.dumps(entry, default=str, ensure_ascii=False)


def configure_logging(level: str, stream: TextIO | None = None) -> None:
    """Send every logger's records to `stream` (stderr) as JSON lines at `level`."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The client logs every request at DEBUG through urllib3; keep that out of ours.
    logging.getLogger("urllib3").setLevel(max(logging.WARNING, root.level))
