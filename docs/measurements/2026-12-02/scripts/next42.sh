#!/usr/bin/env bash
# The kept page-locked buffer for the masking's stream (harness/judging/masking.py,
# HostStream), measured against the fresh pageable copy it replaces, and the rest of
# next41.sh (one H200, alone; about 4.5 min; no carry). Written before it runs.
# 1. benchmarks/mask_cost.py, cases 0 and 3 of nvfp4, 7 rounds: draw and xor_mask (kept
#    buffer) against draw_fresh and xor_mask_fresh (a fresh pageable copy each time, the
#    code before), and next41's copies after the unmasking / after a plain write.
# 2. GPU tests: tests/test_cpus.py (claims: one evaluation holds the same CPU as before),
#    tests/test_masking.py and tests/test_sampling.py (the kept buffer, the late order).
# 3. Both nvfp4 examples once in benchmark mode under the defaults (the worker's kept
#    buffer inside its sandbox), their calibration and walls beside run 110's masked runs
#    (calibration 7.1-17.4 s triton_hopper, 7.6-8.6 s torch_dequant).
# The rule: the kept buffer stays if xor_mask's median is at most 0.8x xor_mask_fresh's in
# both cases, the tests pass and both runs pass with no case flagged; otherwise it goes.
# copy_after_unmask over copy_after_write above 1.10 (next41's rule) says the unmasking
# still leaves the call a cost.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; } > "$OUT/machine.txt" 2>&1
for c in 0 3; do
  timeout 240 python benchmarks/mask_cost.py --device cuda --case $c --rounds 7 \
    --out "$OUT/mask_cost_case$c.json" > "$OUT/mask_cost_case$c.log" 2>&1
  echo "rc $?" >> "$OUT/mask_cost_case$c.log"; cat "$OUT/mask_cost_case$c.log"
done
timeout 150 python -m pytest -q -rs tests/test_cpus.py tests/test_masking.py tests/test_sampling.py \
  > "$OUT/tests.log" 2>&1
echo "tests rc $?" >> "$OUT/tests.log"; tail -n 8 "$OUT/tests.log"
for ex in triton_hopper torch_dequant; do
  s=$(date +%s.%N)
  timeout 150 python runner.py submit submissions/nvfp4_group_gemm/$ex.py --task nvfp4_group_gemm \
    --mode benchmark --no-record --json "$OUT/$ex.json" > "$OUT/$ex.log" 2>&1
  echo "$ex rc $? process wall $(python -c "import time;print(round(time.time()-$s,1))") s" \
    | tee -a "$OUT/submits.txt"
  python - "$OUT/$ex.json" <<'PY' | tee -a "$OUT/submits.txt"
import json, sys
d = json.load(open(sys.argv[1]))
ph = d["phases"][-1]
print(" passed", d.get("passed"), "document wall", round(d["wall_seconds"], 1),
      "startup", round(d.get("startup_seconds") or 0, 1), "calibration", d.get("calibration"))
for c in ph["cases"]:
    p = c.get("wall_parts") or {}
    print("  case", c["index"], c["status"], "score_us", round((c["score_ns"] or 0) / 1e3, 1),
          "calibration_s", round(p.get("calibration", 0), 2), "timing_s", round(p.get("timing", 0), 2),
          "flags", c.get("flags"))
PY
done
