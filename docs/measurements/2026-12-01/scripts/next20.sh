#!/usr/bin/env bash
# Run 84: the candidate for mxfp4's 1 µs (`timing.warm: flush`, the worker's own L2-sized
# fill before the start event; run 83 found the judge's flush in its own context to be the
# difference). One H200, alone; carry .refk; about 8 min, 9.5 at most:
#  1. pre_call_memory.py with the candidate's two variants added (child_own_flush,
#     worker_fixed), in one process as run 83 (~1.5 min);
#  2. mxfp4 triton_dot_scaled, 3 runs, at the candidate (~4 min);
#  3. vectoradd, both examples, 3 runs, at the candidate (~3 min): the same change on the
#     pair that had no offset.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 120 python $S/pre_call_memory.py --rounds 150 --cases 0 2 4 --out "$OUT" \
  > "$OUT/pre_call_memory.log" 2>&1
echo "rc $?" >> "$OUT/pre_call_memory.log"; tail -n 38 "$OUT/pre_call_memory.log"
timeout 250 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only triton_dot_scaled --runs 3 --skip-test-mode --out "$OUT/mxfp4" > "$OUT/parity_mxfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4.log" | tail -n 4
timeout 190 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 3 --skip-test-mode --out "$OUT/vectoradd" > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 4
