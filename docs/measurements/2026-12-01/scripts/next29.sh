#!/usr/bin/env bash
# The late rehearsal with its unmasking on no clock (one H200, alone; carry .refk; about
# 8.5 min). Run 90 (next28.sh) found the honest flag's cause: the worker's unmasking before
# its clock took 95-120 µs after a no-op and 110-245 µs after a rehearsal, inside the
# judge's round trip. Now the key comes in a request of its own after the rehearsal (the
# worker unmasks, flushes and waits for the GPU, on no clock), then the call.
#  1. the GPU tests, the late rehearsal's two among them (aim: all pass);
#  2. mxfp4 triton_dot_scaled, 2 runs with late.yaml (run 89: 1.004 before the change;
#     aim: stays within the criterion, no case flagged);
#  3. vectoradd, both examples, 2 runs with late.yaml (run 89: torch case 0 flagged in run
#     1; aim: no honest case flagged, criterion met).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
S=docs/measurements/2026-12-01/scripts
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; git status --short | head; } > "$OUT/machine.txt" 2>&1
timeout 200 python -m pytest -q tests/test_gpu.py > "$OUT/test_gpu.log" 2>&1
echo "rc $?" >> "$OUT/test_gpu.log"; tail -n 6 "$OUT/test_gpu.log"
timeout 180 python benchmarks/contest_parity.py --reference-kernels .refk --pairs mxfp4 \
  --only triton_dot_scaled --runs 2 --skip-test-mode --harness-config $S/late.yaml \
  --out "$OUT/mxfp4" > "$OUT/parity_mxfp4.log" 2>&1
grep -v "^   case" "$OUT/parity_mxfp4.log" | tail -n 4
timeout 130 python benchmarks/contest_parity.py --reference-kernels .refk --pairs vectoradd \
  --runs 2 --skip-test-mode --harness-config $S/late.yaml --out "$OUT/vectoradd" \
  > "$OUT/parity_vectoradd.log" 2>&1
grep -v "^   case" "$OUT/parity_vectoradd.log" | tail -n 8
