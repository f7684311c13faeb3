"""`validate` over 1,000 FeedbackStores: ours against a revision without positions and kubeconform.

    python bench/validate/run.py [--baseline 68e2c8c] [--rounds 5] [--stores 1000]

Two inputs, made fresh in a temporary directory from a fixed seed: one file of
`--stores` FeedbackStores (a multi-document YAML stream, as `kustomize build`
prints) and a directory of as many one-store files. A fifth of the stores are
invalid (a score name declared twice, a channel without a score, a bad enum);
the rest are valid, 2 to 12 human scores (some CATEGORICAL, with categories)
and 0 to 3 channels each.

Each round runs, in a rotating order, each tool on each input as a whole
process (interpreter start included, as a pipeline pays it) and records the
wall time and the process's peak resident memory (`ru_maxrss` from wait4):

- ours: this tree's `feedbackstore-webhook validate` (positions, `FILE:LINE:COL`);
- baseline: `--baseline REV`'s `validate` (a git worktree, same virtualenv),
  by default 68e2c8c, the last revision before positions (`FILE:DOC:`);
- kubeconform (`-strict -summary`, our CRD's schema as its JSON schema),
  built from its Go module by build_kubeconform.sh (cached outside the tree).

The best round per tool and input is reported, and ours against each as a
ratio: the machine is shared, so read the ratios, and run it twice.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time
from typing import Any

import yaml

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
CRD = REPO / "manifests" / "crd" / "feedbackstores.agents.ctxmesh.ai.yaml"
BASELINE_MAIN = "import sys; from webhook.cli.main import main; sys.exit(main())"


def store(index: int, rng: random.Random) -> dict[str, Any]:
    scores: list[dict[str, Any]] = []
    for s in range(rng.randint(2, 12)):
        score: dict[str, Any] = {"name": f"score-{s:02d}"}
        kind = rng.choice(["BOOLEAN", "NUMERIC", "CATEGORICAL"])
        score["dataType"] = kind
        if kind == "CATEGORICAL":
            score["categories"] = [f"label-{c}" for c in range(rng.randint(2, 8))]
        scores.append(score)
    channels = [
        {"name": f"channel-{c}", "score": {"name": f"external-{c:02d}", "dataType": "NUMERIC"}}
        for c in range(rng.randint(0, 3))
    ]
    spec: dict[str, Any] = {"mode": "Enforce", "human": {"scores": scores}}
    if channels:
        spec["external"] = channels
    if index % 5 == 4:  # a fifth invalid, in three ways
        flaw = (index // 5) % 3
        if flaw == 0:
            scores.append({"name": scores[0]["name"]})
        elif flaw == 1:
            spec["external"] = [*channels, {"name": "no-score"}]
        else:
            scores[-1]["dataType"] = "STARS"
    return {
        "apiVersion": "agents.ctxmesh.ai/v1beta1",
        "kind": "FeedbackStore",
        "metadata": {"name": f"store-{index:04d}", "namespace": f"team-{index % 20:02d}"},
        "spec": spec,
    }


def make_inputs(work: pathlib.Path, count: int) -> tuple[pathlib.Path, pathlib.Path]:
    rng = random.Random(16)
    stores = [store(i, rng) for i in range(count)]
    stream = work / "stores.yaml"
    stream.write_text(yaml.safe_dump_all(stores, sort_keys=False))
    directory = work / "stores"
    directory.mkdir()
    for each in stores:
        (directory / f"{each['metadata']['name']}.yaml").write_text(
            yaml.safe_dump(each, sort_keys=False)
        )
    return stream, directory


def kubeconform_schemas(work: pathlib.Path) -> pathlib.Path:
    """Our CRD's schema where kubeconform's `-schema-location` template finds it."""
    crd = yaml.safe_load(CRD.read_text())
    group = crd["spec"]["group"]
    kind = crd["spec"]["names"]["kind"].lower()
    target = work / "schemas" / group
    target.mkdir(parents=True)
    for version in crd["spec"]["versions"]:
        schema = version["schema"]["openAPIV3Schema"]
        (target / f"{kind}_{version['name']}.json").write_text(json.dumps(schema))
    return work / "schemas"


def measured(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB, exit code) of one whole process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=env)  # fmt: skip
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, process.returncode


def _shown(wall: float, rss: float, code: int) -> str:
    return f"{wall * 1000:6.0f} ms {rss:6.1f} MiB (exit {code})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default="68e2c8c", help="revision without positions")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stores", type=int, default=1000)
    args = parser.parse_args()

    kubeconform = subprocess.run(
        ["bash", str(HERE / "build_kubeconform.sh")], check=True, capture_output=True, text=True
    ).stdout.strip()
    ours = str(pathlib.Path(sys.executable).parent / "feedbackstore-webhook")
    with tempfile.TemporaryDirectory(prefix="bench-validate-") as tmp:
        work = pathlib.Path(tmp)
        stream, directory = make_inputs(work, args.stores)
        schemas = kubeconform_schemas(work)
        baseline_tree = work / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", "-q", str(baseline_tree),
                        args.baseline], check=True, cwd=REPO)  # fmt: skip
        try:
            baseline_env = {**os.environ, "PYTHONPATH": str(baseline_tree)}
            baseline = [sys.executable, "-P", "-c", BASELINE_MAIN]
            location = str(
                schemas / "{{ .Group }}" / "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"
            )
            kubeconform_command = [kubeconform, "-strict", "-summary", "-schema-location", location]
            tools: dict[str, tuple[list[str], dict[str, str] | None]] = {
                "ours": ([ours, "validate"], None),
                f"baseline {args.baseline}": ([*baseline, "validate"], baseline_env),
                "kubeconform": (kubeconform_command, None),
            }
            inputs = {f"1 file of {args.stores}": stream, f"{args.stores} files": directory}
            best: dict[tuple[str, str], tuple[float, float, int]] = {}
            print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            names = list(tools)
            for round_ in range(args.rounds):
                order = names[round_ % len(names) :] + names[: round_ % len(names)]
                for tool in order:
                    command, env = tools[tool]
                    for label, path in inputs.items():
                        result = measured([*command, str(path)], env)
                        key = (tool, label)
                        if key not in best or result[0] < best[key][0]:
                            best[key] = result
            for label in inputs:
                ours_wall, ours_rss, ours_code = best[("ours", label)]
                print(f"{label}: ours {_shown(ours_wall, ours_rss, ours_code)}")
                for tool in names[1:]:
                    wall, rss, code = best[(tool, label)]
                    ratios = f"time {ours_wall / wall:.2f}, memory {ours_rss / rss:.2f}"
                    print(f"  {tool:<22} {_shown(wall, rss, code)}  ours/it: {ratios}")
            print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline_tree)],
                           check=False, cwd=REPO)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
