#!/usr/bin/env bash
# The next session's second call: mxfp4 Triton parity (3 runs, about 200 s), then the GPU
# tests, the load_inline CUDA build for sm_90a among them (about 4 min).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 260 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/mxfp4_triton" > "$OUT/parity_mxfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4.log" | tail -n 6
timeout 280 python -m pytest -q tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  tests/test_head_start.py -k "gpu or cuda or side or GPU or worker or head or load_inline" \
  > "$OUT/gpu_tests.log" 2>&1
tail -8 "$OUT/gpu_tests.log"
