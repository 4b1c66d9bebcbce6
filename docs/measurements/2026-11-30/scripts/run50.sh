#!/usr/bin/env bash
# Run 50 (one H200, alone; carry .refk and .shared): the GPU tests after `timing.warm: torch`
# and f17e3b4 (the worker's torch calls taken as it starts), then the mxfp4 Triton pair
# under the new default, 3 runs each side (public amd_202602/eval.py about 56 s a run).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 290 python -m pytest -q -rs tests/test_gpu.py tests/test_adversarial.py tests/test_worker.py \
  tests/test_head_start.py -k "gpu or cuda or side or GPU or worker or head" --durations=8 \
  > "$OUT/gpu_tests.log" 2>&1
echo "tests rc $?" >> "$OUT/gpu_tests.log"
timeout 280 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/mxfp4_triton" > "$OUT/parity_mxfp4.log" 2>&1
echo "parity rc $?" >> "$OUT/parity_mxfp4.log"
tail -n 14 "$OUT/gpu_tests.log"; grep -v "^   case" "$OUT/parity_mxfp4.log" | tail -n 9
