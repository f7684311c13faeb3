"""feedbackstore-webhook: one FeedbackStore verdict, at admission, in status and offline."""

from __future__ import annotations

import functools
import pathlib
from typing import Final

DISTRIBUTION: Final = "feedbackstore-webhook"
_PYPROJECT: Final = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"


@functools.cache
def version() -> str:
    """The release, written once: `project.version` in pyproject.toml. The chart's version and
    appVersion and the image tag the manifests deploy are held to it (`manifests chart`
    refuses a manifest that runs another tag). Read from pyproject.toml itself where the
    package runs from its source tree (an editable install's metadata keeps the version of
    the last `pip install`), else from the installed package's metadata."""
    if _PYPROJECT.is_file():
        import tomllib

        with _PYPROJECT.open("rb") as handle:
            project = tomllib.load(handle).get("project", {})
        if project.get("name") == DISTRIBUTION:
            return str(project["version"])
    from importlib.metadata import version as installed

    return installed(DISTRIBUTION)
