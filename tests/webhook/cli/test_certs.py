"""`feedbackstore-webhook certs`, end to end through the installed console script.

Its output directory must be a kustomize overlay that installs the manifests
with a Secret and a caBundle that belong together, and rerunning it must be
safe.
"""

from __future__ import annotations

import base64
import inspect
import pathlib
import stat
import subprocess
import sys
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support.manifest_render import MANIFESTS, NAMESPACE, find, kustomize

SCRIPT = pathlib.Path(sys.executable).parent / "feedbackstore-webhook"
OVERLAY_FILES = [
    "ca.crt",
    "ca.key",
    "cabundle-patch.yaml",
    "kustomization.yaml",
    "secret.yaml",
    "tls.crt",
    "tls.key",
]


def certs(*args: str, cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"console script not installed at {SCRIPT}"
    return subprocess.run(
        [str(SCRIPT), "certs", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


def issue(out_dir: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    result = certs("--out-dir", str(out_dir), "--base", str(MANIFESTS), *args)
    assert result.returncode == 0, result.stderr
    return result


def read_yaml(path: pathlib.Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def mode(path: pathlib.Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_it_writes_the_certificates_and_an_overlay(tmp_path: pathlib.Path) -> None:
    result = issue(tmp_path / "certs")
    assert sorted(p.name for p in (tmp_path / "certs").iterdir()) == OVERLAY_FILES
    assert result.stdout.startswith("created: ")
    assert f"next: kubectl apply -k {tmp_path / 'certs'}" in result.stdout


def test_every_file_holding_a_private_key_is_0600(tmp_path: pathlib.Path) -> None:
    issue(tmp_path)
    assert {name: mode(tmp_path / name) for name in OVERLAY_FILES} == {
        "ca.crt": 0o644,
        "ca.key": 0o600,
        "cabundle-patch.yaml": 0o644,
        "kustomization.yaml": 0o644,
        "secret.yaml": 0o600,
        "tls.crt": 0o644,
        "tls.key": 0o600,
    }


def test_the_secret_is_a_tls_secret_with_the_ca(tmp_path: pathlib.Path) -> None:
    issue(tmp_path)
    secret = read_yaml(tmp_path / "secret.yaml")
    assert secret["kind"] == "Secret"
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"]["name"] == "feedbackstore-webhook-tls"
    assert secret["metadata"]["namespace"] == NAMESPACE
    decoded = {key: base64.b64decode(value) for key, value in secret["data"].items()}
    assert decoded == {
        name: (tmp_path / name).read_bytes() for name in ("ca.crt", "tls.crt", "tls.key")
    }


def test_the_cabundle_patch_holds_the_ca(tmp_path: pathlib.Path) -> None:
    issue(tmp_path)
    patch = read_yaml(tmp_path / "cabundle-patch.yaml")
    assert patch["kind"] == "ValidatingWebhookConfiguration"
    names = [webhook["name"] for webhook in patch["webhooks"]]
    assert names == [
        "validate.feedbackstores.agents.ctxmesh.ai",
        "warn-delete.feedbackstores.agents.ctxmesh.ai",  # in-use warnings on DELETE
        "validate.agentdeployments.agents.ctxmesh.ai",  # the inline form
    ]
    for webhook in patch["webhooks"]:
        ca = base64.b64decode(webhook["clientConfig"]["caBundle"])
        assert ca == (tmp_path / "ca.crt").read_bytes()


def test_kubectl_kustomize_renders_the_overlay_with_a_matching_secret_and_cabundle(
    tmp_path: pathlib.Path,
) -> None:
    issue(tmp_path)
    docs = kustomize(tmp_path)
    webhooks = find(docs, "ValidatingWebhookConfiguration", "feedbackstore-webhook")["webhooks"]
    bundles = {base64.b64decode(webhook["clientConfig"].pop("caBundle")) for webhook in webhooks}
    (ca_bundle,) = bundles  # the same CA in every entry
    base_webhooks = find(
        kustomize(MANIFESTS), "ValidatingWebhookConfiguration", "feedbackstore-webhook"
    )["webhooks"]
    assert webhooks == base_webhooks, "the patch may only add caBundle"
    secret = find(docs, "Secret", "feedbackstore-webhook-tls")
    assert base64.b64decode(secret["data"]["ca.crt"]) == ca_bundle
    leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    ca = x509.load_pem_x509_certificate(ca_bundle)
    leaf.verify_directly_issued_by(ca)


def test_the_overlay_refers_to_the_base_relative_to_itself(tmp_path: pathlib.Path) -> None:
    issue(tmp_path / "deep" / "certs")
    (base, secret) = read_yaml(tmp_path / "deep" / "certs" / "kustomization.yaml")["resources"]
    assert (tmp_path / "deep" / "certs" / base).resolve() == MANIFESTS.resolve()
    assert secret == "secret.yaml"


def test_a_remote_base_is_kept_verbatim(tmp_path: pathlib.Path) -> None:
    remote = "https://github.com/ctxmesh/feedbackstore-webhook//manifests?ref=v0.1.0"
    result = certs("--out-dir", str(tmp_path), "--base", remote)
    assert result.returncode == 0, result.stderr
    assert read_yaml(tmp_path / "kustomization.yaml")["resources"][0] == remote


def test_a_base_without_a_kustomization_is_warned_about(tmp_path: pathlib.Path) -> None:
    result = certs("--out-dir", str(tmp_path / "out"), "--base", str(tmp_path / "nowhere"))
    assert result.returncode == 0
    assert "has no kustomization.yaml" in result.stderr


def test_running_it_again_keeps_everything(tmp_path: pathlib.Path) -> None:
    issue(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in OVERLAY_FILES}
    result = issue(tmp_path)
    assert result.stdout.startswith("kept: ")
    assert {name: (tmp_path / name).read_bytes() for name in OVERLAY_FILES} == before


def test_force_issues_a_new_ca_and_a_new_cabundle(tmp_path: pathlib.Path) -> None:
    first = issue(tmp_path)
    assert "warning" not in first.stderr, "a first CA is no rotation"
    before = read_yaml(tmp_path / "cabundle-patch.yaml")
    result = issue(tmp_path, "--force")
    assert result.stdout.startswith("created: ")
    assert 'Roll it out as docs/install.md "Rotate the CA" says' in result.stderr
    after = read_yaml(tmp_path / "cabundle-patch.yaml")
    assert after != before
    assert (
        base64.b64decode(after["webhooks"][0]["clientConfig"]["caBundle"])
        == (tmp_path / "ca.crt").read_bytes()
    )


def test_rsa_keys_and_a_custom_lifetime_on_request(tmp_path: pathlib.Path) -> None:
    issue(tmp_path, "--key-type", "rsa", "--days", "30")
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    assert isinstance(leaf.public_key(), rsa.RSAPublicKey)
    assert (leaf.not_valid_after_utc - leaf.not_valid_before_utc).days == 30


def test_a_custom_namespace_and_service_name_the_sans_and_the_secret(
    tmp_path: pathlib.Path,
) -> None:
    result = certs("--namespace", "hooks", "--service", "fs", "--out-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "fs",
        "fs.hooks",
        "fs.hooks.svc",
        "fs.hooks.svc.cluster.local",
    ]
    assert read_yaml(tmp_path / "secret.yaml")["metadata"]["namespace"] == "hooks"
    assert "write an overlay that moves them too" in result.stderr


def sans(path: pathlib.Path) -> tuple[list[str], list[str]]:
    """(DNS names, IP addresses) of the certificate at `path`, in order."""
    leaf = x509.load_pem_x509_certificate(path.read_bytes())
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return names.get_values_for_type(x509.DNSName), [
        str(ip) for ip in names.get_values_for_type(x509.IPAddress)
    ]


SERVICE_NAMES = [
    "feedbackstore-webhook",
    "feedbackstore-webhook.feedbackstore-system",
    "feedbackstore-webhook.feedbackstore-system.svc",
    "feedbackstore-webhook.feedbackstore-system.svc.cluster.local",
]


def test_host_adds_ip_and_dns_sans_after_the_service_names(tmp_path: pathlib.Path) -> None:
    result = issue(tmp_path, "--host", "127.0.0.1", "--host", "::1", "--host", "hooks.example.com")
    assert sans(tmp_path / "tls.crt") == (
        [*SERVICE_NAMES, "hooks.example.com"],
        ["127.0.0.1", "::1"],
    )
    listed = "svc.cluster.local, 127.0.0.1, ::1, hooks.example.com (ecdsa)"
    assert listed in result.stdout


def test_a_host_given_twice_or_equal_to_a_service_name_is_one_san(tmp_path: pathlib.Path) -> None:
    issue(tmp_path, "--host", "127.0.0.1", "--host", "127.0.0.1", "--host", "feedbackstore-webhook")
    assert sans(tmp_path / "tls.crt") == (SERVICE_NAMES, ["127.0.0.1"])


def test_a_new_host_renews_the_serving_certificate_from_the_same_ca(
    tmp_path: pathlib.Path,
) -> None:
    issue(tmp_path)
    ca_before = (tmp_path / "ca.crt").read_bytes()
    result = issue(tmp_path, "--host", "127.0.0.1")
    assert result.stdout.startswith("renewed: ")
    assert (tmp_path / "ca.crt").read_bytes() == ca_before
    assert sans(tmp_path / "tls.crt") == (SERVICE_NAMES, ["127.0.0.1"])
    leaf = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_before))
    secret = read_yaml(tmp_path / "secret.yaml")
    assert base64.b64decode(secret["data"]["tls.crt"]) == (tmp_path / "tls.crt").read_bytes()


def test_the_same_hosts_again_keep_everything(tmp_path: pathlib.Path) -> None:
    issue(tmp_path, "--host", "127.0.0.1")
    before = (tmp_path / "tls.crt").read_bytes()
    assert issue(tmp_path, "--host", "127.0.0.1").stdout.startswith("kept: ")
    assert (tmp_path / "tls.crt").read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            ["--days", "0"], "--days must be between 1 and 3650", id="a zero-day lifetime"
        ),
        pytest.param(
            ["--days", "99999"], "--days must be between 1 and 3650", id="a lifetime past the CA"
        ),
        pytest.param(["--days", "ten"], "invalid int value", id="a lifetime that is not a number"),
        pytest.param(["--key-type", "dsa"], "invalid choice", id="an unknown key type"),
        pytest.param(
            ["--namespace", "Bad NS"],
            "--namespace must be a Kubernetes name",
            id="a namespace with a space",
        ),
        pytest.param(
            ["--service", "a.b"], "--service must be a Kubernetes name", id="a dotted service name"
        ),
        pytest.param(
            ["--service", "x" * 64],
            "--service must be a Kubernetes name",
            id="a 64-character service name",
        ),
        pytest.param(
            ["--namespace", ""], "--namespace must be a Kubernetes name", id="an empty namespace"
        ),
        pytest.param(
            ["--host", "bad host"],
            "certs: --host 'bad host' is not a DNS name or IP address",
            id="a host with a space",
        ),
        pytest.param(
            ["--host", ""], "certs: --host '' is not a DNS name or IP address", id="an empty host"
        ),
        pytest.param(
            ["--host", "127.0.0.1:8443"],
            "certs: --host '127.0.0.1:8443' is not a DNS name or IP address",
            id="a host with a port",
        ),
        pytest.param(
            ["--host", "https://hooks.example.com"],
            "is not a DNS name or IP address",
            id="a URL instead of a host",
        ),
    ],
)
def test_bad_arguments_exit_2_with_a_message(
    tmp_path: pathlib.Path, args: list[str], message: str
) -> None:
    result = certs("--out-dir", str(tmp_path / "out"), *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert not (tmp_path / "out").exists()


def test_an_out_dir_that_cannot_be_created_exits_2_naming_it(tmp_path: pathlib.Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    result = certs("--out-dir", str(blocker / "certs"))
    assert result.returncode == 2
    assert f"cannot write to {blocker / 'certs'}" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_cli_defaults_are_the_names_the_manifests_and_dev_certificates_use() -> None:
    from webhook.cli.main import build_parser
    from webhook.install import NAMESPACE as DEFAULT_NAMESPACE
    from webhook.install import SERVICE as DEFAULT_SERVICE

    args = build_parser().parse_args(["certs"])
    assert (args.namespace, args.service) == (DEFAULT_NAMESPACE, DEFAULT_SERVICE)
    assert (DEFAULT_NAMESPACE, DEFAULT_SERVICE) == (NAMESPACE, "feedbackstore-webhook")


def test_the_cli_defaults_are_the_issuers() -> None:
    from webhook.certs.issue import SERVING_DAYS, KeyType, issue_serving
    from webhook.cli.main import build_parser

    args = build_parser().parse_args(["certs"])
    defaults = inspect.signature(issue_serving).parameters
    assert args.days == SERVING_DAYS == defaults["days"].default
    assert KeyType(args.key_type) is defaults["key_type"].default


def test_building_the_parser_loads_no_cryptography() -> None:
    """Every command builds the `certs` parser; its defaults must not cost `validate` a
    cryptography import."""
    code = (
        "import sys\n"
        "from webhook.cli.main import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
