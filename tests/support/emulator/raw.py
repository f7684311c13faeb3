"""Raw HTTP to the emulator, for bodies the typed kubernetes client refuses to send."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any


def send(
    url: str, method: str, path: str, body: bytes | None = None, content_type: str | None = None
) -> tuple[int, Any, dict[str, str]]:
    """(status, decoded JSON body or None, headers) — HTTP errors are answers, not exceptions."""
    request = urllib.request.Request(url + path, data=body, method=method)
    if content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw, status, headers = response.read(), response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        raw, status, headers = error.read(), error.code, dict(error.headers)
    return status, (json.loads(raw) if raw else None), headers
