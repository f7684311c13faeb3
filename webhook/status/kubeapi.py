"""What only the status writer writes to FeedbackStores, as its own field manager: server-side
apply of `status` and of our finalizer, and a guarded JSON patch taking the finalizer off when
another manager also lists it (listing and watching are the plumbing's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kubernetes.client import ApiClient

from webhook.install import FIELD_MANAGER
from webhook.kube.client import REQUEST_TIMEOUT, CollectionApi, read_object
from webhook.rules import api

APPLY_PATCH: Final = "application/apply-patch+yaml"
JSON_PATCH: Final = "application/json-patch+json"


class FeedbackStoreApi(CollectionApi):
    """RBAC: list and watch `feedbackstores`, patch `feedbackstores/status` and `feedbackstores`."""

    def __init__(self, api_client: ApiClient, namespace: str | None = None) -> None:
        super().__init__(api_client, (api.GROUP, api.VERSION, api.PLURAL), namespace)

    def apply_status(
        self, namespace: str, name: str, body: dict[str, Any], *, force: bool = True
    ) -> dict[str, Any]:
        patch = self._api.patch_namespaced_custom_object_status
        return self._apply(patch, namespace, name, body, force)

    def apply_finalizer(
        self, namespace: str, name: str, body: dict[str, Any], *, force: bool = True
    ) -> dict[str, Any]:
        """Our finalizer, or none to give it up: a set-type list, so we own our entry alone."""
        return self._apply(self._api.patch_namespaced_custom_object, namespace, name, body, force)

    def patch_guarded(
        self, namespace: str, name: str, operations: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """A JSON patch of the main resource; its `test` ops make the server refuse it (422)
        unless the object is as they say."""
        response = self._api.patch_namespaced_custom_object(
            api.GROUP,
            api.VERSION,
            namespace,
            api.PLURAL,
            name,
            operations,
            field_manager=FIELD_MANAGER,
            _content_type=JSON_PATCH,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        return read_object(response)

    @staticmethod
    def _apply(
        patch: Callable[..., object],
        namespace: str,
        name: str,
        body: dict[str, Any],
        force: bool,
    ) -> dict[str, Any]:
        """Forced for the writer, as Kubernetes advises controllers: a field of ours another
        manager took (a hand-edited `InUse`) is taken back rather than failing with 409 forever.
        `Validated` is not fought over: the planner yields it to its other writers
        (`validated.py`). `cleanup` never forces: it takes no field from anyone.
        """
        response = patch(
            api.GROUP,
            api.VERSION,
            namespace,
            api.PLURAL,
            name,
            body,
            field_manager=FIELD_MANAGER,
            force=force,
            _content_type=APPLY_PATCH,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        return read_object(response)
