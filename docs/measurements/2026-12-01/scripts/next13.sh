#!/usr/bin/env bash
# Session of 2026-12-01 (2), fifth call (one H200, alone; carry .refk), about 7 min.
# worker.hold_cpu now null by default (as the task's timing.hold_cpu; nvfp4_group_gemm
# sets it): the GPU tests, then vectoradd Triton (public folder: not held) and nvfp4
# Triton (held through its task.yml) parity, 3 runs each.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 260 python -m pytest -q tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  tests/test_head_start.py tests/test_cpus.py -k "gpu or cuda or side or GPU or worker or head or load_inline or hold" \
  > "$OUT/gpu_tests.log" 2>&1
tail -n 15 "$OUT/gpu_tests.log"
timeout 120 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --only triton --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 6
timeout 130 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 6
cd "$OUT" && tar czf raw.tgz vectoradd nvfp4_triton
