#!/usr/bin/env bash
# Run 31 (one H200, right after run 30; carry .refk): nvfp4 triton_hopper with the judge
# sleeping instead of polling for replies (scripts/nospin.yaml), against run 30's default.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton_nospin" \
  --harness-config docs/measurements/2026-11-30/scripts/nospin.yaml > "$OUT/parity.log" 2>&1
grep -v "^   case" "$OUT/parity.log" | tail -n 8
