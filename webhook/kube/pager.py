"""A list in pages (`limit` and `continue`), as client-go's `tools/pager` lists for the reflector.

Why pages: one response holding every FeedbackStore in a big cluster is one big body to
build on the server and to hold on both sides at once; pages of 500 (client-go's
`defaultPageSize`) bound both, and the server serves each page from the same snapshot, so
the result is still one consistent list at one resourceVersion.

What client-go's `ListPager.list` does, and this does too:
- the first request carries `limit` only; each next one the `continue` token of the last;
- 410 Expired on a continue token (the snapshot was compacted away while we paged; tokens
  live about five minutes) falls back to ONE full list without `limit` (`FullListIfExpired`),
  which cannot expire mid-way; a 410 on the first page is the caller's to handle (for the
  informer: relist).

Unlike the reflector, the first list asks for no resourceVersion (a consistent read, which
kube-apiserver v1.37 serves from its watch cache anyway, `ConsistentListFromCache`) instead
of "0": it can never go back in time behind what the writer already saw.
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
    """Every item of the collection and the resourceVersion to watch from."""
    listed = Listed()
    token: str | None = None
    while True:
        listed.requests += 1
        try:
            page = fetch(page_size or None, token)
        except Exception as error:
            if token is None or not _expired(error):
                raise
            listed.requests += 1
            listed.full_list_fallback = True
            page = fetch(None, None)
            listed.items = list(page.items)
            listed.resource_version = page.resource_version
            return listed
        listed.items.extend(page.items)
        if not page.continue_token:
            listed.resource_version = page.resource_version
            return listed
        token = page.continue_token


def _expired(error: Exception) -> bool:
    """410: kube-apiserver answers an expired continue token with reason Expired."""
    return isinstance(error, ApiException) and error.status == http.HTTPStatus.GONE
