#!/usr/bin/env bash
# Run 30 (one H200; carry .refk): the GPU tests after the head start (cc00900), then
# nvfp4 triton_hopper parity again (run 29's was cut by the step's limit).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
timeout 300 python -m pytest -q -rs tests/test_gpu.py tests/test_head_start.py tests/test_adversarial.py \
  tests/test_sharing.py -k "gpu or cuda or head or GPU" > "$OUT/gpu_tests.log" 2>&1
echo "pytest rc $?" >> "$OUT/gpu_tests.log"
timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity.log" 2>&1
tail -n 6 "$OUT/gpu_tests.log"; grep -v "^   case" "$OUT/parity.log" | tail -n 8
