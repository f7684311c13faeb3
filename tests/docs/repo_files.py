"""The repository's own files, as git knows them: tracked, or new and not ignored.

A walk of the checkout would also find virtualenvs, build output and caches; git's
list is what a clone has, so it is what links and comments may rely on."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[2]


def repo_files() -> list[PurePosixPath]:
    """Every file of the repository (a deleted but still tracked file left out)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(
        {PurePosixPath(name) for name in listed.split("\0") if name and (ROOT / name).is_file()}
    )


def repo_dirs(files: list[PurePosixPath]) -> set[PurePosixPath]:
    """Every directory that holds a repository file (a link may name a folder)."""
    return {parent for path in files for parent in path.parents}
