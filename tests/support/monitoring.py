"""The alerts' unit tests (tests/monitoring/alerts_test.yaml) and what real processes expose.

A promtool test fed a series no process exposes proves nothing: these helpers read the series
the tests feed and the metric names the rules query, and hold both to a scrape of the real
process (the webhook, the status writer, kube-apiserver), so a renamed metric or label fails.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any, Final

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
RULE = ROOT / "manifests" / "monitoring" / "prometheusrule.yaml"
TESTS = ROOT / "tests" / "monitoring" / "alerts_test.yaml"
# Labels Prometheus and the Prometheus Operator add to every scraped series.
TARGET_LABELS: Final = frozenset(
    {"job", "namespace", "pod", "instance", "service", "endpoint", "container"}
)
_SERIES: Final = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$")
_LABEL: Final = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')
_SAMPLE: Final = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(?:\s+\S+)?$")
_METRIC_IN_EXPR: Final = re.compile(r"\b((?:feedbackstore|apiserver)_[a-z_]+)\b")

Series = tuple[str, frozenset[tuple[str, str]]]


def rule_groups() -> dict[str, Any]:
    """The PrometheusRule's spec: what promtool reads as a rule file."""
    document: dict[str, Any] = yaml.safe_load(RULE.read_text(encoding="utf-8"))
    return document["spec"]  # type: ignore[no-any-return]


def alerts() -> dict[str, str]:
    """{alert name: expression}."""
    return {r["alert"]: r["expr"] for g in rule_groups()["groups"] for r in g["rules"]}


def unit_tests() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(TESTS.read_text(encoding="utf-8"))
    return loaded


def parse_series(text: str) -> Series:
    match = _SERIES.match(text.strip())
    assert match, f"not a series: {text}"
    labels = frozenset(_LABEL.findall(match.group(2)))
    return match.group(1), labels


def fed_series(prefix: str) -> set[Series]:
    """Every input series of the unit tests whose name starts with `prefix`, less target
    labels."""
    found = set()
    for test in unit_tests()["tests"]:
        for entry in test["input_series"]:
            name, labels = parse_series(entry["series"])
            if name.startswith(prefix):
                found.add((name, frozenset(p for p in labels if p[0] not in TARGET_LABELS)))
    return found


def queried_metrics(prefix: str) -> set[str]:
    return {
        m
        for expr in alerts().values()
        for m in _METRIC_IN_EXPR.findall(expr)
        if m.startswith(prefix)
    }


def exposed(text: str) -> set[Series]:
    """Every sample of a /metrics scrape (Prometheus text format), as (name, labels), named
    exactly as Prometheus stores it. (prometheus-client's parser would not do: it renames a
    counter's samples to end in `_total`, as kube-apiserver's `..._count` counters do not.)"""
    found = set()
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line}"
        found.add((match.group(1), frozenset(_LABEL.findall(match.group(2) or ""))))
    return found


def missing(fed: set[Series], scrape: set[Series]) -> list[str]:
    """The fed series no scraped sample matches: same name, and every fed label with the same
    value (a scraped sample may carry more labels than the test gives)."""
    return sorted(
        f"{name}{dict(labels)}"
        for name, labels in fed
        if not any(name == s_name and labels <= s_labels for s_name, s_labels in scrape)
    )
