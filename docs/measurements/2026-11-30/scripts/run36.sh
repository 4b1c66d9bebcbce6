#!/usr/bin/env bash
# Run 36 (one H200, alone; carry .refk and .shared): the new polling defaults (1e18e7b:
# the worker polls 0.5 s for its next call, 5 ms more after naps). nvfp4 triton_hopper,
# 5 runs; the vectoradd pairs, 3 runs (unchanged, a regression check); the GPU tests.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; git log -1 --format=%H 2>/dev/null; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 250 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 5 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
timeout 210 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
timeout 110 python -m pytest -q -rs tests/test_gpu.py tests/test_head_start.py tests/test_sharing.py \
  tests/test_worker.py > "$OUT/gpu_tests.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 9; grep -A3 "== summary" "$OUT/parity_vectoradd.log"; tail -n 6 "$OUT/gpu_tests.log"
