"""What a kubectl user sees, run for real: kubectl in one namespace, its output as a console.

- `User` runs kubectl the way a user in namespace `agents` would (the context's
  namespace, the repository's `examples/` as files), and returns each `Step`
  with the namespace, the staging directory and the webhook's port normalised,
  so the text is the same on every run.
- `console()` renders steps the way a terminal shows them (kubectl writes
  warnings while the request runs, then the result or the error).
- The docs section "What a `kubectl apply` user sees" (docs/webhook.md) is made of
  console blocks, each opening with a `# …` line; `matches_docs()` compares a block
  with what the server printed (FEEDBACKSTORE_WRITE_README=1 rewrites the block in
  its page from the run instead, like a snapshot update).
- `reviews_answered()` reads the webhook's own counter, to tell whether
  kube-apiserver called it at all; `slow_webhook()` is a TLS endpoint that
  answers too late, `registered_but_down()` a registered webhook that was killed.
- The fixtures both kubectl modules use (`server`, `user`, `webhook`), imported by
  their function names; and the situations both modules put to kubectl (every way
  of creating or updating, `kubectl edit`), each module with its own expected text.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import pathlib
import re
import shlex
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.docs.pages import page
from tests.docs.pages import section as page_section
from tests.kube.cluster import (
    REPO,
    WebhookServer,
    eventually,
    new_namespace,
    registered,
    registration,
    serving_files,
    webhook_server,
)
from tests.kube.controlplane import ControlPlane, free_port

# A docs section: its page under docs/ and its heading line.
SECTION = ("webhook.md", "## What a `kubectl apply` user sees")
EXAMPLES = REPO / "examples"
# The namespace the docs' user works in; every test namespace is shown as this.
SHOWN_NAMESPACE = "agents"
# The port a transcript shows for a webhook on 127.0.0.1 (the real one is free-picked).
SHOWN_PORT = "8443"

# The opening lines of the docs' console blocks: one per situation a user meets.
TODAY = "# the CRD as ctxmesh ships it today (no CEL rules), this webhook registered"
TODAY_LEGACY = (
    "# the same, duplicate-across-sources created (with a finalizer) before the webhook was"
    " registered; the webhook now registered (failurePolicy: Fail) but not running"
)
UNKNOWN_FIELDS = "# a typo: kube-apiserver decodes before any rule or webhook runs"
TODAY_FAILING = "# the webhook registered (failurePolicy: Fail, timeoutSeconds: 5) but not running"
SHIPPED = "# the CRD from manifests/crd/ (CEL rules), this webhook registered"
CHANGES_BLOCK = "# change-impact warnings: each allowed UPDATE says what it does to score ingestion"
BLOCKS = (TODAY, TODAY_LEGACY, UNKNOWN_FIELDS, TODAY_FAILING, SHIPPED, CHANGES_BLOCK)

# What `kubectl edit` puts at the top of every buffer.
EDIT_HEADER = (
    "# Please edit the object below. Lines beginning with a '#' will be ignored,\n"
    "# and an empty file will abort the edit. If an error occurs while saving this file will be\n"
    "# reopened with the relevant failures.\n"
    "#\n"
)
EDIT_CANCELLED = (
    'error: feedbackstores.agents.ctxmesh.ai "support-feedback" is invalid\n'
    'A copy of your changes has been stored to "kubectl-edit-N.yaml"\n'
    "error: Edit cancelled, no valid changes were saved.\n"
)

# The repository's examples, as the docs' commands name them.
ACROSS = "examples/invalid/duplicate-across-sources.yaml"
CHANNEL = "examples/invalid/duplicate-channel.yaml"
ENUMS = "examples/invalid/wrong-case-enum.yaml"
TYPO = "examples/invalid/typo-no-source.yaml"
MINIMAL = "examples/minimal.yaml"

# The webhook's warning for a Monitor-mode store.
MONITOR_WARNING = (
    "Warning: spec.mode: Monitor relays undeclared score names instead of rejecting them (422); "
    "use only to migrate\n"
)
# The webhook's change-impact warning for an UPDATE from Enforce to Monitor.
TO_MONITOR_WARNING = (
    "Warning: mode Enforce -> Monitor: the gateway relays undeclared score names, "
    "read as unattributed\n"
)
ADD_THUMBS = '[{"op":"add","path":"/spec/human/scores/-","value":{"name":"thumbs"}}]'

# Every way of creating the ACROSS example (each a `command` parameter).
CREATE_ACROSS = [
    f"kubectl create -f {ACROSS}",
    f"kubectl apply -f {ACROSS}",
    f"kubectl apply --server-side -f {ACROSS}",
    f"kubectl apply --dry-run=server -f {ACROSS}",
    f"kubectl create --dry-run=server -f {ACROSS}",
]
# Every way of updating the stored MINIMAL to a second `thumbs` score
# (`command`, `add_thumbs_to_stdin` parameters; see `stored_minimal`).
UPDATE_THUMBS_TWICE = [
    pytest.param("kubectl replace -f -", True, id="replace"),
    pytest.param(
        f"kubectl patch fs support-feedback --type=json -p '{ADD_THUMBS}'", False, id="json patch"
    ),
    pytest.param(
        "kubectl patch fs support-feedback --type=merge -p "
        """'{"spec":{"human":{"scores":[{"name":"thumbs"},{"name":"thumbs"}]}}}'""",
        False,
        id="merge patch",
    ),
]


@dataclass(frozen=True)
class Step:
    """One kubectl command as shown to the user, and what it printed (normalised)."""

    command: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def printed(self) -> tuple[int, str, str]:
        return self.returncode, self.stdout, self.stderr

    def console(self) -> list[str]:
        """Terminal order: warnings (written during the request), the result, then errors."""
        errors = self.stderr.splitlines()
        warnings = [line for line in errors if line.startswith("Warning: ")]
        rest = [line for line in errors if not line.startswith("Warning: ")]
        lines = [f"$ {self.command}", *warnings, *self.stdout.splitlines(), *rest]
        return [line.rstrip() for line in lines]


Shown = Step | str  # a step, or a `# …` line between steps


def failed(stderr: str) -> tuple[int, str, str]:
    """What `Step.printed` is for a refused command: exit 1, nothing on stdout."""
    return 1, "", stderr


def succeeded(stdout: str, warnings: str = "") -> tuple[int, str, str]:
    return 0, stdout, warnings


def webhook_call_failed(path: str, timeout: int, error: str) -> str:
    """kube-apiserver's text when it cannot get an answer from our webhook (failurePolicy: Fail)."""
    return (
        f'Error from server (InternalError): error when creating "{path}": Internal error occurred:'
        ' failed calling webhook "validate.feedbackstores.agents.ctxmesh.ai": failed to call'
        f' webhook: Post "https://127.0.0.1:{SHOWN_PORT}/validate?timeout={timeout}s": {error}\n'
    )


