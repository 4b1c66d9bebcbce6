#!/usr/bin/env bash
# Third call of the session of 2026-12-01 (3): the final form of the CPU hold (04f0e99 on)
# on the pairs it was not yet measured on: nvfp4 triton_hopper and both vectoradd pairs,
# 3 runs each, benchmark mode only (about 5 min).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 170 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 6
timeout 230 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 14
