#!/usr/bin/env bash
# The last 116 s of a session's device time (one H200; about 75 s): the late rehearsal's two
# GPU tests, then mxfp4 triton_dot_scaled under the harness alone, the default and
# late.yaml alternating (one run each: a glimpse, no public evaluator beside it).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
git rev-parse --short HEAD > "$OUT/machine.txt"
timeout 40 python -m pytest -q tests/test_gpu.py -k late > "$OUT/test_late.log" 2>&1
echo "rc $?" >> "$OUT/test_late.log"; tail -n 4 "$OUT/test_late.log"
for cfg in default late; do
  extra=(); [ "$cfg" = late ] && extra=(--config $S/late.yaml)
  timeout 25 python runner.py submit submissions/mxfp4_mm/triton_dot_scaled.py --mode benchmark \
    --no-record --json "$OUT/mxfp4_$cfg.json" "${extra[@]}" > "$OUT/mxfp4_$cfg.log" 2>&1
  python - "$OUT/mxfp4_$cfg.json" "$cfg" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(sys.argv[2], [round(c["score_ns"] / 1e3, 2) for c in d["phases"][0]["cases"]],
          [c["flags"] for c in d["phases"][0]["cases"]])
except Exception as exc:
    print(sys.argv[2], "no result", exc)
PY
done
