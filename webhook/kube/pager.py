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
# (page, restarted) -> None; restarted: the list began again, what the pages before said is void.
PageConsumer = Callable[[Page, bool], None]


@dataclass(slots=True)
class Listing:
    """What a list came to besides its items: the resourceVersion to watch from, and its cost."""

    resource_version: str = ""
    requests: int = 0
    full_list_fallback: bool = False


@dataclass(slots=True)
class Listed(Listing):
    items: list[dict[str, Any]] = field(default_factory=list)


def list_pages(
    fetch: PageFetch, consume: PageConsumer, page_size: int | None = PAGE_SIZE
) -> Listing:
    """Hands each page to `consume` as it arrives and lets go of it before asking for the next:
    a consumer that keeps only what it reads of each object never holds the whole list, only the
    page in hand (a list of thousands of objects is several times what a cache keeps of them).

    After an expired continue token the full list comes as one page with `restarted` set: objects
    only the pages before it named are gone since.
    """
    listing = Listing()
    token: str | None = None
    while True:
        listing.requests += 1
        try:
            page = fetch(page_size or None, token)
        except ApiException as error:
            if token is None or error.status != http.HTTPStatus.GONE:
                raise
            listing.requests += 1
            listing.full_list_fallback = True
            page = fetch(None, None)
        consume(page, listing.full_list_fallback)
        token = None if listing.full_list_fallback else page.continue_token
        if not token:
            listing.resource_version = page.resource_version
            return listing
        del page  # before the next page is fetched, not after


def list_all(fetch: PageFetch, page_size: int | None = PAGE_SIZE) -> Listed:
    """Every item at once, for a caller that reads the list as a whole."""
    items: list[dict[str, Any]] = []

    def keep(page: Page, restarted: bool) -> None:
        if restarted:
            items.clear()
        items.extend(page.items)

    listing = list_pages(fetch, keep, page_size)
    return Listed(listing.resource_version, listing.requests, listing.full_list_fallback, items)
