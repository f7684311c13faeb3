"""The image built from the Dockerfile, run as the Deployments run it.

Read-only root filesystem, uid/gid 65532, every capability dropped, no new
privileges: `serve` answers /readyz over TLS with a certificate from the
project's own `certs`, `validate` judges manifests on stdin, and the image
carries no pip, no compiler and no tests into the runtime environment, nor a shell
or a package manager (the runtime stage is distroless-style, built from scratch).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from tests.node.image_support import ROOT, Docker

# A cold image build (stand-in base, then the Dockerfile) takes minutes, all in
# the first test's setup.
pytestmark = [pytest.mark.node, pytest.mark.xdist_group("node"), pytest.mark.timeout(1200)]

# The Deployments' securityContext, in docker's words.
AS_DEPLOYED = (
    "--read-only",
    "--user",
    "65532:65532",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serving_certs(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(ca.crt, a directory holding tls.crt and tls.key readable by uid 65532)."""
    out = tmp_path / "certs"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook.cli.main",
            "certs",
            "--out-dir",
            str(out),
            "--host",
            "127.0.0.1",
        ],
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    mount = tmp_path / "tls"
    mount.mkdir()
    for name in ("tls.crt", "tls.key"):
        shutil.copy(out / name, mount / name)
        (mount / name).chmod(0o644)
    mount.chmod(0o755)
    return out / "ca.crt", mount


def test_serve_answers_readyz_over_tls(image: tuple[Docker, str], tmp_path: pathlib.Path) -> None:
    docker, name = image
    ca, mount = serving_certs(tmp_path)
    port = free_port()
    container = f"fs-node-serve-{uuid.uuid4().hex[:8]}"
    context = ssl.create_default_context(cafile=str(ca))
    started = time.monotonic()
    docker.run(
        "run",
        "-d",
        "--name",
        container,
        *AS_DEPLOYED,
        "--network",
        "host",
        "-v",
        f"{mount}:/tls:ro",
        name,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--tls-cert-file",
        "/tls/tls.crt",
        "--tls-private-key-file",
        "/tls/tls.key",
    )
    try:
        body = b""
        deadline = started + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                    f"https://127.0.0.1:{port}/readyz", context=context, timeout=2
                ) as answer:
                    status, body = answer.status, answer.read()
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.05)
        else:
            logs = docker.run("logs", container, check=False)
            raise AssertionError(f"serve never became ready:\n{logs.stderr.decode()[-3000:]}")
        ready = time.monotonic() - started
        assert status == 200
        assert body.strip() == b"ok"
        stats = docker.run("stats", "--no-stream", "--format", "{{.MemUsage}}", container)
        print(f"start-to-ready {ready:.2f} s; memory {stats.stdout.decode().strip()}")
        # The process really runs as the Deployment asks: uid 65532, no capabilities.
        top = docker.run("inspect", "--format", "{{.State.Pid}}", container)
        status_file = pathlib.Path(f"/proc/{top.stdout.decode().strip()}/status").read_text()
        fields = dict(line.split(":", 1) for line in status_file.splitlines() if ":" in line)
        assert fields["Uid"].split()[:2] == ["65532", "65532"]
        assert fields["Gid"].split()[:2] == ["65532", "65532"]
        assert int(fields["CapEff"], 16) == 0
        assert int(fields["CapPrm"], 16) == 0
        assert fields["NoNewPrivs"].strip() == "1"
        # Any other path is refused over the same TLS listener.
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"https://127.0.0.1:{port}/nope", context=context, timeout=2)
        assert missing.value.code == 404
    finally:
        docker.run("rm", "-f", container, check=False)


def test_validate_judges_manifests_on_stdin(image: tuple[Docker, str]) -> None:
    docker, name = image
    run = ("run", "--rm", "-i", *AS_DEPLOYED, "--network", "none", name, "validate", "-")
    good = docker.run(*run, input=(ROOT / "examples/minimal.yaml").read_bytes(), check=False)
    assert good.returncode == 0, good.stderr.decode()
    bad_file = ROOT / "examples/invalid/duplicate-across-sources.yaml"
    bad = docker.run(*run, input=bad_file.read_bytes(), check=False)
    assert bad.returncode != 0
    assert b"csat" in bad.stdout + bad.stderr


