#!/usr/bin/env bash
# Run 46 (one H200, alone; carry .refk): probe3_vectoradd.py through the harness
# (defaults), twice: the parts of the call's host time, one call per sample, with and
# without a tiny torch op before it.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
T=.refk/problems/pmpp_v2/vectoradd_py
for r in 1 2; do
  timeout 120 python runner.py submit $S/probe3_vectoradd.py --task $T --mode benchmark \
    --no-record --json /tmp/h_$r.json > /tmp/h_$r.log 2>&1
  python - /tmp/h_$r.json $r <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
probe = [ln for ln in d.get("worker_output", {}).get("stdout", "").splitlines() if "PROBE" in ln]
cases = d["phases"][0]["cases"]
f = lambda xs: " ".join(f"{x / 1e3:6.1f}" for x in xs)
print(f"== run {sys.argv[2]}: score {f([c['score_ns'] for c in cases])}"
      f" | host {f([c['host_launch_ns'] for c in cases])}")
print("\n".join("   " + ln for ln in probe))
PY
done > "$OUT/probe3.log" 2>&1
cat "$OUT/probe3.log"
