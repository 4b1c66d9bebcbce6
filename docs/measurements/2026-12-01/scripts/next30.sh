#!/usr/bin/env bash
# Run 91 repeated where it could not be read (one H200, alone; carry .refk; about 3 min).
# In run 91 the public evaluator's vectoradd read 1.4-3x its usual figures (Triton case 0
# 16.6 and 26.0 µs, against 6.6-10.8 in runs 83-89), while the harness's matched them; and
# test_gpu.py ran past its 200 s (15 of 16 passed, the fill test cut off).
#  1. vectoradd, both examples, 2 runs with late.yaml (aim: criterion met, none flagged);
#  2. the one GPU test cut off.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 140 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 2 --skip-test-mode --harness-config $S/late.yaml --out "$OUT/vectoradd" \
  > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 8
timeout 60 python -m pytest -q tests/test_gpu.py -k contests_fill > "$OUT/test_gpu.log" 2>&1
echo "rc $?" >> "$OUT/test_gpu.log"; tail -n 3 "$OUT/test_gpu.log"
