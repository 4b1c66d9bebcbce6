#!/usr/bin/env bash
# Run 43 (one H200, alone; carry .refk): runs 40-42 found no surrounding that slows the
# host time of vectoradd's torch call in a bare process (13-30 µs), against the harness
# worker's 23-129 µs. Is the worker process itself slower? probe_vectoradd.py measures at
# import, in a bare process and as a submission of the harness (defaults; no sandbox at
# all), alternating, twice; the harness's own host time per case beside it.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-11-30/scripts
T=.refk/problems/pmpp_v2/vectoradd_py
for r in 1 2; do
  echo "== round $r bare: $(python $S/probe_vectoradd.py | grep PROBE)"
  for c in default sandbox_off_full; do
    cfg=""; [ $c != default ] && cfg="--config $S/$c.yaml"
    timeout 120 python runner.py submit $S/probe_vectoradd.py --task $T --mode benchmark \
      --no-record --json /tmp/h_${c}_${r}.json $cfg > /tmp/h_${c}_${r}.log 2>&1
    python - /tmp/h_${c}_${r}.json $c <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
probe = [ln for ln in d.get("worker_output", {}).get("stdout", "").splitlines() if "PROBE" in ln]
cases = d["phases"][0]["cases"]
f = lambda xs: " ".join(f"{x / 1e3:6.1f}" for x in xs)
print(f"   harness {sys.argv[2]}: {probe[:1]}\n      score {f([c['score_ns'] for c in cases])}"
      f" | host {f([c['host_launch_ns'] for c in cases])}")
PY
  done
done > "$OUT/probe.log" 2>&1
cat "$OUT/probe.log"
