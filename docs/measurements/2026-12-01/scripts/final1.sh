#!/usr/bin/env bash
# The record at one commit, part 1 of 3 (one H200, alone; carry .refk; about 9 min):
# vectoradd (both examples) and nvfp4_group_gemm (both), 3 runs each. Parts 2 and 3 do
# mxfp4_mm; `python benchmarks/contest_parity.py --merge` pools the three parity.json files.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; } > "$OUT/machine.txt" 2>&1
timeout 185 python benchmarks/contest_parity.py ${PARITY_EXTRA:-} --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 4
timeout 380 python benchmarks/contest_parity.py ${PARITY_EXTRA:-} --reference-kernels .refk --pairs nvfp4 \
  --runs 3 --skip-test-mode --out "$OUT/nvfp4" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 4
