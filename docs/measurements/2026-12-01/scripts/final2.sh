#!/usr/bin/env bash
# The record at one commit, part 2 of 3 (about 9 min): mxfp4_mm triton_dot_scaled
# 3 runs, then torch_dequant 1 run (its public run alone takes about 240 s: one
# 64 GB `randn` before each of up to 1000 samples per case).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; } > "$OUT/machine.txt" 2>&1
timeout 250 python benchmarks/contest_parity.py ${PARITY_EXTRA:-} --reference-kernels .refk --pairs mxfp4 \
  --only triton --runs 3 --skip-test-mode --out "$OUT/mxfp4_triton" > "$OUT/parity_mxfp4_triton.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4_triton.log" | tail -n 4
timeout 300 python benchmarks/contest_parity.py ${PARITY_EXTRA:-} --reference-kernels .refk --pairs mxfp4 \
  --only torch --runs 1 --skip-test-mode --out "$OUT/mxfp4_torch_a" > "$OUT/parity_mxfp4_torch_a.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4_torch_a.log" | tail -n 4
