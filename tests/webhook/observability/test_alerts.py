"""The alerts of manifests/monitoring, unit-tested with the real promtool (Debian's
`prometheus` package), on series named as the real processes expose them.

Each alert has a test in tests/monitoring/alerts_test.yaml where it fires and one where it must
not; promtool runs them on the rules extracted from the PrometheusRule. The webhook
(`feedbackstore-webhook serve`, a real process) and the status writer (the console script,
against the emulator) are scraped, and every series the tests feed and every metric the rules
query must be among what they expose (kube-apiserver's are checked on the real server in
tests/kube/test_monitoring_real.py).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import ssl
import subprocess
import urllib.request
from typing import Any

import pytest
import yaml

from tests.docs.pages import section
from tests.kube.cluster import webhook_server
from tests.support.emulator import ApiServerEmulator
from tests.support.monitoring import (
    TESTS,
    alerts,
    exposed,
    fed_series,
    missing,
    queried_metrics,
    rule_groups,
    unit_tests,
)
from tests.support.status_writer import INVALID, NS, VALID, converged, fs
from tests.webhook.status.test_cli import WriterProcess

REQUIRE_ENV = "FEEDBACKSTORE_REQUIRE_KUBE"


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        message = "promtool is missing: apt-get install prometheus (.ci/run does)"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{message} ({REQUIRE_ENV}=1 forbids skipping)", pytrace=False)
        pytest.skip(message)
    return found


def _run_promtool(
    directory: pathlib.Path, rules: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    (directory / "rules.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    shutil.copy(TESTS, directory / "alerts_test.yaml")
    return subprocess.run(
        [promtool(), "test", "rules", "alerts_test.yaml"],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_promtool_accepts_the_rules(tmp_path: pathlib.Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()), encoding="utf-8")
    result = subprocess.run(
        [promtool(), "check", "rules", "rules.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in result.stdout


def test_every_alert_passes_its_promtool_unit_tests(tmp_path: pathlib.Path) -> None:
    result = _run_promtool(tmp_path, rule_groups())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_docs_show_what_promtool_prints(tmp_path: pathlib.Path) -> None:
    text = section("install.md", "## Monitoring")
    console = text[text.index("```console\n") + len("```console\n") : text.index("```\n\nWith")]
    command, *shown = console.splitlines(keepends=True)
    assert command == "$ promtool test rules alerts_test.yaml\n"
    assert _run_promtool(tmp_path, rule_groups()).stdout == "".join(shown)


def test_every_alert_is_tested_both_firing_and_quiet() -> None:
    fires: set[str] = set()
    quiet: set[str] = set()
    for test in unit_tests()["tests"]:
        for case in test.get("alert_rule_test", []):
            (fires if case["exp_alerts"] else quiet).add(case["alertname"])
    assert fires == set(alerts())
    assert quiet == set(alerts())


@pytest.mark.parametrize(
    ("alert", "old", "new"),
    [
        pytest.param(
            "FeedbackStoreWebhookErrors",
            'verdict="error"',
            'verdict="denied"',
            id="an errors alert counting denials instead",
        ),
        pytest.param(
            "FeedbackStoresInvalid",
            "feedbackstore_status_leader == 1",
            "feedbackstore_status_leader >= 0",
            id="an invalid-stores alert that trusts a former leader's count",
        ),
        pytest.param(
            "FeedbackStoreWebhookDown",
            "== 0",
            "< 1.5",
            id="a down alert that fires with one target of two still up",
        ),
    ],
)
def test_the_unit_tests_catch_a_wrong_rule(
    tmp_path: pathlib.Path, alert: str, old: str, new: str
) -> None:
    rules = rule_groups()
    rule = next(r for g in rules["groups"] for r in g["rules"] if r.get("alert") == alert)
    assert old in rule["expr"]
    rule["expr"] = rule["expr"].replace(old, new)
    result = _run_promtool(tmp_path, rules)
    assert result.returncode != 0
    assert f"alertname: {alert}" in result.stdout + result.stderr


def _scrape_webhook(directory: pathlib.Path) -> str:
    with webhook_server(directory) as server:
        context = ssl.create_default_context(cadata=server.ca_pem.decode())
        url = f"https://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, context=context, timeout=10) as response:
            return str(response.read().decode())


def test_the_webhook_exposes_every_series_the_tests_feed_and_the_rules_query(
    tmp_path: pathlib.Path,
) -> None:
    scrape = exposed(_scrape_webhook(tmp_path))
    fed = fed_series("feedbackstore_webhook_")
    assert len(fed) >= 3
    assert missing(fed, scrape) == []
    queried = queried_metrics("feedbackstore_webhook_")
    assert queried
    assert queried <= {name for name, _ in scrape}


def test_the_status_writer_exposes_every_series_the_tests_feed_and_the_rules_query(
    apiserver: ApiServerEmulator, tmp_path: pathlib.Path
) -> None:
    apiserver.create(NS, fs("good", VALID))
    apiserver.create(NS, fs("bad", INVALID))
    writer = WriterProcess(apiserver, tmp_path, "status-writer-0")
    try:
        converged(apiserver, timeout=30)
        status, text = writer.get("/metrics")
    finally:
        writer.stop()
    assert status == 200
    scrape = exposed(text)
    fed = fed_series("feedbackstore_status_")
    assert len(fed) >= 3
    assert missing(fed, scrape) == []
    queried = queried_metrics("feedbackstore_status_")
    assert queried
    assert queried <= {name for name, _ in scrape}


def test_a_renamed_metric_would_be_caught() -> None:
    """The check itself: a series the process does not expose is reported."""
    scrape = exposed("# TYPE feedbackstore_status_leader gauge\nfeedbackstore_status_leader 1.0\n")
    fed = {
        ("feedbackstore_status_leader", frozenset()),
        ("feedbackstore_status_is_leader", frozenset()),
    }
    assert missing(fed, scrape) == ["feedbackstore_status_is_leader{}"]
