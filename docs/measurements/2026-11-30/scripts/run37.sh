#!/usr/bin/env bash
# Run 37 (one H200; carry .refk and .shared): the GPU tests after the flag confirmation
# (integrity.confirm_probes), and one harness run of nvfp4 triton_hopper (clock_samples).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
date -u > "$OUT/machine.txt"
timeout 200 python -m pytest -q -rs tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  -k "gpu or cuda or side or GPU or worker" > "$OUT/gpu_tests.log" 2>&1
timeout 80 python runner.py submit submissions/nvfp4_group_gemm/triton_hopper.py --task tasks/nvfp4_group_gemm \
  --mode benchmark --no-record --json "$OUT/nvfp4_triton.json" > "$OUT/nvfp4_triton.log" 2>&1
tail -n 8 "$OUT/gpu_tests.log"; tail -n 12 "$OUT/nvfp4_triton.log"
python - "$OUT/nvfp4_triton.json" <<'PY' || true
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["phases"]:
    for c in p["cases"]:
        i = c.get("integrity", {})
        print(p["name"], c.get("score_ns"), i.get("clock_samples"), i.get("clocks", {}).get("flagged"))
PY
