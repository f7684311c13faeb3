"""docs/install.md "Verify" says what the real kube-apiserver prints.

The refusal of examples/invalid/duplicate-across-sources.yaml is the shipped
CRD's CEL message as kube-apiserver v1.37.2 renders it: tests/kube's
test_kubectl_shipped_crd.py proves ACROSS_REFUSED against the real server, and
this test keeps the Verify section's console block equal to it.
"""

from __future__ import annotations

import re

from tests.docs.pages import section
from tests.kube.test_kubectl_shipped_crd import ACROSS_REFUSED


def verify_section() -> str:
    return section("install.md", "## Verify")


def test_the_refusal_is_the_real_servers() -> None:
    blocks = re.findall(r"```console\n(.*?)```", verify_section(), flags=re.DOTALL)
    assert blocks[0] == ACROSS_REFUSED


def test_get_fs_names_every_column_the_real_server_prints() -> None:
    # tests/kube/test_inuse_real.py asserts this header from the real kube-apiserver v1.37.2.
    line = next(x for x in verify_section().splitlines() if "get fs" in x)
    assert "# NAME  MODE  VALIDATED  IN USE  AGE" in line
