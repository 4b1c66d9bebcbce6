#!/usr/bin/env bash
# Run 73 (session of 2026-12-01 (3), fifth call): nvfp4 triton_hopper parity, 3 runs, with
# the hold applied after each reply (ffe371f), about 2 min.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
timeout 230 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 6
