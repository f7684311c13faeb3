"""A list in pages of `limit` and `continue`, as client-go's `tools/pager` (one consistent list).

A 410 on a continue token (compacted while paging) falls back to ONE full list; a 410 on the first
page is the caller's. The first list asks for no resourceVersion: it never goes back in time.
"""

from __future__ import annotations

import http
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes.client.exceptions import ApiException

from webhook.kube.settings import PAGE_SIZE


@dataclass(frozen=True, slots=True)
class Page:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str | None


# (limit, continue) -> one page; limit None asks for everything at once.
PageFetch = Callable[[int | None, str | None], Page]


@dataclass(slots=True)
class Listed:
    items: list[dict[str, Any]] = field(default_factory=list)
    resource_version: str = ""
    requests: int = 0
    full_list_fallback: bool = False


def list_all(fetch: PageFetch, page_size: int | None = PAGE_SIZE) -> Listed:
    listed = Listed()
    token: str | None = None
    while True:
        listed.requests += 1
        try:
            page = fetch(page_size or None, token)
        except ApiException as error:
            if token is None or error.status != http.HTTPStatus.GONE:
                raise
            listed.requests += 1
            listed.full_list_fallback = True
            listed.items.clear()
            page = fetch(None, None)
        listed.items.extend(page.items)
        token = None if listed.full_list_fallback else page.continue_token
        if not token:
            listed.resource_version = page.resource_version
            return listed
