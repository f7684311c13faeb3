"""The project's image and a Docker daemon to run it, for the `node` tests.

tests/node/image.sh builds the image (a stand-in base from Debian packages,
then the unchanged Dockerfile), cached by content; this module finds or starts
a Docker daemon and makes sure it holds the image of the tarball the script made
when the session started (tests/support/prebuild.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pathlib
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import IO

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
IMAGE_SCRIPT = HERE / "image.sh"


class NodeUnavailableError(Exception):
    """A prerequisite of the `node` tests is missing on this machine."""


def image_name() -> str:
    """The image the Deployments run (what image.sh tags)."""
    for line in (ROOT / "manifests/webhook/deployment.yaml").read_text().splitlines():
        if line.strip().startswith("image:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError("manifests/webhook/deployment.yaml names no image")


def cache_root() -> pathlib.Path:
    env = os.environ.get("FEEDBACKSTORE_IMAGE_CACHE")
    if env:
        return pathlib.Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(pathlib.Path.home() / ".cache")
    return pathlib.Path(xdg) / "feedbackstore-webhook/image"


def docker_cli() -> str:
    found = shutil.which("/usr/bin/docker") or shutil.which("docker")
    if found is None:
        raise NodeUnavailableError("no docker CLI (Debian: docker.io)")
    return found


class Docker:
    """A Docker daemon: the one the environment names, or one of our own."""

    def __init__(self) -> None:
        self.cli = docker_cli()
        self.env = dict(os.environ)
        self._process: subprocess.Popen[bytes] | None = None
        self._users: IO[str] | None = None

    def run(
        self, *args: str, check: bool = True, input: bytes | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        done = subprocess.run(
            [self.cli, *args], env=self.env, input=input, capture_output=True, timeout=timeout
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"docker {' '.join(args)} exited {done.returncode}:\n"
                f"{done.stderr.decode(errors='replace')[-3000:]}"
            )
        return done

    def _answers(self) -> bool:
        return self.run("info", check=False, timeout=30).returncode == 0

    def start(self) -> None:
        """Use the daemon the environment names, or share one of ours between sessions.

        Every pytest process (each xdist worker) that uses our daemon holds a
        shared lock on `users.lock` while it does; the last one to leave stops it.
        """
        if self._answers():
            return
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise NodeUnavailableError("no Docker daemon answers, and no dockerd (docker.io)")
        self._run_dir.mkdir(parents=True, exist_ok=True)
        # The same data root image.sh uses when it starts its own: one image store.
        self.env["DOCKER_HOST"] = f"unix://{self._run_dir}/docker.sock"
        with self._locked("start.lock", fcntl.LOCK_EX):
            self._users = (self._run_dir / "users.lock").open("a")
            fcntl.flock(self._users, fcntl.LOCK_SH)
            if self._answers():
                return
            log = (self._run_dir / "dockerd.log").open("ab")
            self._process = subprocess.Popen(
                [
                    dockerd,
                    "--host",
                    self.env["DOCKER_HOST"],
                    "--data-root",
                    str(self._run_dir / "data"),
                    "--exec-root",
                    str(self._run_dir / "exec"),
                    "--pidfile",
                    str(self._run_dir / "dockerd.pid"),
                    "--bridge=none",
                    "--iptables=false",
                    "--ip-masq=false",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            log.close()
            deadline = time.monotonic() + 30
            while not self._answers():
                if self._process.poll() is not None or time.monotonic() > deadline:
                    tail = (self._run_dir / "dockerd.log").read_text(errors="replace")[-2000:]
                    self.stop()
                    raise RuntimeError(f"dockerd did not start:\n{tail}")
                time.sleep(0.2)

    @property
    def _run_dir(self) -> pathlib.Path:
        return cache_root() / "dockerd"

    @contextlib.contextmanager
    def _locked(self, name: str, mode: int) -> Iterator[None]:
        with (self._run_dir / name).open("a") as handle:
            fcntl.flock(handle, mode)
            yield

    def stop(self) -> None:
        """Leave our daemon; the last session to leave stops it (by its pidfile)."""
        if self._users is None:
            return
        with self._locked("start.lock", fcntl.LOCK_EX):
            fcntl.flock(self._users, fcntl.LOCK_UN)
            try:
                fcntl.flock(self._users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                last = False  # another session still uses the daemon
            else:
                last = True
            self._users.close()
            self._users = None
            if last:
                self._stop_daemon()
        if self._process is not None and self._process.poll() is not None:
            self._process = None

    def _stop_daemon(self) -> None:
        pidfile = self._run_dir / "dockerd.pid"
        try:
            pid = int(pidfile.read_text().strip())
        except (OSError, ValueError):
            return
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
        self._release_mounts()

    def _release_mounts(self) -> None:
        """dockerd leaves its bind mount of the host's network namespace behind when it stops, and
        a cache folder with a mount in it cannot be deleted ("Device or resource busy")."""
        for netns in (self._run_dir / "exec" / "netns").glob("*"):
            if os.path.ismount(netns):
                subprocess.run(["umount", str(netns)], check=False, timeout=30)

    def ensure_image(self, tarball: pathlib.Path) -> str:
        """Make the daemon hold the image of `tarball` (image.sh's, built when the session
        started); the image's name."""
        name = image_name()
        # A cached tarball from an earlier run: the daemon's image may be another build.
        wanted = self.tarball_image_id(tarball)
        if self.image_id(name) != wanted:
            self.run("load", "-i", str(tarball), timeout=600)
        assert self.image_id(name) == wanted, (name, wanted, self.image_id(name))
        return name

    def has_image(self, name: str) -> bool:
        return self.image_id(name) is not None

    def image_id(self, name: str) -> str | None:
        done = self.run("image", "inspect", "--format", "{{.Id}}", name, check=False)
        return done.stdout.decode().strip() if done.returncode == 0 else None

    @staticmethod
    def tarball_image_id(tarball: pathlib.Path) -> str:
        import json
        import tarfile

        with tarfile.open(tarball) as tar:
            member = tar.extractfile("manifest.json")
            assert member is not None
            config = json.load(member)[0]["Config"]
        return "sha256:" + pathlib.PurePosixPath(config).name.removesuffix(".json")