def console(items: Sequence[Shown]) -> str:
    """The console block text (without the fences) for steps and comment lines."""
    lines: list[str] = []
    for item in items:
        lines.extend([item] if isinstance(item, str) else item.console())
    return "\n".join(lines) + "\n"


class User:
    """kubectl as a user whose current context's namespace is a test namespace.

    The repository's `examples/` are staged with that namespace, so commands
    read like the docs' (`kubectl apply -f examples/minimal.yaml`).
    """

    def __init__(self, plane: ControlPlane, namespace: str, workdir: pathlib.Path) -> None:
        self.plane = plane
        self.namespace = namespace
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        config = yaml.safe_load(plane.kubeconfig.read_text())
        config["contexts"][0]["context"]["namespace"] = namespace
        self.kubeconfig = workdir / "kubeconfig.yaml"
        self.kubeconfig.write_text(yaml.safe_dump(config))
        self.kubeconfig.chmod(0o600)
        for source in sorted(EXAMPLES.rglob("*.yaml")):
            staged = workdir / source.relative_to(REPO)
            staged.parent.mkdir(parents=True, exist_ok=True)
            document = yaml.safe_load(source.read_text())
            document["metadata"]["namespace"] = namespace
            staged.write_text(yaml.safe_dump(document, sort_keys=False))
        self.ports: list[int] = []  # webhook ports shown as SHOWN_PORT

    def document(self, path: str) -> dict[str, Any]:
        """A staged example, to change before sending it by stdin."""
        loaded: dict[str, Any] = yaml.safe_load((self.workdir / path).read_text())
        return loaded

    def editor(self, spec: dict[str, Any]) -> pathlib.Path:
        """An $EDITOR for `kubectl edit`: sets `spec`, and keeps every buffer it is shown.

        It writes the same text on every round, so when kubectl reopens the
        buffer with the server's errors, the second save is unchanged and
        kubectl gives up, as it does for a user who saves without fixing.
        """
        script = self.workdir / "editor.py"
        script.write_text(
            f"#!{sys.executable}\n"
            "import json, pathlib, sys, yaml\n"
            "buffer = pathlib.Path(sys.argv[-1])\n"
            f"with open({str(self.workdir / 'buffers.jsonl')!r}, 'a') as seen:\n"
            "    seen.write(json.dumps(buffer.read_text()) + '\\n')\n"
            "document = yaml.safe_load(buffer.read_text())\n"
            f"document['spec'] = json.loads({json.dumps(spec)!r})\n"
            "buffer.write_text(yaml.safe_dump(document))\n"
        )
        script.chmod(0o700)
        return script

    def edit(
        self, target: str, spec: dict[str, Any], monkeypatch: pytest.MonkeyPatch
    ) -> tuple[Step, list[str]]:
        """`kubectl edit TARGET` setting `spec`: the step, and each buffer the editor was shown."""
        monkeypatch.setenv("EDITOR", str(self.editor(spec)))
        monkeypatch.setenv("TMPDIR", str(self.workdir))  # kubectl's copy of a failed edit
        step = self.run(f"kubectl edit {target}")
        lines = (self.workdir / "buffers.jsonl").read_text().splitlines()
        return step, [self.normalise(json.loads(line)) for line in lines]

    def run(
        self, command: str, stdin: dict[str, Any] | None = None, *, timeout: float = 60.0
    ) -> Step:
        """Run `command` (a `kubectl …` line as the docs show it) and normalise its output."""
        words = shlex.split(command)
        assert words[0] == "kubectl", command
        args = [self._staged(word) for word in words[1:]]
        result = self.plane.kubectl(
            *args,
            stdin=None if stdin is None else yaml.safe_dump(stdin),
            kubeconfig=self.kubeconfig,
            timeout=timeout,
        )
        return Step(
            command, result.returncode, self.normalise(result.stdout), self.normalise(result.stderr)
        )

    def _staged(self, word: str) -> str:
        path = self.workdir / word
        return str(path) if word.endswith(".yaml") and path.exists() else word

    def normalise(self, text: str) -> str:
        text = text.replace(f"{self.workdir}/", "").replace(self.namespace, SHOWN_NAMESPACE)
        text = re.sub(r"kubectl-edit-\d+\.yaml", "kubectl-edit-N.yaml", text)
        for port in self.ports:
            text = text.replace(f"127.0.0.1:{port}", f"127.0.0.1:{SHOWN_PORT}")
        return text


