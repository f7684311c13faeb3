"""Make sure a directory holds a CA and a serving certificate fit for `hosts`.

Three outcomes, cheapest first: keep everything; keep the CA and sign a new
serving certificate (the caBundle in the cluster stays valid, so rotation has
no x509 window); or start over with a new CA (first run, `force`, a changed key
type, or a CA near its end).
"""

from __future__ import annotations

import datetime as dt
import pathlib
from collections.abc import Sequence

from webhook.certs.defaults import CA_DAYS, DEFAULT_KEY_TYPE, SERVING_DAYS, KeyType
from webhook.certs.files import ServingFiles, read_optional, write_bundle
from webhook.certs.issue import issue_authority, issue_serving
from webhook.certs.reuse import serving_reusable, usable_authority


def ensure_certificates(
    out_dir: pathlib.Path,
    hosts: Sequence[str],
    *,
    key_type: KeyType | None = None,
    days: int = SERVING_DAYS,
    force: bool = False,
    now: dt.datetime | None = None,
) -> tuple[ServingFiles, str]:
    """The files in `out_dir`, and what was done: "kept", "renewed" or "created".

    `key_type` None accepts whatever type is on disk (ECDSA for new keys).
    """
    moment = now or dt.datetime.now(dt.UTC)
    files = ServingFiles.in_dir(out_dir)
    authority = None
    if not force:
        authority = usable_authority(
            read_optional(files.ca_cert), read_optional(files.ca_key), key_type, moment
        )
    if authority is not None and serving_reusable(
        authority.cert, read_optional(files.cert), read_optional(files.key), hosts, key_type, moment
    ):
        return files, "kept"
    outcome = "renewed"
    chosen = key_type or DEFAULT_KEY_TYPE
    if authority is None:
        authority = issue_authority(key_type=chosen, days=max(CA_DAYS, days), now=moment)
        outcome = "created"
    bundle = issue_serving(authority, hosts, key_type=chosen, days=days, now=moment)
    return write_bundle(out_dir, bundle), outcome
