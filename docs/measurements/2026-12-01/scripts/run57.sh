#!/usr/bin/env bash
# Run 57 (2026-12-01): mxfp4 triton_dot_scaled parity under timing.rehearse, 3 runs.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; } > "$OUT/machine.txt" 2>&1
timeout 270 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/mxfp4_triton" > "$OUT/parity_mxfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4.log" | tail -n 9
