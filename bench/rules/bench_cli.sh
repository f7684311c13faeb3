#!/usr/bin/env bash
# Wall time of `feedbackstore-webhook validate` over 1,000 manifests, end to end
# (interpreter start-up included), against two floors measured in the same run:
# a bare interpreter start, and a script that only reads and YAML-parses the same
# files. Usage: bash bench/rules/bench_cli.sh [runs]
set -euo pipefail
runs="${1:-5}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
python - "$dir" <<'PY'
import sys, pathlib
out = pathlib.Path(sys.argv[1])
for i in range(1000):
    bad = i % 10 == 0
    second = "thumbs" if bad else f"accuracy-{i}"
    (out / f"store-{i:04}.yaml").write_text(f"""apiVersion: agents.ctxmesh.ai/v1beta1
kind: FeedbackStore
metadata:
  name: store-{i}
  namespace: agents
spec:
  human:
    scores:
      - name: thumbs
        dataType: BOOLEAN
      - name: {second}
      - name: topic-{i}
        dataType: CATEGORICAL
        categories: [billing, shipping, returns]
  external:
    - name: csat-webhook
      score: {{name: csat-{i}}}
""")
PY
cat > "$dir/parse_only.py" <<'PY'
import pathlib, sys, yaml
loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
for p in sorted(pathlib.Path(sys.argv[1]).rglob("*.yaml")):
    list(yaml.load_all(p.read_text(), Loader=loader))
PY
best() { # best wall time in seconds of "$@" over $runs runs
  local best=999
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || true; t1=$(date +%s.%N)
    best=$(python -c "print(min($best, $t1 - $t0))")
  done
  echo "$best"
}
start=$(best python -c pass)
parse=$(best python "$dir/parse_only.py" "$dir")
ours=$(best feedbackstore-webhook validate "$dir")
feedbackstore-webhook validate "$dir" | tail -n 1 || true
python - "$start" "$parse" "$ours" <<'PY'
import sys
start, parse, ours = map(float, sys.argv[1:])
print(f"interpreter start-up      {start:6.3f} s")
print(f"read + YAML parse only    {parse:6.3f} s")
print(f"validate (1,000 files)    {ours:6.3f} s   ratio to parse-only floor {ours / parse:4.2f}")
PY
