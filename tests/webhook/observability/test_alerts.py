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
from tests.support import prebuild
from tests.support.emulator import ApiServerEmulator
from tests.support.manifest_render import kustomize
from tests.support.monitoring import (
    ROOT,
    RULE,
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
from tests.support.writer_process import WriterProcess


def promtool() -> str:
    """Debian's promtool, found when the session started; the alerts group is skipped
    without it (a failure under FEEDBACKSTORE_REQUIRE_KUBE=1)."""
    return str(prebuild.tool("alerts", "promtool"))


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
        pytest.param(
            "FeedbackStoreWebhookUnreachable",
            "apiserver_admission_webhook_rejection_count{",
            "apiserver_admission_webhook_fail_open_count{",
            id="a critical unreachable alert for an entry that fails open",
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
    writer = WriterProcess.on_emulator(apiserver, tmp_path, "status-writer-0")
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


# -- runbooks ---------------------------------------------------------------------------------

RUNBOOK_SECTIONS = ("Meaning", "Impact", "Diagnosis", "Mitigation", "Recovery")


def annotations() -> dict[str, dict[str, str]]:
    return {r["alert"]: r["annotations"] for g in rule_groups()["groups"] for r in g["rules"]}


def runbook_base() -> str:
    """The one base URL of every alert's runbook_url: the part before the page's name."""
    (base,) = {a["runbook_url"].rpartition("/")[0] + "/" for a in annotations().values()}
    return base


def test_every_alert_links_its_own_runbook_under_one_base_url() -> None:
    base = runbook_base()
    assert base.startswith("https://"), "Alertmanager and Grafana link only an absolute URL"
    assert base.endswith("/docs/runbooks/")
    assert {a["runbook_url"] for a in annotations().values()} == {
        f"{base}{alert}.md" for alert in alerts()
    }


@pytest.mark.parametrize("alert", sorted(alerts()))
def test_each_runbook_says_what_it_means_what_to_do_and_how_to_see_recovery(alert: str) -> None:
    page = ROOT / "docs" / "runbooks" / f"{alert}.md"
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"# {alert}\n")
    headings = [line[3:] for line in text.splitlines() if line.startswith("## ")]
    assert headings == list(RUNBOOK_SECTIONS)
    for title in RUNBOOK_SECTIONS:
        body = section(f"runbooks/{alert}.md", f"## {title}")
        assert len(body.split()) > 12, f"{alert}: {title} says next to nothing"
    assert "```sh\n" in section(f"runbooks/{alert}.md", "## Diagnosis"), "exact commands"


def test_every_runbook_is_an_alert_s_and_the_troubleshooting_page_lists_each() -> None:
    pages = {path.stem for path in (ROOT / "docs" / "runbooks").glob("*.md")}
    assert pages == set(alerts())
    listed = section("troubleshooting.md", "## Alerts")
    for alert in alerts():
        assert f"| `{alert}` | [" in listed
        assert f"(runbooks/{alert}.md)" in listed


def test_the_docs_kustomize_recipe_points_every_runbook_url_at_another_base(
    tmp_path: pathlib.Path,
) -> None:
    text = section("install.md", "## Monitoring")
    start = text.index("replacements:")
    recipe = yaml.safe_load(text[start : text.index("```", start)])
    # kustomize reads only files at or below the kustomization: the rule beside it.
    shutil.copy(RULE, tmp_path / RULE.name)
    (tmp_path / "kustomization.yaml").write_text(
        yaml.safe_dump({"resources": [RULE.name], **recipe}), encoding="utf-8"
    )
    docs = kustomize(tmp_path)
    assert [d["kind"] for d in docs] == ["PrometheusRule"], "the ConfigMap stays local"
    new_base = recipe["configMapGenerator"][0]["literals"][0].removeprefix("base=")
    urls = [r["annotations"]["runbook_url"] for g in docs[0]["spec"]["groups"] for r in g["rules"]]
    assert urls == [f"{new_base}docs/runbooks/{alert}.md" for alert in alerts()]
