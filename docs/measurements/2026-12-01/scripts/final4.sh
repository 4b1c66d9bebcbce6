#!/usr/bin/env bash
# The record at one commit, part 4 (one H200; carry .refk; about 6 min): the
# public-problem conformance test, its two halves of 12 pairs at once (test mode only:
# verdicts, not times, so the two halves may share the machine). Each half writes its own
# pairs; the log of each is kept.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; export PYTHONUNBUFFERED=1
export REFERENCE_KERNELS=$PWD/.refk
{ date -u; nproc; lscpu | grep -i "model name"; git rev-parse --short HEAD; } > "$OUT/machine.txt" 2>&1
half() {
  PARITY_OUT=$OUT/public_problems_$1.json timeout 560 python -m pytest -q -rA --durations=5 \
    tests/test_public_problems.py -k "$2" > "$OUT/conformance_$1.log" 2>&1
  echo "half $1 rc $?" >> "$OUT/conformance_$1.log"
}
half 1 "conv2d or grayscale or histogram or matmul" &
half 2 "prefixsum or sort or vectoradd or vectorsum" &
wait
for h in 1 2; do grep -E "passed|failed|error|rc " "$OUT/conformance_$h.log" | tail -n 3; done
