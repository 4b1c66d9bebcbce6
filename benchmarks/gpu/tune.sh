#!/usr/bin/env bash
# Kernel tuning sweep and harness overhead check on the GPU machine; logs to $OUT.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
timeout 60 python runner.py submit submissions/vectoradd/add_torch.py --mode benchmark --json "$OUT/va.json" > /dev/null 2>&1
python - "$OUT/va.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("calibration", d["calibration"])
for c in d["phases"][0]["cases"]:
    i = c["integrity"]
    print(c["case"], round(c["stats"]["mean"]), i["clocks"]["gap_median_ns"], i["calibration"], i["worker_says"])
PY
cd benchmarks
timeout 120 python tune_kernels.py overhead
timeout 240 python tune_kernels.py mxfp4
timeout 260 python tune_kernels.py nvfp4
