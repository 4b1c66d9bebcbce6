#!/usr/bin/env bash
# For the next session's first GPU call (one H200, alone; carry .refk): parity under
# `timing.warm: torch` (dd902d8, the default now), which run 48 measured on vectoradd's
# torch submission only (0.981, met; 1.218 with the empty kernel alone beside it):
#  - vectoradd torch and Triton, 3 runs each (Triton's case 0 missed in runs 36 and 38);
#  - nvfp4 triton_hopper, 3 runs (met in run 38 without it: does the warm-up change it?).
# The worker's calls around a sample go through references taken as it starts since
# f17e3b4 (not yet run on the GPU): a failure there shows in both steps at once.
# Then next_tests.sh (the GPU tests; run 38 cut them at 150 s after 23 passed).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 230 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
grep -A3 "== summary" "$OUT/parity_vectoradd.log"; grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 7