def stored_minimal(user: User, add_thumbs_to_stdin: bool) -> dict[str, Any] | None:
    """Apply MINIMAL; the stdin of an UPDATE_THUMBS_TWICE command (MINIMAL with a second
    `thumbs` score, or None when the command needs none)."""
    user.run(f"kubectl apply -f {MINIMAL}")
    stdin = None
    if add_thumbs_to_stdin:
        stdin = user.document(MINIMAL)
        stdin["spec"]["human"]["scores"].append({"name": "thumbs"})
    return stdin


def edit_is_reopened_then_cancelled(
    user: User, monkeypatch: pytest.MonkeyPatch, errors: str, warnings: str = ""
) -> None:
    """`kubectl edit` of the stored MINIMAL to `thumbs` twice: the buffer is reopened with
    `errors` (the `# * …` comment lines) and, saved unchanged, the edit is cancelled."""
    user.run(f"kubectl apply -f {MINIMAL}")
    twice = {"mode": "Enforce", "human": {"scores": [{"name": "thumbs"}, {"name": "thumbs"}]}}
    step, (first, second) = user.edit("fs support-feedback", twice, monkeypatch)
    assert step.printed == failed(warnings + EDIT_CANCELLED), "saved unchanged: cancelled"
    assert first.startswith(EDIT_HEADER + "apiVersion: ")
    assert second.startswith(
        EDIT_HEADER
        + '# feedbackstores.agents.ctxmesh.ai "support-feedback" was not valid:\n'
        + errors
        + "#\napiVersion: "
    )


def register(
    plane: ControlPlane, url: str, ca: bytes, namespace: str, *, wait: bool = True, **overrides: Any
) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """The shipped registration pointed at `url` (entry fields `overrides`), for a `with`."""
    name = f"kubectl-test-{uuid.uuid4().hex[:8]}"
    return registered(plane, registration(name, url, ca, **overrides), namespace, wait=wait)


