#!/usr/bin/env bash
# Run 85 (one H200, alone; carry .refk; about 5 min, 7 at most), at the record's timed code
# (warm: torch; run 84's `warm: flush` reverted, it did not restore the public level):
#  1. pre_call_memory.py: does the submission's own call after the switch back from the
#     helper's context (child_rehearse, child_rehearse_1m) restore the public level that
#     child_flush and child_own_flush miss by ~1 µs? (~1 min)
#  2. nvfp4 torch_dequant, 3 runs: the record's missed pair at the same timed code, read
#     beside the record (not pooled) (~4 min).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 110 python $S/pre_call_memory.py --rounds 150 --cases 0 2 4 --out "$OUT" \
  --variants public torch child_flush child_own_flush child_rehearse child_rehearse_1m \
  > "$OUT/pre_call_memory.log" 2>&1
echo "rc $?" >> "$OUT/pre_call_memory.log"; tail -n 24 "$OUT/pre_call_memory.log"
timeout 300 python benchmarks/contest_parity.py --reference-kernels .refk --pairs nvfp4 \
  --only torch_dequant --runs 3 --skip-test-mode --out "$OUT/nvfp4" > "$OUT/parity_nvfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_nvfp4.log" | tail -n 6
