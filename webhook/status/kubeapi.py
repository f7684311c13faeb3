"""The writes the status writer makes to FeedbackStores, as its own field manager.

Listing, watching and Leases are the plumbing's (`webhook.kube.client`); this
holds what only the writer does: server-side apply of `status` and of our
finalizer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kubernetes.client import ApiClient

from webhook.kube.client import REQUEST_TIMEOUT, CollectionApi, read_json
from webhook.rules import api

FIELD_MANAGER: Final = "feedbackstore-status-writer"
APPLY_PATCH: Final = "application/apply-patch+yaml"


class FeedbackStoreApi(CollectionApi):
    """List, watch and apply to FeedbackStores.

    Its RBAC needs only list and watch on `feedbackstores`, and patch on
    `feedbackstores/status` and (for our finalizer) `feedbackstores`.
    """

    def __init__(self, api_client: ApiClient, namespace: str | None = None) -> None:
        super().__init__(api_client, (api.GROUP, api.VERSION, api.PLURAL), namespace)

    def apply_status(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of our conditions on the `status` subresource."""
        return self._apply(self._api.patch_namespaced_custom_object_status, namespace, name, body)

    def apply_finalizer(self, namespace: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        """Server-side apply of our finalizer (or of none, to give it up) on the main resource.

        `metadata.finalizers` is a set-type list, so the apply owns our entry
        alone; this is the one reason the writer may patch `feedbackstores`.
        """
        return self._apply(self._api.patch_namespaced_custom_object, namespace, name, body)

    @staticmethod
    def _apply(
        patch: Callable[..., object], namespace: str, name: str, body: dict[str, Any]
    ) -> dict[str, Any]:
        """Apply `body` as our field manager, forced.

        `force` takes over fields another manager holds (an older controller's
        `Validated`), as Kubernetes advises controllers to do, instead of
        failing with 409 forever.
        """
        response = patch(
            api.GROUP,
            api.VERSION,
            namespace,
            api.PLURAL,
            name,
            body,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type=APPLY_PATCH,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        result: dict[str, Any] = read_json(response)
        return result
