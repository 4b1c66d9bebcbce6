#!/usr/bin/env bash
# Run 32 (one H200; carry .refk): nvfp4 triton_hopper with judge and worker polling for
# 0.5 s (scripts/longspin.yaml): is case 3's extra host time a worker gone cold between
# samples? Against runs 30 (default) and 31 (no polling).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
timeout 200 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/nvfp4_triton_longspin" \
  --harness-config docs/measurements/2026-11-30/scripts/longspin.yaml > "$OUT/parity.log" 2>&1
grep -v "^   case" "$OUT/parity.log" | tail -n 8
