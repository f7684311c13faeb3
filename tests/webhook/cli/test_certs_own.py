"""`feedbackstore-webhook certs --ca-bundle --cert --key`: a certificate of your own goes through
the same overlay as one the command issues, with the bundle in every entry's caBundle, and is
refused (exit 2, nothing written) where kube-apiserver would refuse to call the webhook with it."""

from __future__ import annotations

import base64
import datetime as dt
import pathlib

import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from tests.support.manifest_render import MANIFESTS, find, kustomize
from tests.webhook.cli.test_certs import certs, read_yaml
from webhook import install

DIALLED = f"{install.SERVICE}.{install.NAMESPACE}.svc"


def write(directory: pathlib.Path, **files: bytes) -> dict[str, pathlib.Path]:
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return {name: directory / name for name in files}


def own_files(
    tmp_path: pathlib.Path, ca: trustme.CA, *names: str, **issue: object
) -> dict[str, pathlib.Path]:
    leaf = ca.issue_cert(*(names or (DIALLED,)), **issue)  # type: ignore[arg-type]
    return write(
        tmp_path / "mine",
        ca=ca.cert_pem.bytes(),
        cert=b"".join(blob.bytes() for blob in leaf.cert_chain_pems),
        key=leaf.private_key_pem.bytes(),
    )


def install_own(
    out_dir: pathlib.Path, ca: pathlib.Path, cert: pathlib.Path, key: pathlib.Path, *args: str
) -> tuple[int, str, str]:
    result = certs(
        "--out-dir", str(out_dir), "--base", str(MANIFESTS),
        "--ca-bundle", str(ca), "--cert", str(cert), "--key", str(key), *args,
    )  # fmt: skip
    return result.returncode, result.stdout, result.stderr


def entry_bundles(out_dir: pathlib.Path) -> dict[str, bytes]:
    webhooks = find(kustomize(out_dir), "ValidatingWebhookConfiguration", "feedbackstore-webhook")
    return {
        w["name"]: base64.b64decode(w["clientConfig"]["caBundle"]) for w in webhooks["webhooks"]
    }


def test_your_ca_goes_into_every_entry_and_your_pair_into_the_secret(
    tmp_path: pathlib.Path,
) -> None:
    ca = trustme.CA()
    mine = own_files(tmp_path, ca)
    code, out, err = install_own(tmp_path / "certs", mine["ca"], mine["cert"], mine["key"])
    assert code == 0, err
    assert f"next: kubectl apply -k {tmp_path / 'certs'}" in out
    assert entry_bundles(tmp_path / "certs") == dict.fromkeys(install.ENTRIES, ca.cert_pem.bytes())
    secret = find(kustomize(tmp_path / "certs"), "Secret", install.SECRET)
    assert {k: base64.b64decode(v) for k, v in secret["data"].items()} == {
        "ca.crt": mine["ca"].read_bytes(),
        "tls.crt": mine["cert"].read_bytes(),
        "tls.key": mine["key"].read_bytes(),
    }
    assert not (tmp_path / "certs" / "ca.key").exists(), "no CA key is made for your CA"


def test_a_bundle_of_two_cas_is_trusted_whole_by_every_entry(tmp_path: pathlib.Path) -> None:
    """A CA rotation's first step: the old CA's certificate still served, both CAs trusted."""
    old, new = trustme.CA(), trustme.CA()
    mine = own_files(tmp_path, old)
    both = write(tmp_path / "rotation", both=old.cert_pem.bytes() + new.cert_pem.bytes())["both"]
    code, _, err = install_own(tmp_path / "certs", both, mine["cert"], mine["key"])
    assert code == 0, err
    assert set(entry_bundles(tmp_path / "certs").values()) == {both.read_bytes()}


def test_a_certificate_from_an_intermediate_ca_verifies_through_it(
    tmp_path: pathlib.Path,
) -> None:
    root = trustme.CA()
    mine = own_files(tmp_path, root.create_child_ca())
    root_only = write(tmp_path / "root", ca=root.cert_pem.bytes())["ca"]
    code, _, err = install_own(tmp_path / "certs", root_only, mine["cert"], mine["key"])
    assert code == 0, err


def test_the_files_may_be_those_the_overlay_already_holds(tmp_path: pathlib.Path) -> None:
    """Every step of a CA rotation rewrites certs/ from files some of which are in it."""
    ca = trustme.CA()
    mine = own_files(tmp_path, ca)
    out = tmp_path / "certs"
    assert install_own(out, mine["ca"], mine["cert"], mine["key"])[0] == 0
    code, _, err = install_own(out, out / "ca.crt", out / "tls.crt", out / "tls.key")
    assert code == 0, err
    assert (out / "tls.crt").read_bytes() == mine["cert"].read_bytes()


