#!/usr/bin/env bash
# Session 4 (2026-11-30), GPU call 4, two H200s of one host, one track per GPU, after the
# fix of the two-clock check (compared on probes only behind a hidden window; every case
# gets a probe).
#   GPU 0: the public-problem conformance test (every pmpp_v2 folder, test mode).
#   GPU 1: contest parity of nvfp4 triton_hopper.py (3 runs), then of the public pmpp_v2
#          vectoradd_py folder (both files, 3 runs each, test-mode walls), then the GPU
#          profile test.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 REFERENCE_KERNELS=$PWD/.refk
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,driver_version --format=csv > "$OUT/machine.txt"
track0() {
  export CUDA_VISIBLE_DEVICES=0
  PARITY_OUT=$OUT/public_problems.json timeout 430 python -m pytest -q -rA --durations=3 \
    tests/test_public_problems.py 2>&1 | tail -40
}
track1() {
  export CUDA_VISIBLE_DEVICES=1
  timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
    --only triton_hopper --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton"
  timeout 240 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
    --runs 3 --out "$OUT/vectoradd"
  timeout 30 python -m pytest -q -rA tests/test_profile.py -k gpu_profile 2>&1 | tail -3
}
track0 > "$OUT/track0.log" 2>&1 &
track1 > "$OUT/track1.log" 2>&1 &
wait
tail -n 32 "$OUT/track0.log"; grep -E "summary|ratio|wall|passed|failed|run [0-9]" "$OUT/track1.log" | tail -24