PROBE = r"""
import importlib.util, json, os, shutil, subprocess, sys, sysconfig
site = sysconfig.get_paths()["purelib"]
# The base's own interpreter, the one the venv was made from (pyvenv.cfg's `home`).
with open(os.path.join(sys.prefix, "pyvenv.cfg")) as cfg:
    home = next(l.split("=", 1)[1].strip() for l in cfg if l.split("=")[0].strip() == "home")
base = subprocess.run(
    [os.path.join(home, "python3"), "-c", "import importlib.util as u, json; "
     "print(json.dumps({m: u.find_spec(m) is not None for m in ('pip', 'setuptools', 'wheel')}))"],
    capture_output=True, text=True, check=True,
)
print(json.dumps({
    "base_modules": json.loads(base.stdout),
    "base_bin": sorted(e for e in os.listdir(home) if e.startswith(("pip", "easy_install"))),
    "prefix": sys.prefix,
    "modules": {m: importlib.util.find_spec(m) is not None
                for m in ("pip", "setuptools", "wheel", "tests", "pytest", "webhook")},
    "kubernetes_aio": os.path.exists(os.path.join(site, "kubernetes", "aio")),
    "tools": sorted(p for p in ("/bin/sh", "/bin/bash", "/bin/dash", "/usr/bin/busybox",
                                "/usr/bin/apt", "/usr/bin/apt-get", "/usr/bin/dpkg",
                                "/usr/bin/perl", "/usr/bin/env", "/usr/bin/sleep")
                    if os.path.lexists(p)),
    "compilers": {c: shutil.which(c) for c in ("gcc", "cc", "c++", "g++", "clang", "make")},
    "venv_bin": sorted(os.listdir(os.path.join(sys.prefix, "bin"))),
    "site": sorted(os.listdir(site)),
}))
"""


def test_runtime_holds_no_pip_no_compiler_no_tests(image: tuple[Docker, str]) -> None:
    docker, name = image
    done = docker.run(
        "run",
        "--rm",
        *AS_DEPLOYED,
        "--network",
        "none",
        "--entrypoint",
        "/opt/venv/bin/python",
        name,
        "-c",
        PROBE,
    )
    found = json.loads(done.stdout)
    assert found["prefix"] == "/opt/venv"
    assert found["modules"] == {
        "pip": False,
        "setuptools": False,
        "wheel": False,
        "tests": False,
        "pytest": False,
        "webhook": True,
    }
    assert found["compilers"] == dict.fromkeys(("gcc", "cc", "c++", "g++", "clang", "make"))
    assert not [entry for entry in found["venv_bin"] if entry.startswith("pip")]
    # Nor the base's interpreter: the Dockerfile uninstalls its pip and setuptools.
    assert found["base_modules"] == {"pip": False, "setuptools": False, "wheel": False}
    assert found["base_bin"] == []
    assert "tests" not in found["site"]
    # Nothing to run but the interpreter: no shell, no package manager, no coreutils.
    assert found["tools"] == []
    # The official client's asyncio copy of itself, which nothing imports, stays behind.
    assert found["kubernetes_aio"] is False


def test_no_shell_starts_in_the_image(image: tuple[Docker, str]) -> None:
    docker, name = image
    for shell in ("/bin/sh", "sh"):
        tried = docker.run(
            "run",
            "--rm",
            *AS_DEPLOYED,
            "--network",
            "none",
            "--entrypoint",
            shell,
            name,
            "-c",
            "echo hello",
            check=False,
        )
        assert tried.returncode != 0
        assert b"hello" not in tried.stdout


def test_the_image_is_at_most_200_mb(image: tuple[Docker, str]) -> None:
    docker, name = image
    size = int(docker.run("image", "inspect", "--format", "{{.Size}}", name).stdout)
    print(f"image size {size / 1e6:.1f} MB")
    assert size <= 200_000_000, size


def test_the_console_script_is_the_entrypoint_with_no_shell(image: tuple[Docker, str]) -> None:
    docker, name = image
    done = docker.run("run", "--rm", *AS_DEPLOYED, "--network", "none", name, "--help")
    assert b"validate" in done.stdout
