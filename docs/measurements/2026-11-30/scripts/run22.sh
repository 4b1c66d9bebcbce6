#!/usr/bin/env bash
# Session 4 (2026-11-30), GPU call 3, two H200s of one host, one track per GPU.
#   GPU 0: the public-problem conformance test (every pmpp_v2 folder, its submission.py
#          and every solution, test mode, harness verdict against the folder's eval.py).
#   GPU 1: contest parity of the public pmpp_v2 vectoradd_py folder (both files, 3 runs
#          each, test-mode walls too); the GPU tests (tests/test_gpu.py, the GPU attacks
#          of tests/test_adversarial.py); then one more mxfp4 torch_dequant parity run.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REFERENCE_KERNELS=$PWD/.refk
{
  date -u; nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv
  python -c "import torch, triton; print(torch.__version__, triton.__version__)"; nproc; uname -r
} > "$OUT/machine.txt" 2>&1

track0() {
  export CUDA_VISIBLE_DEVICES=0
  PARITY_OUT=$OUT/public_problems.json timeout 560 python -m pytest -q -rA --durations=5 \
    tests/test_public_problems.py 2>&1 | tail -45
}
track1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 300 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
    --runs 3 --out "$OUT/vectoradd"
  echo "=== GPU tests"
  timeout 150 python -m pytest -q -rA tests/test_gpu.py tests/test_adversarial.py -k "gpu or side_stream or event_timer" 2>&1 | tail -20
  timeout 280 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
    --only torch_dequant --runs 1 --skip-test-mode --out "$OUT/mxfp4_torch"
}
track0 > "$OUT/track0.log" 2>&1 &
track1 > "$OUT/track1.log" 2>&1 &
wait
tail -n 30 "$OUT/track0.log"; grep -E "summary|ratio|passed|failed" "$OUT/track1.log" | tail -20