def reviews_answered(server: WebhookServer) -> float:
    """How many AdmissionReviews the webhook has answered (its own counter, all verdicts)."""
    context = ssl.create_default_context(cadata=server.ca_pem.decode())
    url = f"https://127.0.0.1:{server.port}/metrics"
    with urllib.request.urlopen(url, context=context, timeout=10) as response:
        text = response.read().decode()
    samples = re.findall(
        r"^feedbackstore_webhook_admission_requests_total\{[^}]*\} (\S+)$", text, re.M
    )
    return sum(float(value) for value in samples)


@contextlib.contextmanager
def registered_but_down(plane: ControlPlane, user: User, directory: pathlib.Path) -> Iterator[None]:
    """A webhook registered for `user`'s namespace (live), then killed: kube-apiserver's
    calls to it are refused. Its port is shown as SHOWN_PORT."""
    with webhook_server(directory) as down:
        user.ports.append(down.port)
        with register(plane, down.url, down.ca_pem, user.namespace):
            down.process.kill()
            yield


@contextlib.contextmanager
def slow_webhook(directory: pathlib.Path, delay: float) -> Iterator[tuple[str, bytes, int]]:
    """A TLS endpoint on 127.0.0.1 that reads the review and answers only after `delay` s.

    Yields (url, CA PEM, port). Its late answer is a 500, so a test can never
    pass by a late answer being accepted.
    """
    cert, key, ca = serving_files(directory)

    class Late(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            time.sleep(delay)
            self.send_response(500)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Late)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = int(server.server_address[1])
    try:
        yield f"https://127.0.0.1:{port}/validate", ca, port
    finally:
        server.shutdown()
        server.server_close()


# Our server with a fault injected into its verdict: every review raises inside the handler.
_FAULTY_SERVE = """\
import sys
from webhook.cli.main import main
from webhook.server import admission_endpoint

def broken(request):
    raise RuntimeError("a fault injected into the verdict")

admission_endpoint.decide = broken
sys.exit(main(["serve", *sys.argv[1:]]))
"""


@contextlib.contextmanager
def faulty_webhook(directory: pathlib.Path) -> Iterator[tuple[str, bytes, int, list[str]]]:
    """The real `serve`, failing while it judges; yields (url, CA PEM, port, its log lines so
    far, read when it has stopped)."""
    cert, key, ca = serving_files(directory)
    port = free_port()
    log = directory / "faulty.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _FAULTY_SERVE,
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--tls-cert-file",
                str(cert),
                "--tls-private-key-file",
                str(key),
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    lines: list[str] = []
    try:
        eventually(lambda: '"msg":"serving"' in log.read_text(), what="the faulty server serving")
        yield f"https://127.0.0.1:{port}/validate", ca, port, lines
    finally:
        process.terminate()
        process.wait(30)
        lines.extend(log.read_text().splitlines())


# -- fixtures, imported by their function names into the kubectl modules -------------


@pytest.fixture(scope="module", name="server")
def _server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebhookServer]:
    with webhook_server(tmp_path_factory.mktemp("webhook")) as server:
        yield server


@pytest.fixture(name="user")
def _user(control_plane: ControlPlane, tmp_path: pathlib.Path) -> User:
    return User(control_plane, new_namespace(control_plane), tmp_path / "user")


@pytest.fixture(name="webhook")
def _webhook(control_plane: ControlPlane, server: WebhookServer, user: User) -> Iterator[None]:
    with register(control_plane, server.url, server.ca_pem, user.namespace):
        yield


# -- the docs --------------------------------------------------------------------------


def docs_blocks(section: tuple[str, str] = SECTION) -> list[str]:
    """The console blocks of a docs section, in order (text between the fences)."""
    return re.findall(r"^```console\n(.*?)^```$", page_section(*section), re.S | re.M)


def docs_block(first_line: str, section: tuple[str, str] = SECTION) -> str:
    found = [block for block in docs_blocks(section) if block.splitlines()[0] == first_line]
    assert len(found) == 1, f"docs {section!r}: {len(found)} blocks open with {first_line!r}"
    return found[0]


WRITE_README = "FEEDBACKSTORE_WRITE_README"


def matches_docs(shown: str, section: tuple[str, str] = SECTION) -> bool:
    """Whether the docs block opening like `shown` is `shown`; rewritten in its page instead
    on request."""
    block = docs_block(shown.splitlines()[0], section)
    if os.environ.get(WRITE_README) == "1" and block != shown:
        path = page(section[0])
        text = path.read_text(encoding="utf-8")
        start = text.index(section[1])
        at = text.index(f"```console\n{block}```", start)
        path.write_text(
            text[:at] + f"```console\n{shown}```" + text[at + len(block) + 14 :], encoding="utf-8"
        )
        return True
    return block == shown