def _client_only_certificate() -> tuple[bytes, bytes, bytes]:
    """(CA, leaf, key): a leaf for the Service's name whose extended key usage is clientAuth
    alone (trustme issues serverAuth ones only)."""
    issuer_key = ec.generate_private_key(ec.SECP256R1())
    issuer_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "issuer")])
    now = dt.datetime.now(dt.UTC)
    issuer = (
        x509.CertificateBuilder()
        .subject_name(issuer_name)
        .issuer_name(issuer_name)
        .public_key(issuer_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(issuer_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, DIALLED)]))
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=10))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(DIALLED)]), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(issuer_key, hashes.SHA256())
    )
    pem_key = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    return issuer.public_bytes(Encoding.PEM), leaf.public_bytes(Encoding.PEM), pem_key


def _case(tmp_path: pathlib.Path, case: str) -> tuple[dict[str, pathlib.Path], list[str]]:
    """(the files and extra arguments) for each way a certificate of your own is refused."""
    ca = trustme.CA()
    past = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    if case == "other-ca":
        mine = own_files(tmp_path, ca)
        write(tmp_path / "mine", ca=trustme.CA().cert_pem.bytes())
    elif case == "wrong-name":
        mine = own_files(tmp_path, ca, "other.feedbackstore-system.svc")
    elif case == "wrong-key":
        mine = own_files(tmp_path, ca)
        write(tmp_path / "mine", key=ca.issue_cert(DIALLED).private_key_pem.bytes())
    elif case == "expired":
        mine = own_files(tmp_path, ca, not_before=past, not_after=past + dt.timedelta(days=1))
    elif case == "client-only":
        issuer, cert, key = _client_only_certificate()
        mine = write(tmp_path / "mine", ca=issuer, cert=cert, key=key)
    elif case == "not-pem":
        mine = own_files(tmp_path, ca)
        write(tmp_path / "mine", ca=b"not a certificate\n")
    elif case == "missing-host":
        return own_files(tmp_path, ca), ["--host", "127.0.0.1"]
    else:
        return own_files(tmp_path, ca), ["--force"]
    return mine, []


@pytest.mark.parametrize(
    ("case", "message"),
    [
        pytest.param(
            "other-ca", "does not verify to a CA of --ca-bundle", id="a CA that did not issue it"
        ),
        pytest.param(
            "wrong-name",
            f"--cert is not valid for {DIALLED}, the name kube-apiserver calls: "
            f"x509: certificate is valid for other.feedbackstore-system.svc, not {DIALLED}",
            id="a certificate for another Service",
        ),
        pytest.param(
            "wrong-key", "--key is not the key of --cert", id="the key of another certificate"
        ),
        pytest.param("expired", "expired on", id="an expired certificate"),
        pytest.param("client-only", "leaves out serverAuth", id="a client certificate"),
        pytest.param(
            "not-pem", "--ca-bundle holds no PEM certificate", id="a bundle that is not PEM"
        ),
        pytest.param(
            "missing-host",
            "--cert is not valid for 127.0.0.1",
            id="a --host the certificate does not name",
        ),
        pytest.param("force", "drop --force", id="an issuing flag beside your files"),
    ],
)
def test_what_kube_apiserver_would_refuse_exits_2_and_writes_nothing(
    tmp_path: pathlib.Path, case: str, message: str
) -> None:
    mine, args = _case(tmp_path, case)
    code, _, err = install_own(tmp_path / "certs", mine["ca"], mine["cert"], mine["key"], *args)
    assert code == 2
    assert message in err
    assert "Traceback" not in err
    assert not (tmp_path / "certs").exists()


def test_the_three_files_go_together(tmp_path: pathlib.Path) -> None:
    mine = own_files(tmp_path, trustme.CA())
    result = certs("--out-dir", str(tmp_path / "certs"), "--cert", str(mine["cert"]))
    assert result.returncode == 2
    assert "also give --ca-bundle, --key" in result.stderr


def test_an_unreadable_file_is_named(tmp_path: pathlib.Path) -> None:
    mine = own_files(tmp_path, trustme.CA())
    code, _, err = install_own(
        tmp_path / "certs", tmp_path / "absent.crt", mine["cert"], mine["key"]
    )
    assert code == 2
    assert f"certs: --ca-bundle {tmp_path / 'absent.crt'}: No such file or directory" in err


def test_the_overlay_is_the_one_the_command_writes_for_its_own(tmp_path: pathlib.Path) -> None:
    """Same files, same objects: only the certificate bytes differ."""
    ours = certs("--out-dir", str(tmp_path / "ours"), "--base", str(MANIFESTS))
    assert ours.returncode == 0, ours.stderr
    o = tmp_path / "ours"
    code, _, err = install_own(tmp_path / "theirs", o / "ca.crt", o / "tls.crt", o / "tls.key")
    assert code == 0, err
    assert kustomize(tmp_path / "theirs") == kustomize(o)
    assert read_yaml(tmp_path / "theirs" / "kustomization.yaml") == read_yaml(
        o / "kustomization.yaml"
    )
