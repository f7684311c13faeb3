"""The commands a person runs against a cluster (doctor, cleanup) take the same `--kubeconfig` and
`--context`, with the same words in `--help`, and read them as kubectl does."""

from __future__ import annotations

import argparse
import contextlib
import io
import pathlib
from typing import Any

import pytest
import yaml

from webhook.cli.kubeconfig import ConfigurationError, connect
from webhook.cli.main import build_parser, main

COMMANDS = ("doctor", "cleanup")
FLAGS = ("--kubeconfig", "--context")


def _flags_of(command: str) -> dict[str, tuple[Any, ...]]:
    subparsers = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    parser = subparsers.choices[command]
    return {
        flag: (action.metavar, action.default, action.help)
        for action in parser._actions
        for flag in action.option_strings
        if flag in FLAGS
    }


def _kubeconfig(path: pathlib.Path) -> pathlib.Path:
    """Two contexts on two servers; the current one is `laptop`."""
    names = ("laptop", "staging")
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": n, "cluster": {"server": f"https://127.0.0.1:{6443 + i}"}}
                    for i, n in enumerate(names)
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": n, "context": {"cluster": n, "user": "u"}} for n in names],
                "current-context": "laptop",
            }
        )
    )
    return path


def test_doctor_and_cleanup_declare_the_same_cluster_flags() -> None:
    doctor, cleanup = (_flags_of(command) for command in COMMANDS)
    assert set(doctor) == set(FLAGS)
    assert doctor == cleanup


@pytest.mark.parametrize(
    ("context", "server"),
    [
        pytest.param(None, "https://127.0.0.1:6443", id="without --context the current one"),
        pytest.param("staging", "https://127.0.0.1:6444", id="--context names another"),
    ],
)
def test_the_context_chosen_is_the_server_dialled(
    tmp_path: pathlib.Path, context: str | None, server: str
) -> None:
    args = argparse.Namespace(kubeconfig=str(_kubeconfig(tmp_path / "config")), context=context)
    client = connect(args)
    try:
        assert client.configuration.host == server
    finally:
        client.close()


@pytest.mark.parametrize("command", COMMANDS)
def test_a_context_the_kubeconfig_lacks_stops_the_command_with_exit_2(
    tmp_path: pathlib.Path, command: str
) -> None:
    config = _kubeconfig(tmp_path / "config")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main([command, "--kubeconfig", str(config), "--context", "prod"])
    assert code == 2
    assert err.getvalue().startswith(f"{command}: cannot load Kubernetes configuration: ")
    assert "prod" in err.getvalue()


def test_no_kubeconfig_and_no_service_account_is_a_configuration_error(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(ConfigurationError, match="cannot load Kubernetes configuration"):
        connect(argparse.Namespace(kubeconfig=None, context=None))
