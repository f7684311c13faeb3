"""The serving certificate (and any client CA), re-read when its files change.

cert-manager renewals and Secret volume updates replace the files (a mounted
Secret swaps its `..data` symlink), so they are polled by stat. A changed pair
is loaded into fresh contexts and only made current if that succeeds; the SNI
callback, which OpenSSL calls on every handshake, hands each new handshake the
current context. Open connections keep what they negotiated, so nothing in
flight fails, and a bad pair is refused with a log line while the previous one
keeps serving.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
import ssl
from collections.abc import Callable

from webhook.observability.logs import logger
from webhook.server.tls import CertificateError, LoadedPair, load_pair

_log = logger("certificate")

# (device, inode, size, mtime) of the certificate, the key and any client CA, following symlinks.
Signature = tuple[tuple[int, int, int, int], ...]


class ServingCertificate:
    """The pair served to new handshakes, swapped atomically when the files change."""

    def __init__(
        self,
        cert_file: pathlib.Path,
        key_file: pathlib.Path,
        on_reload: Callable[[LoadedPair | None], None] = lambda _: None,
        client_ca_file: pathlib.Path | None = None,
    ) -> None:
        """Load the pair now (raising CertificateError if it cannot be served).

        `on_reload` is called after each later attempt: with the new pair, or
        with None when a changed pair was refused, so metrics can follow.
        """
        self.cert_file = cert_file
        self.key_file = key_file
        self.client_ca_file = client_ca_file
        self._on_reload = on_reload
        self._signature = self._stat()
        self.current = self._load()
        # OpenSSL copies a handshake's verify mode from the listening context, and
        # verifies the peer against the store of the context selected below.
        self.listener = self.current.context
        self.listener.sni_callback = self._select
        self.probe_listener = self.current.probe_context
        if self.probe_listener is not self.listener:
            self.probe_listener.sni_callback = self._select_probe

    def refresh(self) -> bool:
        """Load the pair again if any file changed since the last attempt; True if loaded."""
        try:
            signature = self._stat()
        except CertificateError as error:
            if self._signature:
                _log.error("certificate files unreadable", extra={"fields": {"error": str(error)}})
                self._signature = ()
                self._on_reload(None)
            return False
        if signature == self._signature:
            return False
        self._signature = signature
        try:
            loaded = self._load()
        except CertificateError as error:
            _log.error(
                "new certificate refused; still serving the previous one",
                extra={"fields": {"error": str(error), "serving_until": self.current.not_after}},
            )
            self._on_reload(None)
            return False
        self.current = loaded
        fields = {"cert_file": str(self.cert_file), "not_after": loaded.not_after}
        if self.client_ca_file is not None:
            fields["client_ca_file"] = str(self.client_ca_file)
        _log.info("certificate reloaded", extra={"fields": fields})
        self._on_reload(loaded)
        return True

    async def watch(self, interval: float) -> None:
        while True:
            await asyncio.sleep(interval)
            self.refresh()

    def _load(self) -> LoadedPair:
        return load_pair(self.cert_file, self.key_file, self.client_ca_file)

    def _select(self, connection: ssl.SSLObject, server_name: str | None, _: object) -> None:
        context = self.current.context
        if connection.context is not context:
            connection.context = context

    def _select_probe(self, connection: ssl.SSLObject, server_name: str | None, _: object) -> None:
        context = self.current.probe_context
        if connection.context is not context:
            connection.context = context

    def _stat(self) -> Signature:
        files = [self.cert_file, self.key_file]
        if self.client_ca_file is not None:
            files.append(self.client_ca_file)
        try:
            stats = [os.stat(file) for file in files]
        except OSError as error:
            raise CertificateError(f"cannot read certificate files: {error}") from None
        return tuple((s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns) for s in stats)
