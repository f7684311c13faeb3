"""The Dockerfile, checked by reading it (no container engine runs here).

What matters for the cluster: a pinned slim base, a build stage that leaves
compilers and caches behind, a numeric non-root user the Deployments'
`runAsNonRoot` can verify, the console script as entrypoint, and a build
context that cannot carry generated private keys into an image layer.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field

import pytest

from tests.support.manifest_render import MANIFESTS, ROOT, find, kustomize

DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) per instruction, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    assert not pending, "the Dockerfile ends inside a continuation"
    parsed = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        parsed.append((keyword.upper(), args.strip()))
    return parsed


def stages() -> tuple[dict[str, str], list[Stage]]:
    args: dict[str, str] = {}
    found: list[Stage] = []
    for keyword, rest in instructions(DOCKERFILE.read_text(encoding="utf-8")):
        if keyword == "ARG" and not found:
            name, _, default = rest.partition("=")
            args[name] = default
        elif keyword == "FROM":
            image, _, alias = rest.partition(" AS ")
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)
            found.append(Stage(image.strip(), alias.strip() or None))
        else:
            assert found, f"{keyword} before the first FROM"
            found[-1].instructions.append((keyword, rest))
    return args, found


ARGS, STAGES = stages()
BUILDER, FINAL = STAGES[0], STAGES[-1]


def test_the_base_image_is_python_3_11_slim_bookworm_pinned_by_version() -> None:
    assert re.fullmatch(
        r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", ARGS["PYTHON_IMAGE"]
    ), ARGS["PYTHON_IMAGE"]


def test_the_builder_is_the_python_base_and_the_runtime_starts_from_nothing() -> None:
    assert [(stage.name, stage.base) for stage in STAGES] == [
        ("builder", ARGS["PYTHON_IMAGE"]),
        (None, "scratch"),
    ]


def test_the_builder_makes_a_wheel_and_installs_it_into_a_venv() -> None:
    script = " ".join(BUILDER.all("RUN"))
    assert "pip wheel" in script
    assert "venv" in script
    assert re.search(r"install [^&]*/wheels/\*\.whl", script)


def test_every_pip_call_keeps_no_cache() -> None:
    for stage in STAGES:
        for run in stage.all("RUN"):
            for command in run.split("&&"):
                # The subcommand, after any global options (`pip --python PATH install`).
                if re.search(
                    r"\bpip(\s+--\S+(\s+[^-\s]\S*)?)*\s+(install|wheel|download)\b", command
                ):
                    assert "--no-cache-dir" in command, command
    assert "PIP_NO_CACHE_DIR=1" in " ".join(BUILDER.all("ENV"))


def test_the_runtime_runs_nothing_at_build_and_takes_only_the_builders_laid_out_root() -> None:
    # No RUN: a stage with no shell could not run one, and nothing is installed there.
    assert FINAL.all("RUN") == []
    assert FINAL.all("COPY") == ["--from=builder /rootfs /"]


def test_the_laid_out_root_leaves_the_bases_pip_shell_and_package_manager_behind() -> None:
    script = " ".join(BUILDER.all("RUN"))
    # The base's own pip and setuptools live in its site-packages, which stays behind.
    assert "--exclude='site-packages'" in script
    # Only the interpreter's own entries of its bin directory are copied: no sh, no apt.
    assert "-name 'python*'" in script
    assert not re.search(r"\b(apt|apt-get|dpkg|bash|busybox)\b", script), script


def test_no_stage_installs_a_compiler() -> None:
    for stage in STAGES:
        for run in stage.all("RUN"):
            assert not re.search(r"\b(gcc|g\+\+|build-essential|clang|make)\b", run), run


def test_the_final_user_is_numeric_and_non_root() -> None:
    (user,) = FINAL.all("USER")
    uid, _, gid = user.partition(":")
    assert uid.isdigit(), user
    assert gid.isdigit(), user
    assert int(uid) != 0
    assert int(gid) != 0


def test_the_image_user_is_the_one_the_deployments_run_as() -> None:
    (user,) = FINAL.all("USER")
    docs = kustomize(MANIFESTS)
    for name in ("feedbackstore-webhook", "feedbackstore-status-writer"):
        security = find(docs, "Deployment", name)["spec"]["template"]["spec"]["securityContext"]
        assert user == f"{security['runAsUser']}:{security['runAsGroup']}"


def test_the_entrypoint_is_the_console_script_in_exec_form() -> None:
    (entrypoint,) = FINAL.all("ENTRYPOINT")
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    # The absolute path: a runtime with no shell resolves no PATH for the kubelet's exec.
    assert json.loads(entrypoint) == [f"/opt/venv/bin/{next(iter(scripts))}"]
    assert "/opt/venv/bin" in " ".join(FINAL.all("ENV"))


def test_the_exposed_port_is_the_webhook_port() -> None:
    docs = kustomize(MANIFESTS)
    deployment = find(docs, "Deployment", "feedbackstore-webhook")
    (port,) = deployment["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert FINAL.all("EXPOSE") == [str(port["containerPort"])]


def _dockerignore_patterns() -> list[tuple[bool, re.Pattern[str]]]:
    patterns = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        glob = line.removeprefix("!").strip("/")
        regex = "".join(
            ".*"
            if part == "**"
            else "[^/]*"
            if part == "*"
            else "[^/]"
            if part == "?"
            else re.escape(part)
            for part in re.split(r"(\*\*|\*|\?)", glob)
        )
        patterns.append((negated, re.compile(regex)))
    return patterns


def excluded(path: str) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parents wins."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for negated, pattern in _dockerignore_patterns():
        if any(pattern.fullmatch(prefix) for prefix in prefixes):
            verdict = not negated
    return verdict


@pytest.mark.parametrize(
    "path",
    ["pyproject.toml", "README.md", "webhook/cli/main.py", "webhook/certs/issue.py"],
)
def test_the_build_context_keeps_what_the_builder_copies(path: str) -> None:
    assert (ROOT / path).exists()
    assert not excluded(path)


@pytest.mark.parametrize(
    "path",
    [
        "certs/tls.key",
        "certs/ca.key",
        "certs/secret.yaml",
        ".git/config",
        "tests/webhook/certs/test_issue.py",
        ".venv/bin/python",
        "webhook/__pycache__/main.cpython-311.pyc",
        "bench/out/run.json",
    ],
)
def test_the_build_context_leaves_out_keys_history_and_tests(path: str) -> None:
    assert excluded(path)


def test_every_copy_source_of_the_builder_is_in_the_context() -> None:
    for copy in BUILDER.all("COPY"):
        *sources, _destination = copy.split()
        for source in sources:
            assert (ROOT / source).exists(), source
            assert not excluded(source), source
