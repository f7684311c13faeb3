"""The README's quick start is what CI runs, and says what a full run needs.

`.ci/run` runs exactly the README's test command, so a new user's first run is the one CI
runs; and the line beside that command names what tests/support/prebuild.py's groups need
on a fresh machine (Go, and the Debian packages their commands install), so no group is
skipped on a machine set up as the README says.
"""

from __future__ import annotations

import re

from tests.docs.pages import section_of
from tests.docs.repo_files import ROOT
from tests.support.prebuild import GO_VERSION, GROUPS

README = (ROOT / "README.md").read_text(encoding="utf-8")
QUICK_START = section_of(README, "## Quick start")
# The second command (installs the test extra, runs pytest) and the comment above it.
_TESTS = re.compile(r"^# 2\. (?P<needs>.*)\n(?P<command>.*pytest.*)$", re.M)


def test_ci_runs_exactly_the_readme_s_test_command() -> None:
    found = _TESTS.search(QUICK_START)
    assert found, QUICK_START
    pytest_command = found["command"].split("&&")[-1].strip()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    after = ci.index("# The README's test command (keep the two in step).")
    assert ci[after + 2] == pytest_command
    assert ci[after + 1] == found["command"].split("&&")[0].strip()


def test_the_line_beside_the_test_command_names_what_every_group_needs() -> None:
    found = _TESTS.search(QUICK_START)
    assert found, QUICK_START
    needs = found["needs"]
    assert f"Go {GO_VERSION}+" in needs
    packages = {
        package
        for group in GROUPS
        for install in re.findall(r"apt-get install ([a-z0-9. -]+)", group.brings)
        for package in install.split()
    }
    assert packages, [group.brings for group in GROUPS]
    named = set(re.search(r"apt-get install ([a-z0-9. -]+)", needs)[1].split())  # type: ignore[index]
    assert named == packages
